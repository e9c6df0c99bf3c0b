"""Every Instance the tests build: one function per topology (`llm`, `predictor`, and the null
provider's `null`; `bare_instance` for none), each a valid Instance that keyword arguments change.

By default an Instance is the smallest valid one of its topology, as the API server stores it (a uid
and generation 1), named like the unit tests' fixtures. `on_cluster=True` is the Instance a test
creates on a local cluster: sized for the cluster's CPU preset, and without the uid and generation
the API server gives it. No Instance names a `spec.version` unless asked: without a Provider
resource there is no bundle to check it against.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from actors.client.known_resources import INSTANCES
from actors.interface import KubeObject
from provider.model.instance import Instance
from provider.model.names import PROVIDER_NAME

UID = "uid-1"
LLM_MODEL_URI = "hf://Qwen/Qwen2.5-0.5B-Instruct"
# A model small enough for the local cluster's CPU preset (the chart's kserve-config-llm-cpu).
SMALL_LLM_MODEL_URI = "hf://HuggingFaceTB/SmolLM2-135M-Instruct"
SKLEARN_URI = "gs://kfserving-examples/models/sklearn/1.0/model"
# Inline vLLM config (llmEngine.parameters.config): one more derived object, the config.
INLINE_CONFIG = "template:\n  containers:\n    - name: main\n      args: [--enforce-eager]\n"

_CLUSTER_LLM_ENGINE: Mapping[str, Any] = {"modelURI": SMALL_LLM_MODEL_URI, "computeProfile": "cpu"}
_CLUSTER_LLM_COMPONENT: Mapping[str, Any] = {"replicas": 1, "resources": {"limits": {"cpu": "2", "memory": "8Gi"}}}
_CLUSTER_PREDICTOR_COMPONENT: Mapping[str, Any] = {
    "replicas": 1,
    "resources": {"limits": {"cpu": "1", "memory": "2Gi"}},
}


def llm_instance(
    name: str = "chat",
    namespace: str | None = "models",
    *,
    engine: Mapping[str, Any] | None = None,
    topology: Mapping[str, Any] | None = None,
    component: Mapping[str, Any] | None = None,
    on_cluster: bool = False,
    topology_type: str | None = "llm",
    with_component: bool = True,
    version: str | None = None,
    uid: str | None = UID,
) -> KubeObject:
    """An llm Instance. `engine`: llmEngine.parameters over the model URI (a None value removes the
    key); `topology`: topology.parameters; `component`: llmEngine's other fields (replicas,
    resources, ...; `parameters` there replaces them whole); `uid=None`: as a user writes it."""
    base = _CLUSTER_LLM_ENGINE if on_cluster else {"modelURI": LLM_MODEL_URI}
    parameters = _overridden(base, engine)
    fields = {**(_CLUSTER_LLM_COMPONENT if on_cluster else {}), **(component or {})}
    return _instance(
        name,
        namespace,
        provider=PROVIDER_NAME,
        topology=None if topology_type is None else {"type": topology_type, "parameters": dict(topology or {})},
        components={"llmEngine": _component("vllm", parameters, fields)} if with_component else None,
        version=version,
        uid=None if on_cluster else uid,
    )


def predictor_parameters(**overrides: Any) -> dict[str, Any]:
    """Valid predictor parameters with `overrides` applied; an override of None removes the key."""
    return _overridden({"modelFormat": "sklearn", "storageURI": SKLEARN_URI}, overrides)


def predictor_instance(
    name: str = "iris",
    namespace: str | None = "models",
    *,
    parameters: Mapping[str, Any] | None = None,
    component: Mapping[str, Any] | None = None,
    on_cluster: bool = False,
    topology_type: str = "predictor",
    with_component: bool = True,
    version: str | None = None,
    uid: str | None = UID,
) -> KubeObject:
    """A predictor Instance (a scikit-learn model in KServe's Standard mode). `parameters`: the
    predictor's parameters, whole (`predictor_parameters` builds them from the valid ones);
    `component`: the predictor's other fields (replicas, resources, ...)."""
    fields = {**(_CLUSTER_PREDICTOR_COMPONENT if on_cluster else {}), **(component or {})}
    chosen = predictor_parameters() if parameters is None else copy.deepcopy(dict(parameters))
    return _instance(
        name,
        namespace,
        provider=PROVIDER_NAME,
        topology={"type": topology_type},
        components={"predictor": _component("modelServer", chosen, fields)} if with_component else None,
        version=version,
        uid=None if on_cluster else uid,
    )


def null_instance(
    name: str, namespace: str, *, provider: str = PROVIDER_NAME, version: str | None = None, **parameters: object
) -> KubeObject:
    """An Instance of the null provider's topology (tests.support.null_provider): `parameters` are
    its topology parameters (`size`, `extra`)."""
    return _instance(
        name,
        namespace,
        provider=provider,
        topology={"type": "null", "parameters": parameters},
        components=None,
        version=version,
        uid=None,
    )


def bare_instance(
    name: str,
    namespace: str,
    *,
    provider: str = PROVIDER_NAME,
    components: dict[str, Any] | None = None,
    version: str | None = None,
    uid: str | None = None,
) -> KubeObject:
    """An Instance of no topology, for the runtime's own tests (which read its metadata, providerRef,
    version and components, never a topology)."""
    return _instance(name, namespace, provider=provider, topology=None, components=components, version=version, uid=uid)


def as_model(obj: KubeObject) -> Instance:
    """The Instance as the provider's topologies read it."""
    return Instance.model_validate(obj)


def _overridden(base: Mapping[str, Any], overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    out = dict(base)
    for key, value in (overrides or {}).items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _component(type_: str, parameters: dict[str, Any], fields: Mapping[str, Any]) -> dict[str, Any]:
    component: dict[str, Any] = {"type": type_, **copy.deepcopy(dict(fields))}
    component.setdefault("parameters", parameters)
    return component


def _instance(
    name: str,
    namespace: str | None,
    *,
    provider: str,
    topology: dict[str, Any] | None,
    components: dict[str, Any] | None,
    version: str | None,
    uid: str | None,
) -> KubeObject:
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    if uid is not None:
        metadata.update(uid=uid, generation=1)
    spec: dict[str, Any] = {"providerRef": {"name": provider}}
    if topology is not None:
        spec["topology"] = topology
    if version is not None:
        spec["version"] = version
    if components is not None:
        spec["components"] = components
    return {"apiVersion": INSTANCES.api_version, "kind": INSTANCES.kind, "metadata": metadata, "spec": spec}
