"""Suspend and resume of an llm Instance: `llmEngine.replicas: 0` becomes KServe's stop annotation and
nothing else, and the status says Suspending, Suspended, Resuming and what the kept objects do."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from actors.interface import KubeObject, Phase
from provider.model import kinds
from provider.topologies.llm import own_conditions
from provider.topologies.suspension import STOP_ANNOTATION
from tests.support.kserve_objects import kserve_condition, llmisvc
from tests.support.llm_status import AI, BASE_URL, GATEWAY, IN_CLUSTER, condition, route, status
from tests.support.llm_topology import GATEWAY_SETTINGS, desired, settings

QUOTA = settings(**GATEWAY_SETTINGS, ai_gateway_rate_limit_redis_url="redis:6379", hf_token_secret_name="hf-token")
SUSPENDED = {"replicas": 0}
# Everything the llm topology can make for one Instance: the route, the quota, the PodMonitor, the
# model-puller ServiceAccount and the inline config.
EVERYTHING: dict[str, Any] = {
    "settings_": QUOTA,
    "topology": {**AI, "tokenLimitPerHour": 500},
    "engine": {"config": "template:\n  containers:\n    - name: main\n      args: [--enforce-eager]\n"},
}


def stopped(obj: KubeObject, *, annotated: bool = True) -> KubeObject:
    """`obj` as KServe leaves it once it has stopped it (single node: MainWorkloadReady Stopped)."""
    out = copy.deepcopy(obj)
    if annotated:
        out["metadata"]["annotations"] = {STOP_ANNOTATION: "true"}
    words = "Service is stopped"
    out["status"]["conditions"] = [
        kserve_condition("PresetsCombined", "True"),
        kserve_condition("MainWorkloadReady", "False", "Stopped", words),
        kserve_condition("WorkloadsReady", "False", "Stopped", words),
        kserve_condition("RouterReady", "False", "Stopped", words),
        kserve_condition("Ready", "False", "Stopped", words),
    ]
    out["status"].pop("addresses", None)
    return out


def annotated(obj: KubeObject) -> KubeObject:
    out = copy.deepcopy(obj)
    out["metadata"]["annotations"] = {STOP_ANNOTATION: "true"}
    return out


# -- what is applied --------------------------------------------------------------------------------


def test_replicas_zero_is_the_stop_annotation_not_zero_replicas() -> None:
    obj = desired(component=SUSPENDED)["LLMInferenceService"]
    assert obj["metadata"]["annotations"] == {STOP_ANNOTATION: "true"}
    assert "replicas" not in obj["spec"]  # created stopped: nothing stands yet


def test_a_suspension_keeps_the_replicas_the_object_stands_with() -> None:
    live = {"spec": {"replicas": 3}}

    def lookup(resource: Any, name: str) -> KubeObject | None:
        return live if (resource, name) == (kinds.LLM_INFERENCE_SERVICE, "chat") else None

    assert desired(component=SUSPENDED, live=lookup)["LLMInferenceService"]["spec"]["replicas"] == 3
    # Serving, the Instance's count is what counts.
    assert desired(component={"replicas": 2}, live=lookup)["LLMInferenceService"]["spec"]["replicas"] == 2


def test_nothing_but_the_stop_annotation_changes() -> None:
    live = {"spec": {"replicas": 2}}
    serving = desired(component={"replicas": 2}, **EVERYTHING)
    suspended = desired(component=SUSPENDED, live=lambda resource, name: live, **EVERYTHING)
    assert sorted(serving) == sorted(suspended) == [
        "AIGatewayRoute", "BackendTrafficPolicy", "LLMInferenceService", "LLMInferenceServiceConfig", "PodMonitor",
        "ServiceAccount",
    ]  # fmt: skip
    for kind, obj in serving.items():
        if kind != "LLMInferenceService":
            assert suspended[kind] == obj, kind
    stopped_llmisvc = copy.deepcopy(suspended["LLMInferenceService"])
    assert stopped_llmisvc["metadata"].pop("annotations") == {STOP_ANNOTATION: "true"}
    assert stopped_llmisvc == serving["LLMInferenceService"]


def test_prefill_pods_are_stopped_with_the_rest_and_keep_their_count() -> None:
    topology = {"enablePrefill": True, "prefillReplicas": 2}
    spec = desired(component=SUSPENDED, topology=topology)["LLMInferenceService"]["spec"]
    assert spec["prefill"]["replicas"] == 2


# -- what status says -------------------------------------------------------------------------------


@pytest.mark.parametrize("phase", ["Ready", "Provisioning", "Updating", None])
def test_suspending_until_kserve_stops_it_then_suspended(phase: str | None) -> None:
    report = status(annotated(llmisvc()), component=SUSPENDED, phase=phase)
    assert (report.phase, report.message) == (
        Phase.SUSPENDING,
        "Waiting for KServe to stop the LLMInferenceService",
    )
    assert report.connection is None
    pending = status(annotated(llmisvc(ready=False)), component=SUSPENDED, phase=phase)
    assert pending.message.endswith("(it says: Deployment does not have minimum availability.)")
    report = status(stopped(llmisvc()), component=SUSPENDED, phase=phase)
    assert report.phase is Phase.SUSPENDED
    assert "so KServe stopped the LLMInferenceService and deleted its pods" in report.message
    assert report.connection is None
    assert condition(report, "KServeMainWorkloadReady").reason == "Stopped"


def test_not_created_yet_is_suspending() -> None:
    assert status(component=SUSPENDED).phase is Phase.SUSPENDING


def test_resuming_until_kserve_reports_ready_again() -> None:
    report = status(stopped(llmisvc(), annotated=False), phase="Suspended")
    assert (report.phase, report.message) == (
        Phase.RESUMING,
        "KServe still reports the LLMInferenceService stopped",
    )
    report = status(llmisvc(ready=False), phase="Resuming")
    assert (report.phase, report.message) == (
        Phase.RESUMING,
        "Deployment does not have minimum availability.",
    )
    report = status(llmisvc(), phase="Resuming")
    assert (report.phase, report.connection) == (Phase.READY, IN_CLUSTER)


def test_the_kept_route_quota_and_service_say_the_instance_is_suspended() -> None:
    kept = [route(kserve_condition("Accepted", "True")), {"kind": "Service", "metadata": {"name": "chat-external"}}]
    report = status(stopped(llmisvc()), *kept[:1], component=SUSPENDED, inputs=BASE_URL, **EVERYTHING)
    assert report.phase is Phase.SUSPENDED
    assert condition(report, own_conditions.AI_GATEWAY_ROUTE).reason == "InstanceSuspended"
    assert condition(report, own_conditions.AI_GATEWAY_ROUTE).message == (
        "AIGatewayRoute chat-ai-gateway is kept unchanged while the Instance is suspended, but KServe deleted "
        "InferencePool chat-inference-pool it sends requests to: requests for chat fail until llmEngine replicas "
        "is set above 0"
    )
    quota = condition(report, own_conditions.TOKEN_LIMIT)
    assert (quota.status, quota.reason) == ("False", "InstanceSuspended")
    assert quota.message.startswith("BackendTrafficPolicy chat-token-limit (500 tokens per user and hour")
    assert [c.type for c in report.conditions].count(own_conditions.TOKEN_LIMIT) == 1
    assert condition(report, own_conditions.HF_TOKEN).reason == "Attached"  # the others are as they were
    # A LoadBalancer keeps its address, with no pods behind it.
    balanced = status(stopped(llmisvc()), kept[1], component=SUSPENDED, topology={"externalAccess": "LoadBalancer"})
    external = condition(balanced, own_conditions.EXTERNAL_ACCESS)
    assert (external.status, external.reason) == ("False", "InstanceSuspended")
    assert external.message.startswith("LoadBalancer Service chat-external is kept with its address")


def test_a_quota_the_gateway_does_not_enforce_still_says_so_when_suspended() -> None:
    report = status(stopped(llmisvc()), component=SUSPENDED, settings_=GATEWAY, topology={**AI, "tokenLimitPerHour": 5})
    assert condition(report, own_conditions.TOKEN_LIMIT).reason == "RateLimitBackendNotConfigured"


# -- updating ---------------------------------------------------------------------------------------


def test_an_edit_of_a_ready_instance_is_updating_until_kserve_reports_it_ready() -> None:
    edited = llmisvc(generation=2, observed_generation=1)
    waiting = "Waiting for KServe to reconcile the LLMInferenceService (generation 2, observed 1)"
    report = status(edited, phase="Ready")
    assert (report.phase, report.message) == (Phase.UPDATING, f"{waiting}; the previous generation serves")
    assert report.connection == IN_CLUSTER
    rolling = status(llmisvc(generation=2, observed_generation=2, ready=False), phase="Updating")
    assert (rolling.phase, rolling.message) == (
        Phase.UPDATING,
        "KServe rolls out the LLMInferenceService: Deployment does not have minimum availability.",
    )
    done = status(llmisvc(generation=2, observed_generation=2), phase="Updating")
    assert (done.phase, done.connection) == (Phase.READY, IN_CLUSTER)
    # Before the first Ready an edit is still Provisioning.
    assert status(edited, phase="Provisioning").phase is Phase.PROVISIONING


def test_an_edit_kserve_cannot_combine_is_failed() -> None:
    broken = llmisvc(
        generation=2,
        observed_generation=2,
        conditions=[kserve_condition("PresetsCombined", "False", "ConfigNotFound", "no such config")],
    )
    assert status(broken, phase="Updating").phase is Phase.FAILED
