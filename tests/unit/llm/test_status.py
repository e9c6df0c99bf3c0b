"""Status mapping of the llm topology: phase, message, KServe conditions and in-cluster connection details."""

from __future__ import annotations

from typing import Any

import pytest

from actors.interface import Condition, ConnectionDetails, Phase, ValidationFailed
from provider.model import kinds
from provider.topologies.kserve_conditions import passthrough_conditions
from provider.topologies.llm.connection_details import gateway_details
from provider.topologies.protocol import StatusInputs
from provider.topologies.urls import url_details
from tests.support.kserve_objects import kserve_condition, llmisvc
from tests.support.llm_status import IN_CLUSTER, NO_POLL, condition, status

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


def test_an_instance_the_chart_no_longer_allows_fails_before_status() -> None:
    # e.g. the chart turned the AI Gateway off under an Instance that uses it: the pass's Validate
    # step refuses it (the runtime writes Failed with the message), so no status mapping runs
    with pytest.raises(ValidationFailed) as info:
        status(llmisvc(), topology={"externalAccess": "EnvoyAIGateway"})
    assert info.value.message == "externalAccess EnvoyAIGateway requires aiGateway.enabled in the provider chart"


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
