"""Fuzzed Instance specs: valid llm and predictor Instances, each given one to five seeded mutations
(a field set to a plausible or arbitrary value, removed, an unknown key added, a subtree replaced)."""

from __future__ import annotations

import copy
import random
from typing import Any, Final

from actors.interface import KubeObject
from tests.support import gen as st
from tests.support.fuzz_values import (
    COMPONENT_KEYS,
    ENGINE_KEYS,
    NAMES,
    PREDICTOR_KEYS,
    SMALL_INTS,
    TOPOLOGY_KEYS,
    json_values,
)
from tests.support.gen import Gen
from tests.support.instances import llm_instance, predictor_instance

# -- base Instances and mutations -------------------------------------------------------------------

LLM: Final[KubeObject] = llm_instance(
    topology={"externalAccess": "LoadBalancer"},
    engine={"modelName": "qwen"},
    component={"replicas": 1, "resources": {"limits": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"}}},
)
LLM_LORA: Final[KubeObject] = llm_instance(
    topology={"externalAccess": "LoadBalancer"},
    engine={"modelName": "qwen", "computeProfile": "cpu", "loraDeployment": "enabled", "loraSlot1": "qwen2.5-0.5b-sft"},
    component={"replicas": 1, "resources": {"limits": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"}}},
)
PREDICTOR: Final[KubeObject] = predictor_instance(
    uid="uid-2", parameters={"modelFormat": "sklearn", "storageURI": "gs://bucket/model", "minReplicas": 1}
)
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
