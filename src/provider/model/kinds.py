"""The one table of the kinds the provider writes or reads, at the versions it writes them.

Storage versions throughout (kserve-schemas.md): LLMInferenceService(Config) `v1alpha2`,
InferenceService `v1beta1`, AIGatewayRoute `v1beta1` (v1alpha1 is deprecated in Envoy AI Gateway
1.0). Builders take apiVersion and kind from here, and the runtime matches objects to these by
(group, version, kind).
"""

from __future__ import annotations

from typing import Final

from actors import Resource

LLM_INFERENCE_SERVICE: Final = Resource("serving.kserve.io", "v1alpha2", "llminferenceservices", "LLMInferenceService")
LLM_INFERENCE_SERVICE_CONFIG: Final = Resource(
    "serving.kserve.io", "v1alpha2", "llminferenceserviceconfigs", "LLMInferenceServiceConfig"
)
INFERENCE_SERVICE: Final = Resource("serving.kserve.io", "v1beta1", "inferenceservices", "InferenceService")
SERVICE_ACCOUNT: Final = Resource("", "v1", "serviceaccounts", "ServiceAccount")
SERVICE: Final = Resource("", "v1", "services", "Service")
NODE: Final = Resource("", "v1", "nodes", "Node", namespaced=False)

# Read, never written: the shared Gateway (AI Gateway address), namespaces (Pod Security labels),
# the pods KServe runs for our Instances and the autoscalers it makes for them (status.components;
# label-selected).
GATEWAYS: Final = Resource("gateway.networking.k8s.io", "v1", "gateways", "Gateway")
NAMESPACES: Final = Resource("", "v1", "namespaces", "Namespace", namespaced=False)
PODS: Final = Resource("", "v1", "pods", "Pod")
HORIZONTAL_POD_AUTOSCALERS: Final = Resource("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler")

# Optional integrations: written only while their CRDs are served (`available`).
POD_MONITOR: Final = Resource("monitoring.coreos.com", "v1", "podmonitors", "PodMonitor")
AI_GATEWAY_ROUTE: Final = Resource("aigateway.envoyproxy.io", "v1beta1", "aigatewayroutes", "AIGatewayRoute")
BACKEND_TRAFFIC_POLICY: Final = Resource(
    "gateway.envoyproxy.io", "v1alpha1", "backendtrafficpolicies", "BackendTrafficPolicy"
)

# Everything the llm topology may create, in apply order: the ServiceAccount and the config before
# the LLMInferenceService that references them.
OWNED: Final[tuple[Resource, ...]] = (
    SERVICE_ACCOUNT,
    LLM_INFERENCE_SERVICE_CONFIG,
    LLM_INFERENCE_SERVICE,
    POD_MONITOR,
    SERVICE,
    AI_GATEWAY_ROUTE,
    BACKEND_TRAFFIC_POLICY,
)

# The optional integrations: written only while the API server serves them.
OPTIONAL: Final = frozenset({POD_MONITOR, AI_GATEWAY_ROUTE, BACKEND_TRAFFIC_POLICY})
