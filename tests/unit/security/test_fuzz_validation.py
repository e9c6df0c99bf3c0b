"""Bad input never crashes the provider: 10,000 generated Instance specs through check and render in CI
(1,000 in the quick unit loop: tests.support.fuzz_profiles).

Every spec starts from a valid Instance (llm or predictor) and gets one to five mutations: a known
field set to a plausible-but-wrong value or to arbitrary JSON (wrong types, huge numbers, NaN,
unicode, control characters, nested junk), a field removed, an unknown key added, or a whole
subtree replaced. Each one goes through `KServeProvider.check` and `.render` under varied chart
settings, catalogs and served kinds. What must hold for every input:

- the only exception is ValidationFailed, whose message is non-empty, one line, and names the field
  or rule it is about (so a user can act on it from `kubectl get`);
- `check` and `render` agree: render fails with check's very message, or succeeds when check does;
- rendered objects are JSON (what the API server accepts) with apiVersion, kind and metadata.name.

Seeded, so that CI runs the same 10,000 inputs every time (the quick loop, the first 1,000 of them).
The inputs come from the seeded generators of tests.support.gen (hypothesis spent ~85 % of the run
drawing them), shaped by tests.support.fuzz_values and tests.support.fuzz_instances.
"""

from __future__ import annotations

import copy
import json
import math
import random
import re
import unicodedata
from collections import Counter
from collections.abc import Callable
from typing import Any, Final

import pytest

from actors.interface import KubeObject, Resource, ValidationFailed
from provider.kserve import KServeProvider
from provider.model.catalog import Catalogs
from provider.model.settings import ProviderSettings
from tests.support.fuzz_instances import ENGINE, LLM, PREDICTOR, instance_spec, set_path
from tests.support.fuzz_profiles import validation_fuzz_examples
from tests.support.llm_topology import CATALOG

SEED: Final = 20_170_417

# -- what a specific message looks like ------------------------------------------------------------

# A message names the field it is about, as a dotted path (`llmEngine.parameters.modelURI`) or by
# the field, component or object the rule is about.
DOTTED_PATH: Final = re.compile(r"[A-Za-z\]]\.[A-Za-z]")
FIELD_WORDS: Final = (
    "spec",
    "parameters",
    "metadata",
    "llmEngine",
    "predictor",
    "topology",
    "externalAccess",
    "tokenLimitPerHour",
    "providerRef",
    "replicas",
    "Service",
)
# Characters that break a status message over several lines or hide part of it in a terminal.
BREAKING_CATEGORIES: Final = frozenset({"Cc", "Zl", "Zp"})


def is_one_line(message: str) -> bool:
    return not any(unicodedata.category(ch) in BREAKING_CATEGORIES for ch in message)


def names_something(message: str) -> bool:
    return bool(DOTTED_PATH.search(message)) or any(word in message for word in FIELD_WORDS)


# -- providers under varied chart settings -----------------------------------------------------------

SETTINGS: Final = (
    ProviderSettings(),
    ProviderSettings(hf_token_secret_name="hf-token", enable_pod_monitor=False),
    ProviderSettings(
        ai_gateway_enabled=True,
        ai_gateway_name="kserve-gw",
        ai_gateway_namespace="kserve",
        ai_gateway_rate_limit_redis_url="redis://redis:6379",
    ),
)
PROVIDERS: Final = tuple(KServeProvider(s) for s in SETTINGS)
CATALOGS: Final = (Catalogs(), CATALOG)
OWNED: Final[tuple[Resource, ...]] = tuple(PROVIDERS[0].owned_resources())
AVAILABLE: Final[tuple[frozenset[Resource] | None, ...]] = (
    None,
    PROVIDERS[0].required_resources(),
    frozenset(),
    frozenset(OWNED[::2]),
)


def assert_renderable(obj: Any) -> None:
    assert isinstance(obj, dict), obj
    assert isinstance(obj.get("apiVersion"), str) and obj["apiVersion"], obj
    assert isinstance(obj.get("kind"), str) and obj["kind"], obj
    name = (obj.get("metadata") or {}).get("name")
    assert isinstance(name, str) and name, obj
    # What the API server accepts: JSON without NaN or infinities.
    json.dumps(obj, allow_nan=False)


def assert_specific(message: str, doc: KubeObject) -> None:
    assert names_something(message), f"unspecific message {message!r} for {doc!r}"
    assert is_one_line(message), f"message over several lines {message!r} for {doc!r}"


def run_one(
    doc: KubeObject,
    provider: KServeProvider,
    catalogs: Catalogs,
    available: frozenset[Resource] | None,
    outcomes: Counter[str],
) -> None:
    snapshot = copy.deepcopy(doc)
    try:
        provider.check(doc, catalogs)
    except ValidationFailed as failed:
        assert_specific(failed.message, doc)
        try:
            provider.render(doc, catalogs=catalogs, available=available)
        except ValidationFailed as again:
            assert again.message == failed.message, (again.message, failed.message, doc)
        else:
            raise AssertionError(f"check failed ({failed.message!r}) but render succeeded for {doc!r}") from None
        outcomes["rejected"] += 1
        # The message up to its first colon: the field or rule, without the user's value.
        outcomes["rule:" + failed.message.split(":")[0].split('"')[0][:60]] += 1
    else:
        objects = provider.render(doc, catalogs=catalogs, available=available)
        for obj in objects:
            assert_renderable(obj)
        outcomes["rendered"] += 1
        outcomes["objects"] += len(objects)
    # Neither call mutates its input (the runtime hands it the informer's cached copy).
    assert _same(doc, snapshot), doc
    outcomes["examples"] += 1


def _same(a: Any, b: Any) -> bool:
    """Equality that treats NaN as equal to itself (inputs may contain NaN on purpose)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def fuzz(outcomes: Counter[str], examples: int) -> Callable[[], None]:
    """The property over `examples` seeded inputs, bound to a counter of what the examples did (the
    counter proves how many ran and what they reached)."""

    def run() -> None:
        rng = random.Random(SEED)
        for _ in range(examples):
            doc = instance_spec(rng)
            provider, catalogs, available = rng.choice(PROVIDERS), rng.choice(CATALOGS), rng.choice(AVAILABLE)
            run_one(doc, provider, catalogs, available, outcomes)

    return run


def test_random_instance_specs_fail_only_with_specific_messages() -> None:
    examples = validation_fuzz_examples()
    outcomes: Counter[str] = Counter()
    fuzz(outcomes, examples)()
    assert outcomes["examples"] >= examples
    # The generator reaches both sides: valid specs rendered, and many distinct rules rejecting.
    assert outcomes["rendered"] >= examples // 10
    assert outcomes["rejected"] >= examples // 2
    assert sum(1 for key in outcomes if key.startswith("rule:")) >= 100


def test_message_rules() -> None:
    assert names_something("llmEngine.parameters.modelURI is required")
    assert names_something('unsupported topology "x" (one of: llm, predictor)')
    assert not names_something("")
    assert not names_something("invalid value")
    assert not names_something("Input should be a valid integer.")
    assert names_something("metadata.name: String should have at least 1 character")
    assert is_one_line("名前 🦙 ünï\u00a0ok")
    assert not is_one_line("spec\nbroken")
    assert not is_one_line("tab\there")
    assert not is_one_line("line\u2028separator")


def test_messages_echoing_control_characters_stay_one_line() -> None:
    """Found by the fuzz run: unknown keys and values were echoed with their newlines."""
    for path in (
        ("spec", "topology", "parameters", "a\nb"),
        (*ENGINE, "parameters", "x\ry"),
        ("spec", "components", "c\u2028d"),
        ("metadata", "labels", "l\x00"),
    ):
        doc = copy.deepcopy(LLM)
        set_path(doc, path, 5)
        with pytest.raises(ValidationFailed) as failed:
            PROVIDERS[0].check(doc, Catalogs())
        assert is_one_line(failed.value.message), failed.value.message
        assert names_something(failed.value.message)


def test_empty_instance_name_is_rejected() -> None:
    """Found by the fuzz run: an empty metadata.name (possible in `render`'s files) rendered objects
    without a name."""
    doc = copy.deepcopy(PREDICTOR)
    doc["metadata"]["name"] = ""
    with pytest.raises(ValidationFailed) as failed:
        PROVIDERS[0].check(doc, Catalogs())
    assert "metadata.name" in failed.value.message
