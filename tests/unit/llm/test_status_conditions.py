"""The provider's own conditions on llm status: HF token, model access, metrics, token limits."""

from __future__ import annotations

from actors.interface import Condition, Phase
from provider.model import kinds
from provider.model.catalog import CatalogModel, Catalogs
from provider.topologies.protocol import StatusInputs
from tests.support.kserve_objects import llmisvc
from tests.support.llm_status import AI, BASE_URL, GATEWAY, condition, route, status
from tests.support.llm_topology import GATEWAY_SETTINGS, settings

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
