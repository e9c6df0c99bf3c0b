"""Validation of an `llm` Instance: ordered rules, exact messages, every failing rule reported.

Order and texts follow the Go provider (kserve-behavior §1.5) where it had the rule:

1. `the "llmEngine" component is required for the "llm" topology`, and its type is `vllm`
2. `llmEngine.parameters.modelURI is required`
3. the parameters model: `invalid llmEngine.parameters.modelURI "<uri>": <why>`, types, unknown keys
   and enums (`llmEngine.parameters.tensorParallelSize: Input should be a valid integer`),
   `invalid llmEngine.parameters.config: <why>`, `llmEngine.parameters.lora.maxRank must be at
   least 1`, `llmEngine.parameters.loraDeployment must be "disabled" or "enabled"`, …
4. `llmEngine replicas must not be negative`, then the component `resources` (quantities, gpuCount
   agreeing with them, and at least as many nvidia.com/gpu as the parallelism needs), then the
   KV-cache offloading tiers within them (provider.topologies.llm.kv_offloading)
5. `llmEngine.service.serviceType must be one of ClusterIP, LoadBalancer or NodePort`, then the
   source ranges
6. the topology parameters model: `externalAccess must be one of ClusterIP, LoadBalancer, NodePort
   or EnvoyAIGateway`, flags (`topology.parameters.enablePrefill: invalid boolean value "maybe"`)
7. `externalAccess EnvoyAIGateway requires aiGateway.enabled in the provider chart`
8. `tokenLimitPerHour requires External access = EnvoyAIGateway`,
   `tokenLimitPerHour must be greater than zero`
9. names of the derived objects that would exceed Kubernetes' limits
10. LoRA: catalog slots, then each adapter, then the storage-initializer rule, then one claim per
   `pvc://` URI (the model's and the adapters'); then what the AI Gateway route and quota policy
   can hold (at most 128 routed models, names within the header value limits)
11. the pod settings of the inline config within the Pod Security level of the Instance's
   namespace (provider.rules.pod_security), e.g. `llmEngine.parameters.config.template.hostPID: hostPID:
   true is not allowed by the Pod Security Standard 'restricted' of this namespace`.

Every value that reaches a Kubernetes field is checked against that field's limits on the way
(provider.rules.fields: 32-bit integers, qualified keys, image references, printable text).
Rules 1-9 need no catalog (`read_llm`); 10 and 11 do (`validate_llm`, which the topology runs once per pass).

A failing rule does not stop the rules that do not depend on it: the message lists every problem
in this order (provider.rules.problems), so two mistakes are read, and fixed, at once. Only rule 1
stops everything; a rule that needs what an earlier one could not read (the GPUs need the
parameters, LoRA needs rules 1-9) is skipped when that one failed.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, Final

from pydantic import BaseModel, ValidationError

from actors import ValidationFailed
from provider.model import names
from provider.model.catalog import Catalogs
from provider.model.instance import ComponentService, ComponentSpec, Instance
from provider.model.settings import ProviderSettings
from provider.rules.fields import check_image, check_int32, check_qualified_name, check_text
from provider.rules.pod_security import PodPolicy, metadata_violation, violation
from provider.rules.problems import Problems
from provider.rules.quote import quote
from provider.rules.resource_requirements import container_resources
from provider.topologies.llm.adapters import resolve_adapters
from provider.topologies.llm.config import pod_metadata, pod_specs
from provider.topologies.llm.gateway import route_problem
from provider.topologies.llm.inputs import COMPONENT, LlmInputs
from provider.topologies.llm.kv_offloading import check_against_resources
from provider.topologies.llm.param_base import ENGINE_PREFIX, TOPOLOGY_PREFIX, messages_of
from provider.topologies.llm.params import LlmEngineParameters
from provider.topologies.llm.source_ranges import normalized_source_ranges
from provider.topologies.llm.topology_params import LlmTopologyParameters

SERVICE_TYPES: Final = ("ClusterIP", "LoadBalancer", "NodePort")
COMPONENT_TYPE: Final = "vllm"
GPU_RESOURCE: Final = "nvidia.com/gpu"
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
    """The engine parameters, or ValidationFailed naming every wrong parameter."""
    params = canonical_keys(ENGINE_PREFIX, raw, LlmEngineParameters, fold_case=True)
    problems = Problems()
    uri = params.get("modelURI")
    missing_uri = uri is None or (isinstance(uri, str) and not uri.strip())
    if missing_uri:
        problems.add(f"{ENGINE_PREFIX}.modelURI is required")
    try:
        parsed = LlmEngineParameters.model_validate(params)
    except ValidationError as exc:
        # The model's own complaint about a missing modelURI says less than the one above.
        problems.extend(messages_of(ENGINE_PREFIX, exc, skip=("modelURI",) if missing_uri else ()))
    problems.raise_any()
    return parsed


def parse_topology(raw: Mapping[str, Any]) -> LlmTopologyParameters:
    # Topology keys were case-sensitive in Go; so they stay.
    params = canonical_keys(TOPOLOGY_PREFIX, raw, LlmTopologyParameters, fold_case=False)
    try:
        return LlmTopologyParameters.model_validate(params)
    except ValidationError as exc:
        problems = Problems()
        problems.extend(messages_of(TOPOLOGY_PREFIX, exc))
        problems.raise_any()
        raise


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


def _gpus_needed(engine: LlmEngineParameters) -> tuple[int, int, int, int]:
    """One GPU per tensor x pipeline x data rank in the pod: (needed, tp, pp, dp)."""
    tp = engine.tensor_parallel_size or 1
    pp = engine.pipeline_parallel_size or 1
    dp = engine.data_parallel or 1
    return tp * pp * dp, tp, pp, dp


def _with_gpu_count(engine: LlmEngineParameters, resources: dict[str, Any]) -> dict[str, Any]:
    """`resources` with gpuCount as the GPU limit and request (the gpu profile only). Without a
    gpuCount and without GPUs in the resources, a parallelism above 1 asks for its own count (the
    form posts no gpuCount when the user leaves it empty: raising the parallelism alone is enough)."""
    count = engine.gpu_count
    if engine.cpu:
        return resources
    if count is None:
        in_resources = any(GPU_RESOURCE in (resources.get(section) or {}) for section in ("limits", "requests"))
        needed = _gpus_needed(engine)[0]
        if in_resources or needed == 1:
            return resources  # the resources' count, or the preset's one GPU
        count = needed
    out = dict(resources)
    for section in ("limits", "requests"):
        values = dict(out.get(section) or {})
        written = values.get(GPU_RESOURCE)
        if written is not None and written != str(count):
            raise ValidationFailed(
                f"{ENGINE_PREFIX}.gpuCount is {count}, but {COMPONENT}.resources.{section}.{GPU_RESOURCE} is "
                f"{written}; set only one of them"
            )
        values[GPU_RESOURCE] = str(count)
        out[section] = values
    return out


def _check_gpus(engine: LlmEngineParameters, resources: Mapping[str, Any]) -> None:
    """vLLM needs one GPU per tensor x pipeline x data rank in the pod; fewer fails at startup."""
    if engine.cpu:
        return
    needed, tp, pp, dp = _gpus_needed(engine)
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


def _read_service(service: ComponentService | None) -> tuple[str, dict[str, str], tuple[str, ...]]:
    """Rule 5: the Service type, its annotations and its source ranges."""
    if service is None:
        return "ClusterIP", {}, ()
    if service.service_type not in (None, "", *SERVICE_TYPES):
        raise ValidationFailed(f"{COMPONENT}.service.serviceType must be one of ClusterIP, LoadBalancer or NodePort")
    annotations = dict(service.annotations)
    for key in annotations:
        check_qualified_name(key, f"{COMPONENT}.service.annotations")
    source_ranges: tuple[str, ...] = ()
    if service.load_balancer_service is not None:
        source_ranges = normalized_source_ranges(
            service.load_balancer_service.source_ranges,
            f"{COMPONENT}.service.loadBalancerService.sourceRanges",
        )
    return service.service_type or "ClusterIP", annotations, source_ranges


def _check_image_and_versions(
    instance: Instance, component: ComponentSpec, image: str | None, problems: Problems
) -> None:
    """The image a user names and the versions they pin: text a reference or a label can carry."""
    with problems.collect():
        if image is not None:
            check_image(image, f"{COMPONENT}.image")
    for value, where in ((instance.spec.version, "spec.version"), (component.version, f"{COMPONENT}.version")):
        with problems.collect():
            if value:
                check_text(value, where, max_length=253)


def read_llm(instance: Instance, settings: ProviderSettings) -> LlmInputs:
    """Rules 1-9: everything but the LoRA adapters (which need the catalog)."""
    component = llm_component(instance)
    problems = Problems()
    with problems.collect():
        if component.type not in (None, "", COMPONENT_TYPE):
            raise ValidationFailed(
                f"spec.components.{COMPONENT}.type is {quote(component.type)}, "
                f'but the llm topology runs "{COMPONENT_TYPE}"'
            )
    engine: LlmEngineParameters | None = None
    with problems.collect():
        engine = parse_engine(component.parameters)
    with problems.collect():
        if component.replicas is not None and component.replicas < 0:
            raise ValidationFailed(f"{COMPONENT} replicas must not be negative")
        check_int32(component.replicas, f"{COMPONENT}.replicas")
    resources: dict[str, Any] = {}
    with problems.collect():
        resources = container_resources(component.resources, prefix=f"{COMPONENT}.resources")
        if engine is not None:
            resources = _with_gpu_count(engine, resources)
            _check_gpus(engine, resources)
            check_against_resources(engine.kv_cache_offloading, resources)
    service_type, annotations, source_ranges = "ClusterIP", dict[str, str](), tuple[str, ...]()
    with problems.collect():
        service_type, annotations, source_ranges = _read_service(component.service)
    topology: LlmTopologyParameters | None = None
    with problems.collect():
        topology_spec = instance.spec.topology
        topology = parse_topology(topology_spec.parameters if topology_spec is not None else {})
        _check_gateway(topology, settings)
    image = (component.image or "").strip() or None
    _check_image_and_versions(instance, component, image, problems)
    inputs: LlmInputs | None = None
    if engine is not None and topology is not None:
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
        with problems.collect():
            _check_names(inputs, settings)
    problems.raise_any()
    assert inputs is not None  # engine and topology were read, or a problem was raised above
    return inputs


def check_pod_policy(engine: LlmEngineParameters, policy: PodPolicy) -> None:
    """Rule 11: the pod settings of the inline config within the namespace's Pod Security level."""
    body = engine.config_spec()
    problems = Problems()
    for path, pod_annotations, pod_labels in pod_metadata(body):
        where = f"{ENGINE_PREFIX}.config{'.' + path if path else ''}"
        if (problem := metadata_violation(pod_annotations, pod_labels, where, policy)) is not None:
            problems.add(problem)
    for path, pod in pod_specs(body):
        if (problem := violation(pod, f"{ENGINE_PREFIX}.config.{path}", policy)) is not None:
            problems.add(problem)
    problems.raise_any()


def validate_llm(
    instance: Instance, catalogs: Catalogs, settings: ProviderSettings, policy: PodPolicy | None = None
) -> LlmInputs:
    """All rules in order: the translation inputs, or ValidationFailed naming every failure.
    `policy` is the Pod Security policy of the Instance's namespace (the chart's default if None)."""
    inputs = read_llm(instance, settings)
    problems = Problems()
    with problems.collect():
        inputs = replace(inputs, adapters=resolve_adapters(inputs, catalogs))
        if (problem := route_problem(inputs, settings)) is not None:
            raise ValidationFailed(problem)
    with problems.collect():
        check_pod_policy(inputs.engine, policy or settings.pod_policy())
    problems.raise_any()
    return inputs
