"""The inline config outlives its baseRef until KServe lets go of it (KServe 0.20's finalizer)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from actors.interface import KubeObject
from provider.topologies.llm.config import KSERVE_CONFIG_FINALIZER, config_still_in_use, held_config

# The LLMInferenceService KServe made of Instance "chat" in namespace "models", as recorded.
READY = json.loads((Path(__file__).parents[1] / "fixtures" / "kserve" / "llmisvc-ready.json").read_text())["kserve"]
APPLIED = {"name": "chat-config", "namespace": "models", "source": "UserRef"}
CONFIG: KubeObject = {
    "apiVersion": "serving.kserve.io/v1alpha2",
    "kind": "LLMInferenceServiceConfig",
    "metadata": {"name": "chat-config", "namespace": "models", "finalizers": [KSERVE_CONFIG_FINALIZER]},
    "spec": {"template": {"containers": [{"name": "main", "args": ["--enforce-eager"]}]}},
}


def lookup(*objects: KubeObject) -> Any:
    by_key = {(o["kind"], o["metadata"]["name"]): o for o in objects}
    return lambda resource, name: by_key.get((resource.kind, name))


def served(*, uses_config: bool) -> KubeObject:
    obj: KubeObject = copy.deepcopy(READY)
    obj["spec"]["baseRefs"] = [{"name": "kserve-config-llm-cpu"}]
    if uses_config:
        obj["status"]["appliedConfigs"].append(APPLIED)
    return obj


def desired_without_config() -> list[KubeObject]:
    obj: KubeObject = copy.deepcopy(READY)
    obj["spec"]["baseRefs"] = [{"name": "kserve-config-llm-cpu"}]
    return [{k: obj[k] for k in ("apiVersion", "kind", "metadata", "spec")}]


def test_config_stays_while_kserve_still_applies_it() -> None:
    kept = config_still_in_use(desired_without_config(), lookup(CONFIG, served(uses_config=True)))
    assert kept is not None
    assert (kept["metadata"]["name"], kept["spec"]) == ("chat-config", CONFIG["spec"])


def test_config_goes_once_kserve_no_longer_applies_it() -> None:
    assert config_still_in_use(desired_without_config(), lookup(CONFIG, served(uses_config=False))) is None


def test_nothing_kept_when_the_service_goes_too_or_no_config_exists() -> None:
    assert config_still_in_use([], lookup(CONFIG, served(uses_config=True))) is None
    assert config_still_in_use(desired_without_config(), lookup(served(uses_config=True))) is None


def test_held_config_is_released_only_when_unused() -> None:
    deleting = copy.deepcopy(CONFIG)
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert held_config("chat", lookup(deleting, served(uses_config=False))) == deleting
    assert held_config("chat", lookup(deleting)) == deleting  # the service is gone
    assert held_config("chat", lookup(deleting, served(uses_config=True))) is None
    assert held_config("chat", lookup(CONFIG, served(uses_config=False))) is None  # not being deleted
