"""Validation of an `llm` Instance: ordered rules, the first failure wins, exact messages.

Order and texts follow the Go provider (kserve-behavior §1.5) where it had the rule:

1. `the "llmEngine" component is required for the "llm" topology`, and its type is `vllm`
2. `llmEngine.parameters.modelURI is required`
3. the parameters model: `invalid llmEngine.parameters.modelURI "<uri>": <why>`, types, unknown keys
   and enums (`llmEngine.parameters.tensorParallelSize: Input should be a valid integer`),
   `invalid llmEngine.parameters.config: <why>`, `llmEngine.parameters.lora.maxRank must be at
   least 1`, `llmEngine.parameters.loraDeployment must be "disabled" or "enabled"`, …
4. `llmEngine replicas must not be negative`, then the component `resources` (quantities, and at
   least as many nvidia.com/gpu as the parallelism needs), then the KV-cache offloading tiers within
   them (provider.topologies.llm.kv_offloading)
5. `llmEngine.service.serviceType must be one of ClusterIP, LoadBalancer or NodePort`, then the
   source ranges
6. the topology parameters model: `externalAccess must be one of ClusterIP, LoadBalancer, NodePort
   or EnvoyAIGateway`, flags (`topology.parameters.enablePrefill: invalid boolean value "maybe"`)
7. `externalAccess EnvoyAIGateway requires aiGateway.enabled in the provider chart`
8. `tokenLimitPerHour requires External access = EnvoyAIGateway`,
   `tokenLimitPerHour must be greater than zero`
9. names of the derived objects that would exceed Kubernetes' limits
10. LoRA: catalog slots, then each adapter, then the storage-initializer rule; then what the AI
   Gateway route and quota policy can hold (at most 128 routed models, names within the header
   value limits)
11. the pod settings of the inline config within the Pod Security level of the Instance's
   namespace (provider.rules.pod_security), e.g. `llmEngine.parameters.config.template.hostPID: hostPID:
   true is not allowed by the Pod Security Standard 'restricted' of this namespace`.

Every value that reaches a Kubernetes field is checked against that field's limits on the way
(provider.rules.fields: 32-bit integers, qualified keys, image references, printable text).
Rules 1-9 need no catalog (`read_llm`); 10 and 11 do (`validate_llm`, which the topology runs once per pass).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Final

from pydantic import BaseModel, ValidationError

from actors import ValidationFailed
from provider.model import names
from provider.model.instance import ComponentSpec, Instance
from provider.model.settings import ProviderSettings
from provider.rules.fields import check_image, check_int32, check_qualified_name, check_text
from provider.rules.pod_security import PodPolicy, metadata_violation, violation
from provider.rules.quote import quote
from provider.rules.resource_requirements import container_resources
from provider.topologies.llm.config import pod_metadata, pod_specs
from provider.topologies.llm.gateway import route_problem
from provider.topologies.llm.inputs import COMPONENT, Adapter, LlmInputs
from provider.topologies.llm.kv_offloading import check_against_resources
from provider.topologies.llm.param_base import ENGINE_PREFIX, TOPOLOGY_PREFIX, message_of
from provider.topologies.llm.params import LlmEngineParameters
from provider.topologies.llm.source_ranges import normalized_source_ranges
from provider.topologies.llm.topology_params import LlmTopologyParameters
from provider.topologies.llm.uris import scheme_of, uri_problem
from provider.topologies.protocol import Catalogs

SERVICE_TYPES: Final = ("ClusterIP", "LoadBalancer", "NodePort")
COMPONENT_TYPE: Final = "vllm"
GPU_RESOURCE: Final = "nvidia.com/gpu"
# Adapter names end up as vLLM --lora-modules names and in KServe paths.
ADAPTER_NAME_PATTERN: Final = r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$"
# A Service name is a DNS-1035 label.
SERVICE_NAME_PATTERN: Final = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"


def llm_component(instance: Instance) -> ComponentSpec:
    component = instance.spec.components.get(COMPONENT)
    if component is None:
        raise ValidationFailed(f'the "{COMPONENT}" component is required for the "llm" topology')
    return component


def canonical_keys(prefix: str, raw: Mapping[str, Any], model: type[BaseModel], *, fold_case: bool) -> dict[str, Any]:
    """`raw` with JSON nulls dropped (unset, as in Go) and, with `fold_case`, keys written in another
    case mapped to their wire name (Go's decoder matched component parameters case-insensitively,
    so `modeluri` must keep working)."""
    wire = {(f.alias or n).lower(): (f.alias or n) for n, f in model.model_fields.items()}
    out: dict[str, Any] = {}
    written_as: dict[str, str] = {}
    for key, value in raw.items():
        if value is None:
            continue
        name = wire.get(key.lower(), key) if fold_case else key
        if name in written_as:
            raise ValidationFailed(f"{prefix}.{written_as[name]} and {key} set the same parameter; keep one")
        written_as[name] = key
        out[name] = value
    return out


def parse_engine(raw: Mapping[str, Any]) -> LlmEngineParameters:
    params = canonical_keys(ENGINE_PREFIX, raw, LlmEngineParameters, fold_case=True)
    uri = params.get("modelURI")
    if uri is None or (isinstance(uri, str) and not uri.strip()):
        raise ValidationFailed(f"{ENGINE_PREFIX}.modelURI is required")
    try:
        return LlmEngineParameters.model_validate(params)
    except ValidationError as exc:
        raise ValidationFailed(message_of(ENGINE_PREFIX, exc)) from None


def parse_topology(raw: Mapping[str, Any]) -> LlmTopologyParameters:
    # Topology keys were case-sensitive in Go; so they stay.
    params = canonical_keys(TOPOLOGY_PREFIX, raw, LlmTopologyParameters, fold_case=False)
    try:
        return LlmTopologyParameters.model_validate(params)
    except ValidationError as exc:
        raise ValidationFailed(message_of(TOPOLOGY_PREFIX, exc)) from None


def _check_gateway(topology: LlmTopologyParameters, settings: ProviderSettings) -> None:
    if topology.uses_ai_gateway():
        if not settings.ai_gateway_enabled:
            raise ValidationFailed("externalAccess EnvoyAIGateway requires aiGateway.enabled in the provider chart")
        if not settings.ai_gateway_configured:
            raise ValidationFailed(
                "ai gateway is enabled for the instance but the provider gateway is not configured "
                "(AI_GATEWAY_NAME and AI_GATEWAY_NAMESPACE)"
            )
    if topology.token_limit_per_hour is not None:
        if not topology.uses_ai_gateway():
            raise ValidationFailed("tokenLimitPerHour requires External access = EnvoyAIGateway")
        if topology.token_limit_per_hour < 1:
            raise ValidationFailed("tokenLimitPerHour must be greater than zero")


def _check_names(inputs: LlmInputs, settings: ProviderSettings) -> None:
    """Derived names that are plain concatenations (kept from Go) must still be valid names."""
    external = inputs.external_service_type
    if external is not None:
        service = names.external_service_name(inputs.name)
        if len(service) > 63 or not re.fullmatch(SERVICE_NAME_PATTERN, service):
            raise ValidationFailed(
                f'the {external} Service would be named "{service}", which is not a valid Service name '
                "(at most 63 characters, starting with a letter); use a shorter Instance name"
            )
    for needed, name in (
        (inputs.engine.config is not None, names.config_name(inputs.name)),
        (bool(settings.hf_token_secret_name), names.model_puller_name(inputs.name)),
    ):
        if needed and len(name) > 253:
            raise ValidationFailed(
                f"derived object name {quote(name)} is longer than 253 characters; use a shorter Instance name"
            )


def _check_gpus(engine: LlmEngineParameters, resources: Mapping[str, Any]) -> None:
    """vLLM needs one GPU per tensor x pipeline x data rank in the pod; fewer fails at startup."""
    if engine.cpu:
        return
    tp = engine.tensor_parallel_size or 1
    pp = engine.pipeline_parallel_size or 1
    dp = engine.data_parallel or 1
    needed = tp * pp * dp
    for section in ("limits", "requests"):
        gpus = (resources.get(section) or {}).get(GPU_RESOURCE)
        count = int(gpus) if isinstance(gpus, int) or (isinstance(gpus, str) and gpus.isdigit()) else None
        if count is not None:
            if count < needed:
                raise ValidationFailed(
                    f"{COMPONENT}.resources.{section}.{GPU_RESOURCE} is {count}, but the parallelism needs {needed} "
                    f"GPUs per pod (tensorParallelSize {tp} * pipelineParallelSize {pp} * dataParallelSize {dp})"
                )
            return


def read_llm(instance: Instance, settings: ProviderSettings) -> LlmInputs:
    """Rules 1-9: everything but the LoRA adapters (which need the catalog)."""
    component = llm_component(instance)
    if component.type not in (None, "", COMPONENT_TYPE):
        raise ValidationFailed(
            f'spec.components.{COMPONENT}.type is {quote(component.type)}, but the llm topology runs "{COMPONENT_TYPE}"'
        )
    engine = parse_engine(component.parameters)
    if component.replicas is not None and component.replicas < 0:
        raise ValidationFailed(f"{COMPONENT} replicas must not be negative")
    check_int32(component.replicas, f"{COMPONENT}.replicas")
    resources = container_resources(component.resources, prefix=f"{COMPONENT}.resources")
    _check_gpus(engine, resources)
    check_against_resources(engine.kv_cache_offloading, resources)

    service = component.service
    service_type = "ClusterIP"
    annotations: dict[str, str] = {}
    source_ranges: tuple[str, ...] = ()
    if service is not None:
        if service.service_type not in (None, "", *SERVICE_TYPES):
            raise ValidationFailed(
                f"{COMPONENT}.service.serviceType must be one of ClusterIP, LoadBalancer or NodePort"
            )
        service_type = service.service_type or "ClusterIP"
        annotations = dict(service.annotations)
        for key in annotations:
            check_qualified_name(key, f"{COMPONENT}.service.annotations")
        if service.load_balancer_service is not None:
            source_ranges = normalized_source_ranges(
                service.load_balancer_service.source_ranges,
                f"{COMPONENT}.service.loadBalancerService.sourceRanges",
            )

    topology_spec = instance.spec.topology
    topology = parse_topology(topology_spec.parameters if topology_spec is not None else {})
    _check_gateway(topology, settings)
    image = (component.image or "").strip() or None
    if image is not None:
        check_image(image, f"{COMPONENT}.image")
    for value, where in ((instance.spec.version, "spec.version"), (component.version, f"{COMPONENT}.version")):
        if value:
            check_text(value, where, max_length=253)

    inputs = LlmInputs(
        name=instance.metadata.name,
        namespace=instance.metadata.namespace,
        engine=engine,
        topology=topology,
        replicas=component.replicas,
        resources=resources,
        image=image,
        service_type=service_type,
        service_annotations=annotations,
        source_ranges=source_ranges,
        version_bundle=instance.spec.version or None,
        component_version=component.version or None,
    )
    _check_names(inputs, settings)
    return inputs


# -- LoRA --------------------------------------------------------------------------------------


def _catalog_adapters(engine: LlmEngineParameters, catalogs: Catalogs) -> list[Adapter]:
    """Go rule 10: the slots of `loraDeployment: enabled`, each a known, distinct catalog entry."""
    slots = engine.lora_slots()
    if not slots:
        raise ValidationFailed(f"{ENGINE_PREFIX}.loraDeployment enabled requires at least one adapter slot")
    chosen_by: dict[str, str] = {}
    adapters: list[Adapter] = []
    for field, name in slots:
        if name in chosen_by:
            raise ValidationFailed(f"{ENGINE_PREFIX}.{chosen_by[name]} and {field} both select adapter {quote(name)}")
        chosen_by[name] = field
        entry = catalogs.adapter(name)
        if entry is None:
            raise ValidationFailed(
                f"{ENGINE_PREFIX}.{field} references unknown adapter {quote(name)} (add it to chart loraAdapters)"
            )
        adapters.append(Adapter(name=entry.name, uri=entry.uri, field=f"{ENGINE_PREFIX}.{field}", from_catalog=True))
    return adapters


def _explicit_adapters(engine: LlmEngineParameters) -> list[Adapter]:
    specs = engine.lora.adapters if engine.lora is not None else []
    return [
        Adapter(name=spec.name.strip(), uri=spec.uri.strip(), field=f"{ENGINE_PREFIX}.lora.adapters[{i}]")
        for i, spec in enumerate(specs)
    ]


def _selected_adapters(engine: LlmEngineParameters, catalogs: Catalogs) -> list[Adapter]:
    """loraDeployment unset: the explicit `lora.adapters`; `enabled`: the catalog slots;
    `disabled`: none. Explicit adapters next to an explicit loraDeployment are contradictory (Go
    deployed them even with `disabled`, kserve-behavior §10.16), so they are an error."""
    explicit = _explicit_adapters(engine)
    if engine.lora_deployment is None:
        return explicit
    if explicit:
        raise ValidationFailed(
            f"{ENGINE_PREFIX}.lora.adapters cannot be combined with loraDeployment "
            f'"{engine.lora_deployment}"; remove loraDeployment to serve explicit adapters, '
            "or choose catalog adapters with loraSlot1..3"
        )
    if engine.lora_deployment == "disabled":
        return []
    return _catalog_adapters(engine, catalogs)


def _check_adapter(adapter: Adapter, base: str, seen: dict[str, str]) -> None:
    """Go rule 12, naming the field the adapter came from (Go always said lora.adapters[i])."""
    if adapter.from_catalog:
        what, fix = f"{adapter.field}: catalog adapter {quote(adapter.name)}", " (fix chart loraAdapters)"
        if adapter.name == base:
            raise ValidationFailed(
                f"{what} has the same name as the base served model {quote(base)}; set {ENGINE_PREFIX}.modelName "
                "to another name or choose another adapter"
            )
        if not re.fullmatch(ADAPTER_NAME_PATTERN, adapter.name):
            raise ValidationFailed(f"{what} is not a valid adapter name{fix}")
        problem = uri_problem(adapter.uri)
        if problem is not None:
            raise ValidationFailed(f"{what} has an invalid uri {quote(adapter.uri)}: {problem}{fix}")
        return
    where = adapter.field
    if not adapter.name:
        raise ValidationFailed(f"{where}.name is required")
    if adapter.name in (".", ".."):
        raise ValidationFailed(f"{where}.name {quote(adapter.name)} is not a valid adapter name")
    if not re.fullmatch(ADAPTER_NAME_PATTERN, adapter.name):
        raise ValidationFailed(
            f'{where}.name {quote(adapter.name)} is not a valid adapter name (letters, digits, ".", "_" and "-")'
        )
    if adapter.name == base:
        raise ValidationFailed(
            f"{where}.name {quote(adapter.name)} must differ from the base served model name {quote(base)}"
        )
    if adapter.name in seen:
        raise ValidationFailed(f"{where}.name {quote(adapter.name)} duplicates {seen[adapter.name]}.name")
    if not adapter.uri:
        raise ValidationFailed(f"{where}.uri is required")
    problem = uri_problem(adapter.uri)
    if problem is not None:
        raise ValidationFailed(f"invalid {where}.uri {quote(adapter.uri)}: {problem}")


def resolve_adapters(inputs: LlmInputs, catalogs: Catalogs) -> tuple[Adapter, ...]:
    engine = inputs.engine
    adapters = _selected_adapters(engine, catalogs)
    seen: dict[str, str] = {}
    for adapter in adapters:
        _check_adapter(adapter, inputs.served_model_name, seen)
        seen[adapter.name] = adapter.field.removeprefix(f"{ENGINE_PREFIX}.lora.")
    if engine.disable_storage_initializer:
        for adapter in adapters:
            scheme = scheme_of(adapter.uri)
            if scheme in ("hf", "s3"):
                raise ValidationFailed(
                    f"{adapter.field} uses {scheme}:// which requires the storage initializer; "
                    "set disableStorageInitializer to false"
                )
    return tuple(adapters)


def check_pod_policy(engine: LlmEngineParameters, policy: PodPolicy) -> None:
    """Rule 11: the pod settings of the inline config within the namespace's Pod Security level."""
    body = engine.config_spec()
    for path, pod_annotations, pod_labels in pod_metadata(body):
        where = f"{ENGINE_PREFIX}.config{'.' + path if path else ''}"
        if (problem := metadata_violation(pod_annotations, pod_labels, where, policy)) is not None:
            raise ValidationFailed(problem)
    for path, pod in pod_specs(body):
        problem = violation(pod, f"{ENGINE_PREFIX}.config.{path}", policy)
        if problem is not None:
            raise ValidationFailed(problem)


def validate_llm(
    instance: Instance, catalogs: Catalogs, settings: ProviderSettings, policy: PodPolicy | None = None
) -> LlmInputs:
    """All rules in order: the translation inputs, or ValidationFailed with the first failure.
    `policy` is the Pod Security policy of the Instance's namespace (the chart's default if None)."""
    inputs = read_llm(instance, settings)
    inputs = replace(inputs, adapters=resolve_adapters(inputs, catalogs))
    if (problem := route_problem(inputs, settings)) is not None:
        raise ValidationFailed(problem)
    check_pod_policy(inputs.engine, policy or settings.pod_policy())
    return inputs
