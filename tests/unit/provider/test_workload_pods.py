"""status.components: the pods KServe runs for an Instance, read from their labels, counted per
component, and the Instance woken only when what its status shows changed."""

from __future__ import annotations

from typing import Any

from actors import ComponentStatus, Phase, StatusReport
from provider.component_status import PODS_CANNOT_START, component_state, component_statuses, held_back
from provider.shared_actors.workload_pods import (
    DETAIL_LENGTH,
    LABEL_COMPONENT,
    LABEL_INSTANCE,
    SELECTOR,
    ComponentPods,
    WorkloadPods,
    pod_facts,
    summarize,
)


def pod(
    name: str,
    *,
    instance: str = "chat",
    component: str = "llmEngine",
    ready: bool = False,
    phase: str = "Running",
    waiting: str | None = None,
    deleting: bool = False,
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "models",
        "labels": {
            LABEL_INSTANCE: instance,
            LABEL_COMPONENT: component,
            "core.openeverest.io/provider": "provider-kserve",
        },
    }
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    containers = [{"name": "main", "state": {"waiting": {"reason": waiting}} if waiting else {"running": {}}}]
    return {
        "metadata": meta,
        "status": {
            "phase": phase,
            "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
            "containerStatuses": containers,
        },
    }


def test_the_watch_selects_our_labelled_pods_only() -> None:
    assert (
        SELECTOR
        == "core.openeverest.io/provider=provider-kserve,core.openeverest.io/instance,core.openeverest.io/component"
    )


def test_pod_facts() -> None:
    facts = pod_facts(pod("a", ready=True))
    assert facts is not None and facts.instance == "models/chat" and facts.ready and not facts.problem
    assert pod_facts({"metadata": {"name": "x", "namespace": "n", "labels": {}}}) is None
    stuck = pod_facts(pod("b", waiting="CrashLoopBackOff"))
    assert stuck is not None and stuck.problem == "CrashLoopBackOff" and not stuck.ready
    pending = pod("c", phase="Pending")
    pending["status"]["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]
    facts = pod_facts(pending)
    assert facts is not None and facts.problem == "Unschedulable"
    gone = pod_facts(pod("d", ready=True, deleting=True))
    assert gone is not None and gone.terminating


def test_summaries_count_pods_that_are_not_terminating() -> None:
    facts = [pod_facts(p) for p in (pod("b", ready=True), pod("a"), pod("c", ready=True, deleting=True))]
    assert summarize(f for f in facts if f is not None) == {"llmEngine": ComponentPods(("a", "b"), 1, "")}


def test_an_instance_is_woken_only_when_its_summary_changes() -> None:
    woken: list[str] = []
    pods = WorkloadPods()

    def wake(key: str) -> bool:
        woken.append(key)
        return True

    pods._wake_key = wake
    first = pod_facts(pod("a"))
    pods.pod_changed("models/a", None, first)
    assert woken == ["models/chat"]
    # A status update that changes nothing status shows (say a restart count) wakes no one.
    pods.pod_changed("models/a", first, pod_facts(pod("a")))
    assert woken == ["models/chat"]
    ready = pod_facts(pod("a", ready=True))
    pods.pod_changed("models/a", first, ready)
    assert woken == ["models/chat"] * 2
    assert pods.components("models", "chat") == {"llmEngine": ComponentPods(("a",), 1, "")}
    pods.pod_changed("models/a", ready, None)
    assert woken == ["models/chat"] * 3
    assert pods.components("models", "chat") == {}


def test_component_states() -> None:
    assert component_state(ComponentPods(("a", "b"), 2), Phase.READY) == "Ready"
    assert component_state(ComponentPods(("a", "b"), 1), Phase.PROVISIONING) == "Starting"
    assert component_state(ComponentPods(("a",), 0, "ImagePullBackOff"), Phase.PROVISIONING) == "ImagePullBackOff"
    assert component_state(ComponentPods(), Phase.READY) == "ScaledToZero"
    assert component_state(ComponentPods(), Phase.PROVISIONING) == "Pending"


def test_every_component_of_the_topology_is_reported_and_no_other() -> None:
    found = {"predictor": ComponentPods(("p-1",), 1), "llmEngine": ComponentPods(("x",), 1)}
    assert component_statuses(("predictor",), found, Phase.READY) == (
        ComponentStatus("predictor", 1, 1, "Ready", ("p-1",)),
    )
    assert component_statuses(("llmEngine",), {}, Phase.PROVISIONING) == (
        ComponentStatus("llmEngine", 0, 0, "Pending", ()),
    )


def unschedulable(name: str) -> dict[str, Any]:
    held = pod(name, phase="Pending")
    held["status"]["conditions"] = [
        {
            "type": "PodScheduled",
            "status": "False",
            "reason": "Unschedulable",
            "message": "0/1 nodes are available: 1 Insufficient nvidia.com/gpu.\npreemption: 0/1 nodes are available.",
        }
    ]
    return held


def image_pull(name: str, reason: str) -> dict[str, Any]:
    stuck = pod(name, phase="Pending", waiting=reason)
    stuck["status"]["containerStatuses"][0].update(image="registry.invalid/vllm:none")
    stuck["status"]["containerStatuses"][0]["state"]["waiting"]["message"] = f"{reason}: changes every retry"
    return stuck


def test_what_keeps_a_pod_from_running_in_its_own_words_on_one_line() -> None:
    facts = pod_facts(unschedulable("a"))
    assert facts is not None and facts.problem == "Unschedulable"
    assert (
        facts.detail == "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. preemption: 0/1 nodes are available."
    )
    # A pull's two alternating states read the same, without the kubelet's changing message.
    pulls = {pod_facts(image_pull("b", reason)) for reason in ("ErrImagePull", "ImagePullBackOff")}
    assert {(f.problem, f.detail) for f in pulls if f} == {
        ("ErrImagePull", "container main: image registry.invalid/vllm:none cannot be pulled"),
        ("ImagePullBackOff", "container main: image registry.invalid/vllm:none cannot be pulled"),
    }
    crashing = pod("c", waiting="CrashLoopBackOff")
    crashing["status"]["containerStatuses"][0]["lastState"] = {"terminated": {"exitCode": 1, "reason": "Error"}}
    assert pod_facts(crashing).detail == "container main keeps exiting (exit code 1, Error)"  # type: ignore[union-attr]
    long = unschedulable("d")
    long["status"]["conditions"][0]["message"] = "x" * 1000
    assert len(pod_facts(long).detail) == DETAIL_LENGTH  # type: ignore[union-attr]


def test_an_instance_on_its_way_says_what_holds_its_pods_back() -> None:
    facts = [pod_facts(unschedulable("b-2")), pod_facts(image_pull("b-1", "ErrImagePull"))]
    found = summarize(f for f in facts if f is not None)
    provisioning = StatusReport(Phase.PROVISIONING, "Deployment does not have minimum availability.")
    held = held_back(provisioning, ("llmEngine",), found)
    # The first pod by name: the same message whatever order the watch delivered them in.
    assert (
        held.message == "llmEngine: ImagePullBackOff: container main: image registry.invalid/vllm:none cannot be pulled"
    )
    assert held.warning == PODS_CANNOT_START and held.phase == Phase.PROVISIONING
    # Serving, suspended or failed: the phase's own message stands.
    for phase in (Phase.READY, Phase.SUSPENDED, Phase.FAILED):
        assert held_back(StatusReport(phase, "m"), ("llmEngine",), found) == StatusReport(phase, "m")
    assert held_back(provisioning, ("llmEngine",), {"llmEngine": ComponentPods(("a",), 0)}) == provisioning
