"""The Envoy AI Gateway objects of an Instance with externalAccess EnvoyAIGateway.

- AIGatewayRoute `<instance>-ai-gateway` (aigateway.envoyproxy.io/v1beta1, the storage version) on
  the chart's shared Gateway, routing the served model name to KServe's InferencePool
  `<instance>-inference-pool` (which exists because the scheduler preset is among the baseRefs).
  LoRA adapter names are routed too (the Go provider matched only the base name, §10.24).
- BackendTrafficPolicy `<instance>-token-limit` (gateway.envoyproxy.io/v1alpha1) with an hourly
  token quota per user and per served model, only when the chart configured Envoy Gateway's
  rate-limit Redis: without it the quota would not be enforced. It targets the HTTPRoute the AI
  Gateway generates with the route's name, so it only ever sees this Instance's requests. One rule
  per served model (the base model and each LoRA adapter) selects that model's `x-ai-eg-model`
  header exactly and counts each distinct `x-user-id` separately, as the Go provider's README
  promises: a user who spends the base model's quota still has each adapter's. The deprecated
  `rateLimit.type` is omitted.

Plus `route_state`, the route's acceptance as status mapping needs it.
"""

from __future__ import annotations

from typing import Any, Final

from actors import KubeObject
from provider.model import kinds, names
from provider.model.settings import ProviderSettings
from provider.rules.quote import quote
from provider.topologies.llm.inputs import LlmInputs

MODEL_HEADER: Final = "x-ai-eg-model"
USER_HEADER: Final = "x-user-id"
REQUEST_TIMEOUT: Final = "60s"
DEFAULT_TOKENS_PER_HOUR: Final = 1000
# The AI Gateway writes token counts into Envoy dynamic metadata under this namespace.
COST_NAMESPACE: Final = "io.envoy.ai_gateway"
TOTAL_TOKEN_KEY: Final = "llm_total_token"

# What the CRDs take (aigateway.envoyproxy.io/v1beta1 AIGatewayRoute; gateway.envoyproxy.io/v1alpha1
# BackendTrafficPolicy): a route rule holds at most 128 matches, whose header values are at most
# 4096 characters; a policy's client selector header values are at most 1024.
ROUTE_MATCHES_MAX: Final = 128
ROUTE_HEADER_VALUE_MAX: Final = 4096
POLICY_HEADER_VALUE_MAX: Final = 1024

WAITING_ROUTE: Final = "Waiting for Envoy AI Gateway route"
WAITING_ACCEPTANCE: Final = "Waiting for Envoy AI Gateway route acceptance"


def routed_models(inputs: LlmInputs) -> list[str]:
    return [inputs.served_model_name, *(a.name for a in inputs.adapters)]


def route_problem(inputs: LlmInputs, settings: ProviderSettings) -> str | None:
    """Why the route or the quota policy of this Instance would not fit their CRDs, or None: the
    API server would refuse them (422) on every apply, far from the field the user wrote."""
    if not inputs.uses_ai_gateway:
        return None
    models = routed_models(inputs)
    if len(models) > ROUTE_MATCHES_MAX:
        return (
            f"externalAccess EnvoyAIGateway routes at most {ROUTE_MATCHES_MAX} models (the base model and "
            f"{ROUTE_MATCHES_MAX - 1} LoRA adapters); this Instance serves {len(models)}"
        )
    limit, what = (
        (POLICY_HEADER_VALUE_MAX, "token limit policy")
        if token_limit_enforced(inputs, settings)
        else (ROUTE_HEADER_VALUE_MAX, "AI Gateway route")
    )
    for model in models:
        if len(model) > limit:
            return (
                f"the served model or adapter name {quote(model)} is {len(model)} characters long; "
                f"the {what} matches names of at most {limit}"
            )
    return None


def ai_gateway_route(inputs: LlmInputs, settings: ProviderSettings) -> KubeObject | None:
    if not inputs.uses_ai_gateway:
        return None
    rule: dict[str, Any] = {
        # Matches are ORed: one per model name the pool serves.
        "matches": [{"headers": [{"type": "Exact", "name": MODEL_HEADER, "value": m}]} for m in routed_models(inputs)],
        "backendRefs": [
            {
                "group": "inference.networking.k8s.io",
                "kind": "InferencePool",
                "name": names.inference_pool_name(inputs.name),
            }
        ],
        "timeouts": {"request": REQUEST_TIMEOUT},
    }
    return {
        "apiVersion": kinds.AI_GATEWAY_ROUTE.api_version,
        "kind": kinds.AI_GATEWAY_ROUTE.kind,
        "metadata": {"name": names.ai_gateway_route_name(inputs.name)},
        "spec": {
            "parentRefs": [
                {
                    "name": settings.ai_gateway_name,
                    "namespace": settings.ai_gateway_namespace,
                    "kind": "Gateway",
                    "group": "gateway.networking.k8s.io",
                }
            ],
            "rules": [rule],
            "llmRequestCosts": [
                {"metadataKey": "llm_input_token", "type": "InputToken"},
                {"metadataKey": "llm_output_token", "type": "OutputToken"},
                {"metadataKey": TOTAL_TOKEN_KEY, "type": "TotalToken"},
            ],
        },
    }


def token_limit_enforced(inputs: LlmInputs, settings: ProviderSettings) -> bool:
    return inputs.uses_ai_gateway and bool(settings.ai_gateway_rate_limit_redis_url)


def token_limit_policy(inputs: LlmInputs, settings: ProviderSettings) -> KubeObject | None:
    if not token_limit_enforced(inputs, settings):
        return None
    tokens = inputs.topology.token_limit_per_hour or DEFAULT_TOKENS_PER_HOUR
    rules = [_token_limit_rule(model, tokens) for model in routed_models(inputs)]
    return {
        "apiVersion": kinds.BACKEND_TRAFFIC_POLICY.api_version,
        "kind": kinds.BACKEND_TRAFFIC_POLICY.kind,
        "metadata": {"name": names.token_limit_name(inputs.name)},
        "spec": {
            "targetRefs": [
                {
                    "group": "gateway.networking.k8s.io",
                    "kind": "HTTPRoute",
                    "name": names.ai_gateway_route_name(inputs.name),
                }
            ],
            "rateLimit": {"global": {"rules": rules}},
        },
    }


def _token_limit_rule(model: str, tokens: int) -> dict[str, Any]:
    """`tokens` per hour for each user of `model`: the headers of one selector are ANDed, the
    Distinct one gives every user value its own counter."""
    return {
        "clientSelectors": [
            {
                "headers": [
                    {"name": USER_HEADER, "type": "Distinct"},
                    {"name": MODEL_HEADER, "type": "Exact", "value": model},
                ]
            }
        ],
        "limit": {"requests": tokens, "unit": "Hour"},
        # Charge nothing per request, and the total tokens per response.
        "cost": {
            "request": {"from": "Number", "number": 0},
            "response": {
                "from": "Metadata",
                "metadata": {"namespace": COST_NAMESPACE, "key": TOTAL_TOKEN_KEY},
            },
        },
    }


def gateway_objects(inputs: LlmInputs, settings: ProviderSettings) -> list[KubeObject]:
    return [obj for obj in (ai_gateway_route(inputs, settings), token_limit_policy(inputs, settings)) if obj]


def route_state(route: KubeObject | None) -> tuple[bool, str]:
    """(accepted, why not). Envoy AI Gateway 1.0 reports `Accepted` or `NotAccepted`; a condition
    older than the route's generation does not count yet."""
    if route is None:
        return False, WAITING_ROUTE
    generation = (route.get("metadata") or {}).get("generation")
    conditions = [c for c in (route.get("status") or {}).get("conditions") or [] if isinstance(c, dict)]
    if not conditions:
        return False, WAITING_ROUTE
    for cond in conditions:
        observed = cond.get("observedGeneration")
        if isinstance(generation, int) and isinstance(observed, int) and observed < generation:
            continue
        kind, status, message = cond.get("type"), cond.get("status"), str(cond.get("message") or "")
        if kind == "Accepted" and status == "True":
            return True, ""
        if (kind == "Accepted" and status == "False") or (kind == "NotAccepted" and status == "True"):
            name = (route.get("metadata") or {}).get("name", "")
            return False, f"Envoy AI Gateway rejected route {name}: {message or cond.get('reason') or 'not accepted'}"
    return False, WAITING_ACCEPTANCE
