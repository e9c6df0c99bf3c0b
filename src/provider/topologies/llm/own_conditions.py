"""The conditions the llm topology adds beside KServe's own: one per concern that applies (the
Hugging Face token, a gated model's access, a raised KV cache, metrics, the token quota), and
what the objects a suspended Instance keeps do meanwhile. The access conditions
(`ExternalAccessReady`, `AIGatewayRoute`) of a served Instance are decided with its phase, in
provider.topologies.llm.status.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from actors import Condition
from provider.model import kinds, names
from provider.model.settings import ProviderSettings
from provider.topologies.llm.gateway import DEFAULT_TOKENS_PER_HOUR, routed_models, token_limit_enforced
from provider.topologies.llm.inputs import COMPONENT, LlmInputs
from provider.topologies.llm.monitoring import metrics_wanted
from provider.topologies.llm.serviceaccount import hf_token_attached, hf_token_blocked
from provider.topologies.protocol import StatusInputs

HF_TOKEN: Final = "HuggingFaceToken"
METRICS: Final = "Metrics"
EXTERNAL_ACCESS: Final = "ExternalAccessReady"
AI_GATEWAY_ROUTE: Final = "AIGatewayRoute"
TOKEN_LIMIT: Final = "TokenLimit"
MODEL_ACCESS: Final = "ModelAccess"
KV_CACHE_SPACE: Final = "KVCacheSpace"

SUSPENDED_REASON: Final = "InstanceSuspended"
RESUME: Final = f"until {COMPONENT} replicas is set above 0"


def provider_conditions(inputs: LlmInputs, settings: ProviderSettings, status_inputs: StatusInputs) -> list[Condition]:
    """The conditions this provider adds beside KServe's: one per concern that applies."""
    found = (
        _hf_token_condition(inputs, settings),
        _model_access_condition(inputs, settings, status_inputs),
        _kv_cache_condition(inputs),
        _metrics_condition(inputs, settings, status_inputs),
        _token_limit_condition(inputs, settings),
    )
    return [c for c in found if c is not None]


def _hf_token_condition(inputs: LlmInputs, settings: ProviderSettings) -> Condition | None:
    if hf_token_attached(inputs, settings):
        return Condition(
            HF_TOKEN,
            "True",
            "Attached",
            f"The model pods run as ServiceAccount {names.model_puller_name(inputs.name)}, which carries "
            f'Secret "{settings.hf_token_secret_name}"',
        )
    if hf_token_blocked(inputs, settings):
        return Condition(
            HF_TOKEN,
            "False",
            "GatewayRoutingOwnsServiceAccount",
            f'The Hugging Face token Secret "{settings.hf_token_secret_name}" is not attached: with '
            "enableGatewayRouting KServe runs the model pods under a ServiceAccount it manages, so gated "
            "models cannot be downloaded. Use a public model, or turn enableGatewayRouting off.",
        )
    return None


def _model_access_condition(
    inputs: LlmInputs, settings: ProviderSettings, status_inputs: StatusInputs
) -> Condition | None:
    gated = next((m for m in status_inputs.catalogs.models if m.gated and m.uri == inputs.engine.model_uri), None)
    if gated is None or settings.hf_token_secret_name:
        return None
    # Without this the first sign of trouble is a 401 deep in the storage-initializer's log.
    return Condition(
        MODEL_ACCESS,
        "False",
        "HuggingFaceTokenMissing",
        f'Model "{gated.label}" ({gated.uri}) is gated in the model catalog, but the provider chart '
        "configures no Hugging Face token Secret (hfToken.secretName): its download will be refused",
    )


def _kv_cache_condition(inputs: LlmInputs) -> Condition | None:
    requested, used = inputs.engine.kv_cache_space_gi, inputs.engine.kv_cache_space
    if used is None or requested == used:
        return None
    # A warning, not a failure: the Go provider served with the raised value, and so do we.
    return Condition(
        KV_CACHE_SPACE,
        "False",
        "RaisedToMinimum",
        f"llmEngine.parameters.kvCacheSpaceGi is {requested}; vLLM runs with {used} GiB "
        f"(VLLM_CPU_KVCACHE_SPACE={used}). Set it to {used} or more, or leave it unset to size "
        "the cache from free memory.",
    )


def _metrics_condition(inputs: LlmInputs, settings: ProviderSettings, status_inputs: StatusInputs) -> Condition | None:
    if not metrics_wanted(inputs, settings):
        return None
    if kinds.POD_MONITOR in status_inputs.missing:
        return Condition(
            METRICS,
            "False",
            "PrometheusOperatorNotInstalled",
            f"PodMonitor {names.metrics_name(inputs.name)} is skipped: the cluster does not serve "
            "podmonitors.monitoring.coreos.com. It is created once the Prometheus Operator is installed.",
        )
    return Condition(METRICS, "True", "PodMonitorCreated", f"PodMonitor {names.metrics_name(inputs.name)}")


def _token_limit_condition(inputs: LlmInputs, settings: ProviderSettings) -> Condition | None:
    if not inputs.uses_ai_gateway or inputs.topology.token_limit_per_hour is None:
        return None
    if token_limit_enforced(inputs, settings):
        return Condition(
            TOKEN_LIMIT,
            "True",
            "Enforced",
            f"{inputs.topology.token_limit_per_hour} tokens per user and hour for each served model "
            f"(BackendTrafficPolicy {names.token_limit_name(inputs.name)})",
        )
    return Condition(
        TOKEN_LIMIT,
        "False",
        "RateLimitBackendNotConfigured",
        "tokenLimitPerHour is not enforced: the provider chart configures no rate-limit Redis for "
        "Envoy Gateway (envoy-gateway.config.envoyGateway.rateLimit.backend.redis.url)",
    )


# -- a suspended Instance ------------------------------------------------------------------------
#
# A suspension changes nothing but KServe's stop annotation on the LLMInferenceService
# (provider.topologies.suspension). KServe then deletes the workload, its Service and the
# InferencePool; the provider's own objects stay exactly as they were, and their conditions say what
# each does meanwhile, so that a route or a quota is not taken for a broken one.


def suspended_conditions(
    inputs: LlmInputs, settings: ProviderSettings, conditions: Sequence[Condition]
) -> list[Condition]:
    """`conditions` (the provider's own) as they read while the Instance is suspended."""
    out = [c for c in conditions if not (c.type == TOKEN_LIMIT and token_limit_enforced(inputs, settings))]
    if inputs.uses_ai_gateway:
        models = ", ".join(routed_models(inputs))
        out.append(
            Condition(
                AI_GATEWAY_ROUTE,
                "False",
                SUSPENDED_REASON,
                f"AIGatewayRoute {names.ai_gateway_route_name(inputs.name)} is kept unchanged while the Instance "
                f"is suspended, but KServe deleted InferencePool {names.inference_pool_name(inputs.name)} it "
                f"sends requests to: requests for {models} fail {RESUME}",
            )
        )
    if token_limit_enforced(inputs, settings):
        tokens = inputs.topology.token_limit_per_hour or DEFAULT_TOKENS_PER_HOUR
        out.append(
            Condition(
                TOKEN_LIMIT,
                "False",
                SUSPENDED_REASON,
                f"BackendTrafficPolicy {names.token_limit_name(inputs.name)} ({tokens} tokens per user and hour "
                "for each served model) is kept unchanged while the Instance is suspended; no request reaches "
                f"the model, so none is counted {RESUME}",
            )
        )
    if (kind := inputs.external_service_type) is not None:
        out.append(
            Condition(
                EXTERNAL_ACCESS,
                "False",
                SUSPENDED_REASON,
                f"{kind} Service {names.external_service_name(inputs.name)} is kept with its address while the "
                f"Instance is suspended; no pod answers behind it {RESUME}",
            )
        )
    return out
