"""Instances, settings and observed objects for the llm topology tests."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from actors.interface import KubeObject, ValidationFailed
from provider.model import kinds
from provider.model.instance import Instance
from provider.model.settings import ProviderSettings
from provider.topologies.llm.handler import LlmTopology
from provider.topologies.llm.inputs import LlmInputs
from provider.topologies.llm.validation import validate_llm
from provider.topologies.protocol import Catalogs, LoraAdapter

MODEL_URI = "hf://Qwen/Qwen2.5-0.5B-Instruct"
ALL_KINDS = frozenset(kinds.OWNED)
REQUIRED_KINDS = ALL_KINDS - kinds.OPTIONAL

CATALOG = Catalogs(
    lora_adapters=(
        LoraAdapter("SmolLM2 SFT", "smollm2-135m-sft", "hf://Premchan369/smollm2-135m-sft-lora"),
        LoraAdapter("Qwen SFT", "qwen2.5-0.5b-sft", "hf://lewtun/Qwen2.5-0.5B-SFT-LoRA"),
        LoraAdapter("Qwen Maestro", "qwen2.5-0.5b-maestro", "hf://umsa-v1/maestro_Qwen2.5_0.5B_grupo1"),
    )
)

GATEWAY_SETTINGS = {"ai_gateway_enabled": True, "ai_gateway_name": "kserve-gw", "ai_gateway_namespace": "kserve"}


def instance_dict(
    engine: dict[str, Any] | None = None,
    *,
    topology: dict[str, Any] | None = None,
    component: dict[str, Any] | None = None,
    name: str = "chat",
    namespace: str = "models",
    with_component: bool = True,
    topology_type: str | None = "llm",
    version: str | None = None,
) -> dict[str, Any]:
    """A valid llm Instance; `engine` entries override the parameters (None removes a key)."""
    params: dict[str, Any] = {"modelURI": MODEL_URI}
    for key, value in (engine or {}).items():
        if value is None:
            params.pop(key, None)
        else:
            params[key] = value
    spec: dict[str, Any] = {"providerRef": {"name": "provider-kserve"}}
    if topology_type is not None:
        spec["topology"] = {"type": topology_type, "parameters": copy.deepcopy(topology or {})}
    if version is not None:
        spec["version"] = version
    if with_component:
        llm: dict[str, Any] = {"type": "vllm", "parameters": params}
        llm.update(copy.deepcopy(component or {}))
        spec["components"] = {"llmEngine": llm}
    return {
        "apiVersion": "core.openeverest.io/v1alpha1",
        "kind": "Instance",
        "metadata": {"name": name, "namespace": namespace, "uid": "uid-1", "generation": 1},
        "spec": spec,
    }


def instance(engine: dict[str, Any] | None = None, **kwargs: Any) -> Instance:
    return Instance.model_validate(instance_dict(engine, **kwargs))


def settings(**overrides: Any) -> ProviderSettings:
    return ProviderSettings(**overrides)


def inputs(
    engine: dict[str, Any] | None = None,
    *,
    settings_: ProviderSettings | None = None,
    catalogs: Catalogs = CATALOG,
    **kwargs: Any,
) -> LlmInputs:
    return validate_llm(instance(engine, **kwargs), catalogs, settings_ or settings())


def desired(
    engine: dict[str, Any] | None = None,
    *,
    settings_: ProviderSettings | None = None,
    available: frozenset[Any] = ALL_KINDS,
    catalogs: Catalogs = CATALOG,
    **kwargs: Any,
) -> dict[str, KubeObject]:
    """Desired objects by kind (each kind appears at most once per Instance)."""
    handler = LlmTopology(settings_ or settings())
    parsed = instance(engine, **kwargs)
    objects = handler.desired(parsed, handler.validate(parsed, catalogs), available)
    by_kind = {obj["kind"]: obj for obj in objects}
    assert len(by_kind) == len(objects)
    return by_kind


def llmisvc_spec(engine: dict[str, Any] | None = None, **kwargs: Any) -> dict[str, Any]:
    spec: dict[str, Any] = desired(engine, **kwargs)["LLMInferenceService"]["spec"]
    return spec


def kserve_condition(type_: str, status: str, reason: str = "", message: str = "") -> dict[str, Any]:
    cond: dict[str, Any] = {"type": type_, "status": status}
    if reason:
        cond["reason"] = reason
    if message:
        cond["message"] = message
    return cond


def llmisvc(
    name: str = "chat",
    *,
    conditions: list[dict[str, Any]] | None = None,
    ready: bool | None = True,
    generation: int = 1,
    observed_generation: int | None = 1,
    url: str | None = None,
    addresses: list[str] | None = None,
) -> KubeObject:
    """An observed LLMInferenceService; `ready` adds the three top-level conditions."""
    conds = list(conditions or [])
    if ready is not None and not any(c["type"] == "Ready" for c in conds):
        truth = "True" if ready else "False"
        conds += [
            kserve_condition("PresetsCombined", "True"),
            kserve_condition("WorkloadsReady", truth, "" if ready else "MinimumReplicasUnavailable"),
            kserve_condition("RouterReady", "True"),
            kserve_condition(
                "Ready",
                truth,
                "" if ready else "MinimumReplicasUnavailable",
                "" if ready else "Deployment does not have minimum availability.",
            ),
        ]
    status: dict[str, Any] = {"conditions": conds}
    if observed_generation is not None:
        status["observedGeneration"] = observed_generation
    if url:
        status["url"] = url
    status["addresses"] = [
        {"url": u}
        for u in (
            addresses if addresses is not None else [f"http://{name}-kserve-workload-svc.models.svc.cluster.local"]
        )
    ]
    return {
        "apiVersion": "serving.kserve.io/v1alpha2",
        "kind": "LLMInferenceService",
        "metadata": {"name": name, "namespace": "models", "generation": generation},
        "status": status,
    }


# -- validation outcomes --------------------------------------------------------------------------


def fails(engine: dict[str, Any] | None = None, *, settings_: Any = None, **kwargs: Any) -> str:
    with pytest.raises(ValidationFailed) as info:
        validate_llm(instance(engine, **kwargs), CATALOG, settings_ or settings())
    return info.value.message


def passes(engine: dict[str, Any] | None = None, *, settings_: Any = None, **kwargs: Any) -> None:
    validate_llm(instance(engine, **kwargs), CATALOG, settings_ or settings())
