"""Status of the llm topology behind the Envoy AI Gateway: route acceptance, gateway address, CRDs."""

from __future__ import annotations

from actors.interface import Condition, ConnectionDetails, KubeObject, Phase
from provider.model import kinds
from provider.topologies.protocol import StatusInputs
from tests.support.kserve_objects import kserve_condition, llmisvc
from tests.support.llm_status import AI, BASE_URL, GATEWAY, condition, route, status

# -- AI Gateway -----------------------------------------------------------------------------------


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
