"""Bad input never crashes the provider: ≥ 10,000 generated Instance specs through check and render.

Every spec starts from a valid Instance (llm or predictor) and gets one to five mutations: a known
field set to a plausible-but-wrong value or to arbitrary JSON (wrong types, huge numbers, NaN,
unicode, control characters, nested junk), a field removed, an unknown key added, or a whole
subtree replaced. Each one goes through `KServeProvider.check` and `.render` under varied chart
settings, catalogs and served kinds. What must hold for every input:

- the only exception is ValidationFailed, whose message is non-empty, one line, and names the field
  or rule it is about (so a user can act on it from `kubectl get`);
- `check` and `render` agree: render fails with check's very message, or succeeds when check does;
- rendered objects are JSON (what the API server accepts) with apiVersion, kind and metadata.name.

Seeded, so that CI runs the same 10,000 inputs every time. The inputs come from the seeded
generators of tests.support.gen (hypothesis spent ~85 % of the run drawing them).
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
from provider.settings import ProviderSettings
from provider.topology import Catalogs
from tests.support import gen as st
from tests.support.gen import Gen
from tests.unit.llm.builders import CATALOG

EXAMPLES: Final = 10_000
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


# -- JSON values -----------------------------------------------------------------------------------

HUGE_INTS: Final = (2**31 - 1, 2**31, 2**53 + 1, 2**63, -(2**63) - 1, 10**30, -1, 0)
ODD_STRINGS: Final = (
    "",
    " ",
    "\n",
    "\t\u00a0",
    "\x00",
    "🦙" * 40,
    "ünïcødé",
    "名前",
    "a" * 300,
    "1e400",
    "NaN",
    "-1",
    "0x10",
    "true",
    "null",
    "{}",
    "[]",
    "a\nb",
    "../..",
    "${HOME}",
)

leaves = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from(HUGE_INTS)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=40)
    | st.sampled_from(ODD_STRINGS)
)
json_values: Gen[Any] = st.recursive(
    leaves,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
)

# -- plausible values per field: enough of them right that the deeper rules are reached -----------

URIS = st.sampled_from(
    (
        "hf://Qwen/Qwen2.5-0.5B-Instruct",
        "hf://a",
        "hf://",
        "s3://bucket/model",
        "gs://bucket/path",
        "pvc://claim/path",
        "oci://registry/image:tag",
        "https://example.com/model",
        "ftp://nope",
        "hf://x/y?rev=main",
        "hf://" + "x" * 300,
        "file:///etc/passwd",
        "hf://🦙/🦙",
    )
)
QUANTITIES = st.sampled_from(("1", "500m", "2Gi", "0", "-1", "1.5", "abc", "1e3", "10Ki", "", "٣", 4, 0.5, -2))
FLAGS = st.sampled_from((True, False, "true", "false", "enabled", "disabled", "yes", "no", "1", "0", "maybe", 1, 0, 2))
SMALL_INTS = st.integers(min_value=-3, max_value=12) | st.sampled_from(HUGE_INTS)
NAMES = st.sampled_from(
    ("chat", "a", "x" * 63, "x" * 64, "y" * 250, "Upper", "with.dot", "-lead", "trail-", "ok-name", "名前", "")
)
CONFIGS = (
    st.sampled_from(
        (
            "template:\n  containers:\n    - name: main\n      args: [--enforce-eager]\n",
            "a: [unclosed",
            "- just\n- a list\n",
            "x: .inf\n",
            "x: .nan\n",
            "",
            "spec: {}",
            "!!python/object:os.system ls",
            "a: &a [*a]",
            "\t",
            "template: 5",
        )
    )
    | json_values
)
CIDRS = st.lists(
    st.sampled_from(("10.0.0.0/8", "192.168.1.10", "::1/128", "300.1.1.1", "10.0.0.0/33", "", "fe80::/10", "x")),
    max_size=4,
)

ENGINE_KEYS: Final[dict[str, Gen[Any]]] = {
    "modelURI": URIS,
    "modelName": NAMES,
    "tensorParallelSize": SMALL_INTS,
    "pipelineParallelSize": SMALL_INTS,
    "dataParallelSize": SMALL_INTS,
    "expertParallel": FLAGS,
    "computeProfile": st.sampled_from(("gpu", "cpu", "GPU", "tpu", "")),
    "kvCacheSpaceGi": SMALL_INTS,
    "baseRefs": st.lists(NAMES, max_size=3),
    "config": CONFIGS,
    "disableStorageInitializer": FLAGS,
    "lora": st.fixed_dictionaries(
        {},
        optional={
            "adapters": st.lists(
                st.fixed_dictionaries({}, optional={"name": NAMES | json_values, "uri": URIS | json_values}),
                max_size=3,
            ),
            "maxRank": SMALL_INTS,
            "maxAdapters": SMALL_INTS,
            "maxCpuAdapters": SMALL_INTS,
        },
    ),
    "loraDeployment": st.sampled_from(("enabled", "disabled", "Enabled", "")),
    "loraSlot1": st.sampled_from(("qwen2.5-0.5b-sft", "smollm2-135m-sft", "unknown", "")),
    "loraSlot2": st.sampled_from(("qwen2.5-0.5b-maestro", "qwen2.5-0.5b-sft", "")),
    "loraSlot3": st.sampled_from(("smollm2-135m-sft", "nope")),
    "modeluri": URIS,  # Go matched engine keys case-insensitively: both spellings at once
}
TOPOLOGY_KEYS: Final[dict[str, Gen[Any]]] = {
    "externalAccess": st.sampled_from(("ClusterIP", "LoadBalancer", "NodePort", "EnvoyAIGateway", "clusterip", "")),
    "enableGatewayRouting": FLAGS,
    "enableAIGateway": FLAGS,
    "tokenLimitPerHour": SMALL_INTS,
    "enablePrefill": FLAGS,
    "prefillReplicas": SMALL_INTS,
    "enableMetrics": FLAGS,
    "enableTracing": FLAGS,
    "tracingEndpoint": st.sampled_from(("http://otel:4317", "not a url", "", "grpc://x:1")),
}
PREDICTOR_KEYS: Final[dict[str, Gen[Any]]] = {
    "modelFormat": st.sampled_from(("sklearn", "xgboost", "onnx", "pytorch", "", "Unknown")),
    "storageURI": URIS,
    "storageUri": URIS,
    "runtimeVersion": st.sampled_from(("v0.20.0", "", "latest", "💥")),
    "runtime": NAMES,
    "minReplicas": SMALL_INTS,
    "maxReplicas": SMALL_INTS,
}
COMPONENT_KEYS: Final[dict[str, Gen[Any]]] = {
    "type": st.sampled_from(("vllm", "modelServer", "", "other")),
    "replicas": SMALL_INTS,
    "image": st.sampled_from(("vllm/vllm-openai:latest", "", " ", "bad image ref")),
    "version": st.sampled_from(("0.20", "", "v1")),
    "resources": st.fixed_dictionaries(
        {},
        optional={
            "limits": st.dictionaries(
                st.sampled_from(("cpu", "memory", "nvidia.com/gpu", "x")), QUANTITIES, max_size=3
            ),
            "requests": st.dictionaries(st.sampled_from(("cpu", "memory", "nvidia.com/gpu")), QUANTITIES, max_size=3),
        },
    ),
    "service": st.fixed_dictionaries(
        {},
        optional={
            "serviceType": st.sampled_from(("ClusterIP", "LoadBalancer", "NodePort", "ExternalName", "")),
            "annotations": st.dictionaries(st.text(max_size=10), st.text(max_size=10) | json_values, max_size=2),
            "loadBalancerService": st.fixed_dictionaries({}, optional={"sourceRanges": CIDRS | json_values}),
        },
    ),
}

# -- base Instances and mutations -------------------------------------------------------------------

LLM: Final[KubeObject] = {
    "apiVersion": "core.openeverest.io/v1alpha1",
    "kind": "Instance",
    "metadata": {"name": "chat", "namespace": "models", "uid": "uid-1", "generation": 1},
    "spec": {
        "providerRef": {"name": "provider-kserve"},
        "topology": {"type": "llm", "parameters": {"externalAccess": "LoadBalancer"}},
        "components": {
            "llmEngine": {
                "type": "vllm",
                "replicas": 1,
                "resources": {"limits": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"}},
                "parameters": {"modelURI": "hf://Qwen/Qwen2.5-0.5B-Instruct", "modelName": "qwen"},
            }
        },
    },
}
LLM_LORA: Final[KubeObject] = copy.deepcopy(LLM)
LLM_LORA["spec"]["components"]["llmEngine"]["parameters"].update(
    {"computeProfile": "cpu", "loraDeployment": "enabled", "loraSlot1": "qwen2.5-0.5b-sft"}
)
PREDICTOR: Final[KubeObject] = {
    "apiVersion": "core.openeverest.io/v1alpha1",
    "kind": "Instance",
    "metadata": {"name": "iris", "namespace": "models", "uid": "uid-2"},
    "spec": {
        "providerRef": {"name": "provider-kserve"},
        "topology": {"type": "predictor"},
        "components": {
            "predictor": {
                "type": "modelServer",
                "parameters": {"modelFormat": "sklearn", "storageURI": "gs://bucket/model", "minReplicas": 1},
            }
        },
    },
}
BASES: Final = (LLM, LLM_LORA, PREDICTOR)

Path = tuple[str, ...]
ENGINE: Final[Path] = ("spec", "components", "llmEngine")
PRED: Final[Path] = ("spec", "components", "predictor")
# Field path → generator of a plausible value; anything else gets arbitrary JSON.
FIELDS: Final[dict[Path, Gen[Any]]] = {
    ("metadata", "name"): NAMES,
    ("metadata", "namespace"): NAMES,
    ("metadata", "uid"): st.text(max_size=5),
    ("metadata", "generation"): SMALL_INTS,
    ("metadata", "labels"): st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2),
    ("metadata", "annotations"): st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2),
    ("spec", "providerRef", "name"): st.sampled_from(("provider-kserve", "other", "")),
    ("spec", "version"): st.sampled_from(("0.20", "", "9.9")),
    ("spec", "topology", "type"): st.sampled_from(("llm", "predictor", "", "LLM", "unknown")),
    ("spec", "parameters"): st.dictionaries(st.text(max_size=5), json_values, max_size=2),
    **{(*ENGINE, key): strategy for key, strategy in COMPONENT_KEYS.items()},
    **{(*PRED, key): strategy for key, strategy in COMPONENT_KEYS.items()},
    **{(*ENGINE, "parameters", key): strategy for key, strategy in ENGINE_KEYS.items()},
    **{(*PRED, "parameters", key): strategy for key, strategy in PREDICTOR_KEYS.items()},
    **{("spec", "topology", "parameters", key): strategy for key, strategy in TOPOLOGY_KEYS.items()},
}
SUBTREES: Final[tuple[Path, ...]] = (
    ("metadata",),
    ("spec",),
    ("spec", "providerRef"),
    ("spec", "topology"),
    ("spec", "topology", "parameters"),
    ("spec", "components"),
    ENGINE,
    (*ENGINE, "parameters"),
    (*ENGINE, "service"),
    (*ENGINE, "resources"),
    PRED,
    (*PRED, "parameters"),
)
ALL_PATHS: Final = tuple(FIELDS) + SUBTREES


def set_path(doc: dict[str, Any], path: Path, value: Any) -> None:
    """Set doc[path] = value, turning whatever is in the way into dicts."""
    node = doc
    for key in path[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            child = {}
            node[key] = child
        node = child
    node[path[-1]] = value


def delete_path(doc: dict[str, Any], path: Path) -> None:
    node: Any = doc
    for key in path[:-1]:
        node = node.get(key) if isinstance(node, dict) else None
    if isinstance(node, dict):
        node.pop(path[-1], None)


def instance_spec(rng: random.Random) -> KubeObject:
    def draw(generator: Gen[Any]) -> Any:
        return generator(rng)

    doc: KubeObject = copy.deepcopy(draw(st.sampled_from(BASES)))
    for _ in range(draw(st.integers(min_value=1, max_value=5))):
        path = draw(st.sampled_from(ALL_PATHS))
        action = draw(st.sampled_from(("plausible", "plausible", "junk", "delete", "unknown-key")))
        if action == "plausible" and path in FIELDS:
            set_path(doc, path, draw(FIELDS[path]))
        elif action == "delete":
            delete_path(doc, path)
        elif action == "unknown-key":
            set_path(doc, (*path[:-1], draw(st.text(min_size=1, max_size=12))), draw(json_values))
        else:
            set_path(doc, path, draw(json_values))
    return doc


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


def fuzz(outcomes: Counter[str]) -> Callable[[], None]:
    """The property over EXAMPLES seeded inputs, bound to a counter of what the examples did (the
    counter proves how many ran and what they reached)."""

    def run() -> None:
        rng = random.Random(SEED)
        for _ in range(EXAMPLES):
            doc = instance_spec(rng)
            provider, catalogs, available = rng.choice(PROVIDERS), rng.choice(CATALOGS), rng.choice(AVAILABLE)
            run_one(doc, provider, catalogs, available, outcomes)

    return run


def test_10000_random_instance_specs_fail_only_with_specific_messages() -> None:
    outcomes: Counter[str] = Counter()
    fuzz(outcomes)()
    assert outcomes["examples"] >= EXAMPLES
    # The generator reaches both sides: valid specs rendered, and many distinct rules rejecting.
    assert outcomes["rendered"] >= EXAMPLES // 10
    assert outcomes["rejected"] >= EXAMPLES // 2
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
