"""The LLMInferenceService `<instance>` and the inline config `<instance>-config` (serving.kserve.io/v1alpha2).

KServe merges an LLMInferenceService from its presets, then `spec.baseRefs` left to right, then the
service's own spec last. So everything the Instance states structurally (model, replicas,
parallelism, resources, …) wins over any config, and the order of baseRefs decides between configs:

1. `kserve-config-llm-cpu` (chart preset) for computeProfile cpu;
2. `kserve-config-llm-scheduler` when KServe's scheduler is needed (gateway routing or AI Gateway);
3. `kserve-config-llm-router-route` for enableGatewayRouting only: with the AI Gateway alone the
   AIGatewayRoute targets the InferencePool directly and KServe must create no HTTPRoute;
4. the user's `baseRefs`, in order;
5. `<instance>-config`, the inline config, last.

`llmEngine.replicas: 0` suspends the Instance: KServe's stop annotation, and the replica count the
object stands with (provider.topologies.suspension). `kvCacheOffloading` goes to the main pods and,
with prefill/decode disaggregation, to the prefill pods (provider.topologies.llm.kv_offloading).

Ownership metadata is left out: the runtime stamps it (actors.contract.stamp).
"""

from __future__ import annotations

from typing import Any, Final

from actors import LABEL_PROVIDER, KubeObject
from provider.model import kinds, names
from provider.model.settings import ProviderSettings
from provider.topologies.llm.inputs import COMPONENT, LlmInputs
from provider.topologies.llm.serviceaccount import hf_token_attached
from provider.topologies.suspension import with_stop

MAIN_CONTAINER: Final = "main"

CPU_PRESET: Final = "kserve-config-llm-cpu"
SCHEDULER_PRESET: Final = "kserve-config-llm-scheduler"
ROUTER_ROUTE_PRESET: Final = "kserve-config-llm-router-route"

KV_CACHE_ENV: Final = "VLLM_CPU_KVCACHE_SPACE"
OTLP_ENDPOINT_ENV: Final = "OTEL_EXPORTER_OTLP_ENDPOINT"

# Pod labels the OpenEverest runtime counts component pods by (contract.md §6).
LABEL_INSTANCE: Final = "core.openeverest.io/instance"
LABEL_COMPONENT: Final = "core.openeverest.io/component"
# Informational: which version bundle / component version produced this object.
ANNOTATION_VERSION: Final = "core.openeverest.io/version"
ANNOTATION_COMPONENT_VERSION: Final = "core.openeverest.io/component-version"


def base_refs(inputs: LlmInputs) -> list[str]:
    refs: list[str] = []
    if inputs.engine.cpu:
        refs.append(CPU_PRESET)
    if inputs.topology.gateway_routing():
        refs.append(SCHEDULER_PRESET)
    if inputs.topology.enable_gateway_routing:
        refs.append(ROUTER_ROUTE_PRESET)
    refs.extend(inputs.engine.base_refs)
    if inputs.engine.config_spec() is not None:
        refs.append(names.config_name(inputs.name))
    return refs


def pod_labels(inputs: LlmInputs) -> dict[str, str]:
    """`spec.labels`: KServe copies them onto the workload pods (and its workload Service)."""
    return {
        LABEL_INSTANCE: inputs.name,
        LABEL_COMPONENT: COMPONENT,
        LABEL_PROVIDER: names.PROVIDER_NAME,
    }


def tracing_endpoint(inputs: LlmInputs, settings: ProviderSettings) -> str | None:
    """Where vLLM sends its spans, when it traces: the Instance's collector, else the chart's ("":
    KServe's preset's). None: no tracing (the Instance does not ask, nor does the chart for all)."""
    chart = settings.llm_tracing_endpoint
    if not (inputs.topology.enable_tracing or (settings.llm_tracing_all and chart)):
        return None
    return inputs.topology.tracing_endpoint or chart


def main_container(inputs: LlmInputs, settings: ProviderSettings) -> dict[str, Any] | None:
    """Our overrides of the preset's `main` container, or None when there are none."""
    container: dict[str, Any] = {}
    if inputs.image:
        container["image"] = inputs.image
    if inputs.resources:
        container["resources"] = inputs.resources
    env: list[dict[str, str]] = []
    if (kv_cache := inputs.engine.kv_cache_space) is not None:
        env.append({"name": KV_CACHE_ENV, "value": str(kv_cache)})
    if endpoint := tracing_endpoint(inputs, settings):
        # vLLM's OpenTelemetry exporter reads the standard variable.
        env.append({"name": OTLP_ENDPOINT_ENV, "value": endpoint})
    if env:
        container["env"] = env
    return {"name": MAIN_CONTAINER, **container} if container else None


def pod_template(inputs: LlmInputs, settings: ProviderSettings) -> dict[str, Any] | None:
    template: dict[str, Any] = {}
    if hf_token_attached(inputs, settings):
        template["serviceAccountName"] = names.model_puller_name(inputs.name)
    container = main_container(inputs, settings)
    if container is not None:
        template["containers"] = [container]
    return template or None


def parallelism(inputs: LlmInputs) -> dict[str, Any] | None:
    engine = inputs.engine
    out: dict[str, Any] = {}
    if engine.tensor_parallel_size is not None:
        out["tensor"] = engine.tensor_parallel_size
    if engine.pipeline_parallel_size is not None:
        out["pipeline"] = engine.pipeline_parallel_size
    if engine.data_parallel is not None:
        # Single-node layout (no worker pods): all data-parallel ranks are local to the pod.
        out["data"] = engine.data_parallel
        out["dataLocal"] = engine.data_parallel
    if engine.expert_parallel is not None:
        out["expert"] = engine.expert_parallel
    return out or None


def model(inputs: LlmInputs) -> dict[str, Any]:
    out: dict[str, Any] = {"uri": inputs.engine.model_uri, "name": inputs.served_model_name}
    if inputs.adapters:
        lora: dict[str, Any] = {"adapters": [{"name": a.name, "uri": a.uri} for a in inputs.adapters]}
        limits = inputs.engine.lora
        if limits is not None:
            for key, value in (
                ("maxRank", limits.max_rank),
                ("maxAdapters", limits.max_adapters),
                ("maxCpuAdapters", limits.max_cpu_adapters),
            ):
                if value is not None:
                    lora[key] = value
        out["lora"] = lora
    return out


def prefill(inputs: LlmInputs, settings: ProviderSettings) -> dict[str, Any] | None:
    if not inputs.topology.enable_prefill:
        return None
    out: dict[str, Any] = {}
    if inputs.topology.prefill_replicas is not None:
        out["replicas"] = inputs.topology.prefill_replicas
    # Prefill pods run the same model with the same limits and credentials, and count as llmEngine.
    out["labels"] = pod_labels(inputs)
    template = pod_template(inputs, settings)
    if template is not None:
        out["template"] = template
    if (offloading := kv_cache_offloading(inputs)) is not None:
        out["kvCacheOffloading"] = offloading
    return out


def kv_cache_offloading(inputs: LlmInputs) -> dict[str, Any] | None:
    """KServe's KVCacheOffloadingSpec, for the main pods and (same engine, same limits) the prefill pods."""
    offloading = inputs.engine.kv_cache_offloading
    return offloading.spec() if offloading is not None else None


def tracing(inputs: LlmInputs, settings: ProviderSettings) -> dict[str, Any] | None:
    """`{}` turns on KServe's tracing preset; an endpoint overrides the preset's collector."""
    endpoint = tracing_endpoint(inputs, settings)
    if endpoint is None:
        return None
    return {"exporterEndpoint": endpoint} if endpoint else {}


def llm_inference_service(
    inputs: LlmInputs, settings: ProviderSettings, kept_replicas: int | None = None
) -> KubeObject:
    """`kept_replicas`: the count the object stands with, which a suspension leaves as it is (it
    stops the service with KServe's stop annotation, never with zero replicas)."""
    engine = inputs.engine
    spec: dict[str, Any] = {"model": model(inputs)}
    replicas = kept_replicas if inputs.suspended else inputs.replicas
    if replicas is not None:
        spec["replicas"] = replicas
    if (par := parallelism(inputs)) is not None:
        spec["parallelism"] = par
    spec["labels"] = pod_labels(inputs)
    if (template := pod_template(inputs, settings)) is not None:
        spec["template"] = template
    if refs := base_refs(inputs):
        spec["baseRefs"] = [{"name": ref} for ref in refs]
    if engine.disable_storage_initializer is not None:
        spec["storageInitializer"] = {"enabled": not engine.disable_storage_initializer}
    if (offloading := kv_cache_offloading(inputs)) is not None:
        spec["kvCacheOffloading"] = offloading
    if (pre := prefill(inputs, settings)) is not None:
        spec["prefill"] = pre
    if (trace := tracing(inputs, settings)) is not None:
        spec["tracing"] = trace

    metadata: dict[str, Any] = {"name": inputs.name}
    versions = ((ANNOTATION_VERSION, inputs.version_bundle), (ANNOTATION_COMPONENT_VERSION, inputs.component_version))
    annotations = {key: value for key, value in versions if value}
    if annotations:
        metadata["annotations"] = annotations
    return {
        "apiVersion": kinds.LLM_INFERENCE_SERVICE.api_version,
        "kind": kinds.LLM_INFERENCE_SERVICE.kind,
        "metadata": with_stop(metadata, inputs.suspended),
        "spec": spec,
    }


def llm_config(inputs: LlmInputs) -> KubeObject | None:
    """The inline config as the Instance-owned LLMInferenceServiceConfig `<instance>-config`."""
    body = inputs.engine.config_spec()
    if body is None:
        return None
    return {
        "apiVersion": kinds.LLM_INFERENCE_SERVICE_CONFIG.api_version,
        "kind": kinds.LLM_INFERENCE_SERVICE_CONFIG.kind,
        "metadata": {"name": names.config_name(inputs.name)},
        "spec": body,
    }
