"""Status mapping of the llm topology: phase, message, conditions and connection details."""

from __future__ import annotations

from typing import Any

import pytest

from actors.interface import Condition, ConnectionDetails, KubeObject, Phase, StatusReport
from provider import kinds
from provider.connection import url_details
from provider.kserve_conditions import passthrough_conditions
from provider.llm.connection import gateway_details
from provider.llm.handler import LlmTopology
from provider.settings import ProviderSettings
from provider.topology import CatalogModel, Catalogs, StatusInputs

from .builders import GATEWAY_SETTINGS, instance, kserve_condition, llmisvc, settings

# Status follows the watched objects' events: no report asks for a poll (issue 18).
NO_POLL = None

IN_CLUSTER = ConnectionDetails(
    type="kserve",
    provider="provider-kserve",
    host="chat-kserve-workload-svc.models.svc.cluster.local",
    port="8000",
    uri="http://chat-kserve-workload-svc.models.svc.cluster.local:8000",
)
GATEWAY = settings(**GATEWAY_SETTINGS)


def status(
    *objects: KubeObject,
    engine: dict[str, Any] | None = None,
    settings_: ProviderSettings | None = None,
    inputs: StatusInputs | None = None,
    **kwargs: Any,
) -> StatusReport:
    by_kind = {r.kind: r for r in kinds.OWNED}  # the fixtures carry a kind, not always an apiVersion
    observed = {(by_kind[obj["kind"]], obj["metadata"]["name"]): obj for obj in objects}
    handler = LlmTopology(settings_ or settings())
    return handler.status(instance(engine, **kwargs), observed, inputs or StatusInputs())


def condition(report: StatusReport, type_: str) -> Condition:
    return next(c for c in report.conditions if c.type == type_)


def service(
    type_: str = "LoadBalancer", *, ingress: list[dict[str, Any]] | None = None, node_port: int = 0
) -> KubeObject:
    port: dict[str, Any] = {"name": "http", "port": 8000}
    if node_port:
        port["nodePort"] = node_port
    return {
        "kind": "Service",
        "metadata": {"name": "chat-external"},
        "spec": {"type": type_, "ports": [port]},
        "status": {"loadBalancer": {"ingress": ingress or []}},
    }


def route(*conditions: dict[str, Any], generation: int = 1) -> KubeObject:
    return {
        "kind": "AIGatewayRoute",
        "metadata": {"name": "chat-ai-gateway", "generation": generation},
        "status": {"conditions": list(conditions)},
    }


# -- basic phases ---------------------------------------------------------------------------------


def test_waiting_for_llm_inference_service() -> None:
    report = status()
    assert (report.phase, report.message, report.requeue_after) == (
        Phase.PROVISIONING,
        "Waiting for LLMInferenceService",
        NO_POLL,
    )
    assert report.connection is None


def test_not_ready_shows_kserve_message_and_conditions() -> None:
    report = status(llmisvc(ready=False))
    assert (report.phase, report.message) == (Phase.PROVISIONING, "Deployment does not have minimum availability.")
    assert condition(report, "KServeReady") == Condition(
        "KServeReady", "False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability."
    )
    assert [c.type for c in report.conditions] == [
        "KServePresetsCombined",
        "KServeWorkloadsReady",
        "KServeRouterReady",
        "KServeReady",
        "Metrics",
    ]
    assert report.requeue_after == NO_POLL


def test_no_conditions_yet() -> None:
    report = status(llmisvc(ready=None))
    assert (report.phase, report.message) == (Phase.PROVISIONING, "LLMInferenceService is being created")


def test_ready_reason_used_without_message() -> None:
    report = status(llmisvc(conditions=[kserve_condition("Ready", "False", "Stopped")]))
    assert report.message == "Stopped"


def test_ready_in_cluster() -> None:
    report = status(llmisvc())
    assert (report.phase, report.message, report.requeue_after) == (Phase.READY, "", None)
    assert report.connection == IN_CLUSTER
    assert condition(report, "KServeReady") == Condition("KServeReady", "True", "Ready", "")


@pytest.mark.parametrize("requested", [0, -4])
def test_kv_cache_space_below_one_is_a_warning_not_a_failure(requested: int) -> None:
    report = status(llmisvc(), engine={"computeProfile": "cpu", "kvCacheSpaceGi": requested})
    assert (report.phase, report.connection) == (Phase.READY, IN_CLUSTER)
    assert condition(report, "KVCacheSpace") == Condition(
        "KVCacheSpace",
        "False",
        "RaisedToMinimum",
        f"llmEngine.parameters.kvCacheSpaceGi is {requested}; vLLM runs with 1 GiB (VLLM_CPU_KVCACHE_SPACE=1). "
        "Set it to 1 or more, or leave it unset to size the cache from free memory.",
    )


@pytest.mark.parametrize("engine", [{"computeProfile": "cpu", "kvCacheSpaceGi": 1}, {"kvCacheSpaceGi": 0}, {}])
def test_no_kv_cache_warning_when_nothing_was_raised(engine: dict[str, Any]) -> None:
    """At least 1 is used as given; on GPU the value is ignored (vLLM sizes its cache itself)."""
    assert "KVCacheSpace" not in [c.type for c in status(llmisvc(), engine=engine).conditions]


def test_in_cluster_keeps_kserve_scheme() -> None:
    report = status(llmisvc(addresses=["https://chat-kserve-workload-svc.models.svc.cluster.local"]))
    assert report.connection is not None
    assert report.connection.uri == "https://chat-kserve-workload-svc.models.svc.cluster.local:8000"


def test_in_cluster_without_addresses_derives_the_service() -> None:
    assert status(llmisvc(addresses=[])).connection == IN_CLUSTER


def test_in_cluster_uses_the_reported_workload_service() -> None:
    obj = llmisvc(addresses=[])
    obj["status"]["workloads"] = {"service": {"kind": "Service", "name": "other-svc"}}
    report = status(obj)
    assert report.connection is not None
    assert report.connection.uri == "http://other-svc.models.svc.cluster.local:8000"


def test_gateway_routing_url() -> None:
    report = status(llmisvc(url="http://203.0.113.1/models/chat"), topology={"enableGatewayRouting": True})
    assert report.connection == ConnectionDetails(
        type="kserve", provider="provider-kserve", host="203.0.113.1", port="80", uri="http://203.0.113.1/models/chat"
    )


def test_stale_generation_is_not_ready() -> None:
    report = status(llmisvc(generation=3, observed_generation=2))
    assert (report.phase, report.message) == (
        Phase.PROVISIONING,
        "Waiting for KServe to reconcile the LLMInferenceService (generation 3, observed 2)",
    )


@pytest.mark.parametrize("type_", ["PresetsCombined", "Ready"])
def test_missing_config_is_failed(type_: str) -> None:
    obj = llmisvc(
        conditions=[kserve_condition(type_, "False", "ConfigNotFound", 'config "kserve-config-llm-cpu" not found')]
    )
    report = status(obj)
    assert report.phase == Phase.FAILED
    assert report.message == (
        'KServe cannot combine the LLMInferenceService configuration (ConfigNotFound: config "kserve-config-llm-cpu" '
        "not found); check llmEngine.parameters.baseRefs and that the provider chart installed KServe's presets "
        "(llmPresets.enabled, cpuProfile.enabled for computeProfile cpu)"
    )
    assert report.requeue_after == NO_POLL


def test_rejected_config_is_failed() -> None:
    obj = llmisvc(conditions=[kserve_condition("PresetsCombined", "False", "InvalidRenderedConfig")])
    report = status(obj)
    assert (report.phase, report.message) == (
        Phase.FAILED,
        "KServe cannot combine the LLMInferenceService configuration (InvalidRenderedConfig); check "
        "llmEngine.parameters.config and the configs in baseRefs",
    )


def test_kserve_not_installed() -> None:
    report = status(inputs=StatusInputs(missing=frozenset({kinds.LLM_INFERENCE_SERVICE})))
    assert report.phase == Phase.FAILED
    assert report.message == (
        "KServe is not installed: the cluster does not serve llminferenceservices.serving.kserve.io "
        "(the provider chart ships them in crds/: run `make vendor-kserve-crds` before packaging it, "
            "or install KServe's CRD charts)"
    )


def test_invalid_instance_at_status_time() -> None:
    # e.g. the chart turned the AI Gateway off under an Instance that uses it
    report = status(llmisvc(), topology={"externalAccess": "EnvoyAIGateway"})
    assert (report.phase, report.message) == (
        Phase.FAILED,
        "externalAccess EnvoyAIGateway requires aiGateway.enabled in the provider chart",
    )


# -- external access ------------------------------------------------------------------------------


def test_load_balancer_pending_is_ready_in_cluster_with_condition() -> None:
    report = status(llmisvc(), service(), topology={"externalAccess": "LoadBalancer"})
    assert (report.phase, report.connection, report.requeue_after) == (Phase.READY, IN_CLUSTER, NO_POLL)
    assert condition(report, "ExternalAccessReady") == Condition(
        "ExternalAccessReady",
        "False",
        "LoadBalancerPending",
        "Waiting for the load balancer to assign an address to Service chat-external; "
        "in-cluster: http://chat-kserve-workload-svc.models.svc.cluster.local:8000",
    )


def test_load_balancer_address() -> None:
    report = status(
        llmisvc(),
        service(ingress=[{"hostname": "lb.example"}, {"ip": "203.0.113.9"}]),
        topology={"externalAccess": "LoadBalancer"},
    )
    assert report.connection == ConnectionDetails(
        type="kserve", provider="provider-kserve", host="203.0.113.9", port="8000", uri="http://203.0.113.9:8000"
    )
    assert condition(report, "ExternalAccessReady") == Condition(
        "ExternalAccessReady", "True", "Assigned", "LoadBalancer endpoint http://203.0.113.9:8000"
    )
    assert report.requeue_after is None


def test_load_balancer_hostname_and_ipv6() -> None:
    by_name = status(
        llmisvc(), service(ingress=[{"hostname": "lb.example"}]), topology={"externalAccess": "LoadBalancer"}
    )
    assert by_name.connection is not None and by_name.connection.uri == "http://lb.example:8000"
    v6 = status(llmisvc(), service(ingress=[{"ip": "2001:db8::5"}]), topology={"externalAccess": "LoadBalancer"})
    assert v6.connection is not None
    assert (v6.connection.host, v6.connection.uri) == ("2001:db8::5", "http://[2001:db8::5]:8000")


def test_node_port() -> None:
    report = status(
        llmisvc(),
        service("NodePort", node_port=31234),
        component={"service": {"serviceType": "NodePort"}},
        inputs=StatusInputs(node_addresses=("198.51.100.7", "10.0.0.7")),
    )
    assert report.connection == ConnectionDetails(
        type="kserve", provider="provider-kserve", host="198.51.100.7", port="31234", uri="http://198.51.100.7:31234"
    )


def test_node_port_without_nodes_waits() -> None:
    report = status(llmisvc(), service("NodePort", node_port=31234), topology={"externalAccess": "NodePort"})
    assert report.phase == Phase.READY
    assert report.connection == IN_CLUSTER
    assert condition(report, "ExternalAccessReady").reason == "NodePortPending"


def test_external_access_not_ready_yet() -> None:
    report = status(llmisvc(ready=False), service(), topology={"externalAccess": "LoadBalancer"})
    assert report.phase == Phase.PROVISIONING
    assert "ExternalAccessReady" not in [c.type for c in report.conditions]


# -- AI Gateway -----------------------------------------------------------------------------------

AI = {"externalAccess": "EnvoyAIGateway"}
BASE_URL = StatusInputs(gateway_base_url="http://203.0.113.50")


def test_gateway_waits_for_route() -> None:
    report = status(llmisvc(), settings_=GATEWAY, topology=AI, inputs=BASE_URL)
    assert (report.phase, report.message) == (Phase.PROVISIONING, "Waiting for Envoy AI Gateway route")


def test_gateway_route_rejected() -> None:
    rejected = route({"type": "NotAccepted", "status": "True", "reason": "Error", "message": "backend not found"})
    report = status(llmisvc(), rejected, settings_=GATEWAY, topology=AI, inputs=BASE_URL)
    assert (report.phase, report.message) == (
        Phase.PROVISIONING,
        "Envoy AI Gateway rejected route chat-ai-gateway: backend not found",
    )
    assert condition(report, "AIGatewayRoute").status == "False"


def test_gateway_route_acceptance_of_an_older_generation() -> None:
    stale = route({"type": "Accepted", "status": "True", "observedGeneration": 1}, generation=2)
    report = status(llmisvc(), stale, settings_=GATEWAY, topology=AI, inputs=BASE_URL)
    assert report.message == "Waiting for Envoy AI Gateway route acceptance"


def test_gateway_waits_for_address() -> None:
    accepted = route({"type": "Accepted", "status": "True"})
    report = status(llmisvc(), accepted, settings_=GATEWAY, topology=AI)
    assert (report.phase, report.message) == (Phase.PROVISIONING, "Waiting for Envoy AI Gateway address")


def test_gateway_ready() -> None:
    accepted = route({"type": "Accepted", "status": "True"})
    report = status(llmisvc(), accepted, settings_=GATEWAY, topology=AI, inputs=BASE_URL)
    assert report.phase == Phase.READY
    assert report.connection == ConnectionDetails(
        type="kserve-ai-gateway", provider="provider-kserve", host="203.0.113.50", port="80", uri="http://203.0.113.50"
    )
    assert condition(report, "AIGatewayRoute") == Condition(
        "AIGatewayRoute", "True", "Accepted", "Envoy AI Gateway accepted route chat-ai-gateway"
    )


def waiting_for_gateway() -> KubeObject:
    return llmisvc(
        conditions=[
            kserve_condition("PresetsCombined", "True"),
            kserve_condition("WorkloadsReady", "True"),
            kserve_condition("InferencePoolReady", "False", "WaitingForGateway", "no parent Gateway accepted the pool"),
            kserve_condition("RouterReady", "False", "WaitingForGateway", "no parent Gateway accepted the pool"),
            kserve_condition("Ready", "False", "RouterNotReady", "no parent Gateway accepted the pool"),
        ]
    )


def test_waiting_for_gateway_explained_when_ai_gateway_accepted_the_route() -> None:
    accepted = route({"type": "Accepted", "status": "True"})
    report = status(waiting_for_gateway(), accepted, settings_=GATEWAY, topology=AI, inputs=BASE_URL)
    assert report.phase == Phase.READY
    assert condition(report, "KServeReady").status == "False"
    assert condition(report, "AIGatewayRoute") == Condition(
        "AIGatewayRoute",
        "True",
        "Accepted",
        "Envoy AI Gateway accepted route chat-ai-gateway; KServe's Ready stays False with WaitingForGateway because "
        "it waits for a Gateway of its own to adopt InferencePool chat-inference-pool, which the AI Gateway route "
        "serves instead. The model is serving.",
    )


def test_waiting_for_gateway_without_accepted_route_is_provisioning() -> None:
    report = status(waiting_for_gateway(), settings_=GATEWAY, topology=AI, inputs=BASE_URL)
    assert (report.phase, report.message) == (Phase.PROVISIONING, "no parent Gateway accepted the pool")


def test_waiting_for_gateway_with_unready_workloads_is_provisioning() -> None:
    obj = waiting_for_gateway()
    obj["status"]["conditions"][1] = kserve_condition("WorkloadsReady", "False", "ProgressDeadlineExceeded")
    accepted = route({"type": "Accepted", "status": "True"})
    assert status(obj, accepted, settings_=GATEWAY, topology=AI, inputs=BASE_URL).phase == Phase.PROVISIONING


def test_gateway_crd_missing() -> None:
    inputs = StatusInputs(gateway_base_url="http://gw", missing=frozenset({kinds.AI_GATEWAY_ROUTE}))
    report = status(llmisvc(), settings_=GATEWAY, topology=AI, inputs=inputs)
    assert (report.phase, report.message) == (
        Phase.PROVISIONING,
        "Waiting for the Envoy AI Gateway: the cluster does not serve aigatewayroutes.aigateway.envoyproxy.io "
        "(install the provider chart with aiGateway.enabled)",
    )


# -- provider conditions --------------------------------------------------------------------------


def test_hf_token_attached_condition() -> None:
    report = status(llmisvc(), settings_=settings(hf_token_secret_name="hf-token"))
    assert condition(report, "HuggingFaceToken") == Condition(
        "HuggingFaceToken",
        "True",
        "Attached",
        'The model pods run as ServiceAccount chat-model-puller, which carries Secret "hf-token"',
    )


def test_hf_token_blocked_by_gateway_routing_is_reported() -> None:
    report = status(
        llmisvc(), settings_=settings(hf_token_secret_name="hf-token"), topology={"enableGatewayRouting": True}
    )
    assert condition(report, "HuggingFaceToken") == Condition(
        "HuggingFaceToken",
        "False",
        "GatewayRoutingOwnsServiceAccount",
        'The Hugging Face token Secret "hf-token" is not attached: with enableGatewayRouting KServe runs the model '
        "pods under a ServiceAccount it manages, so gated models cannot be downloaded. Use a public model, or turn "
        "enableGatewayRouting off.",
    )


def test_no_hf_token_condition_without_token() -> None:
    assert "HuggingFaceToken" not in [c.type for c in status(llmisvc()).conditions]


def test_metrics_skipped_without_prometheus_operator() -> None:
    report = status(llmisvc(), inputs=StatusInputs(missing=frozenset({kinds.POD_MONITOR})))
    assert report.phase == Phase.READY
    assert condition(report, "Metrics") == Condition(
        "Metrics",
        "False",
        "PrometheusOperatorNotInstalled",
        "PodMonitor chat-metrics is skipped: the cluster does not serve podmonitors.monitoring.coreos.com. "
        "It is created once the Prometheus Operator is installed.",
    )


def test_metrics_condition_absent_when_disabled() -> None:
    assert "Metrics" not in [c.type for c in status(llmisvc(), topology={"enableMetrics": False}).conditions]


def test_token_limit_not_enforced_without_redis() -> None:
    accepted = route({"type": "Accepted", "status": "True"})
    report = status(llmisvc(), accepted, settings_=GATEWAY, topology={**AI, "tokenLimitPerHour": 500}, inputs=BASE_URL)
    assert condition(report, "TokenLimit") == Condition(
        "TokenLimit",
        "False",
        "RateLimitBackendNotConfigured",
        "tokenLimitPerHour is not enforced: the provider chart configures no rate-limit Redis for Envoy Gateway "
        "(envoy-gateway.config.envoyGateway.rateLimit.backend.redis.url)",
    )


def test_token_limit_enforced() -> None:
    report = status(
        llmisvc(),
        settings_=settings(**GATEWAY_SETTINGS, ai_gateway_rate_limit_redis_url="redis:6379"),
        topology={**AI, "tokenLimitPerHour": 500},
    )
    assert condition(report, "TokenLimit") == Condition(
        "TokenLimit",
        "True",
        "Enforced",
        "500 tokens per user and hour for each served model (BackendTrafficPolicy chat-token-limit)",
    )


# -- pieces ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "status_", "reason"),
    [
        ("MinimumReplicasUnavailable", "False", "MinimumReplicasUnavailable"),
        ("", "False", "NotReady"),
        ("", "True", "Ready"),
        (None, "Unknown", "Unknown"),
        ("config not found", "False", "ConfigNotFound"),
        ("123", "False", "NotReady"),
    ],
)
def test_condition_reasons_are_valid(raw: str | None, status_: str, reason: str) -> None:
    obj = llmisvc(ready=None, conditions=[{"type": "Ready", "status": status_, "reason": raw}])
    assert passthrough_conditions(obj)[0].reason == reason


def test_unknown_condition_status_becomes_unknown() -> None:
    obj = llmisvc(ready=None, conditions=[{"type": "Ready", "status": "Maybe"}])
    assert passthrough_conditions(obj)[0] == Condition("KServeReady", "Unknown", "Unknown", "")


@pytest.mark.parametrize(
    ("url", "host", "port", "uri"),
    [
        ("https://gw.example", "gw.example", "443", "https://gw.example"),
        ("http://gw.example:8080/", "gw.example", "8080", "http://gw.example:8080"),
        ("http://[2001:db8::1]:8080", "2001:db8::1", "8080", "http://[2001:db8::1]:8080"),
        ("https://llm.example.com:8443/v1", "llm.example.com", "8443", "https://llm.example.com:8443"),
    ],
)
def test_gateway_details(url: str, host: str, port: str, uri: str) -> None:
    details = gateway_details(url)
    assert details is not None
    assert (details.type, details.host, details.port, details.uri) == ("kserve-ai-gateway", host, port, uri)


@pytest.mark.parametrize("url", ["", "not a url", "ftp://x/y", "http://"])
def test_unusable_urls(url: str) -> None:
    assert url_details(url) is None


def test_gated_catalog_model_without_hf_token_is_reported() -> None:
    gated = Catalogs(models=(CatalogModel("Llama 3.1 8B", "hf://meta-llama/Llama-3.1-8B-Instruct", gated=True),))
    engine = {"modelURI": "hf://meta-llama/Llama-3.1-8B-Instruct"}
    report = status(llmisvc(), engine=engine, inputs=StatusInputs(catalogs=gated))
    assert condition(report, "ModelAccess") == Condition(
        "ModelAccess",
        "False",
        "HuggingFaceTokenMissing",
        'Model "Llama 3.1 8B" (hf://meta-llama/Llama-3.1-8B-Instruct) is gated in the model catalog, but the '
        "provider chart configures no Hugging Face token Secret (hfToken.secretName): its download will be refused",
    )
    with_token = status(
        llmisvc(), engine=engine, inputs=StatusInputs(catalogs=gated), settings_=settings(hf_token_secret_name="hf")
    )
    assert all(c.type != "ModelAccess" for c in with_token.conditions)
    ungated = Catalogs(models=(CatalogModel("Llama", "hf://meta-llama/Llama-3.1-8B-Instruct", gated=False),))
    assert all(
        c.type != "ModelAccess"
        for c in status(llmisvc(), engine=engine, inputs=StatusInputs(catalogs=ungated)).conditions
    )
