"""status.components: the pods KServe runs for an Instance, read from their labels, counted per
component, and the Instance woken only when what its status shows changed."""

from __future__ import annotations

from typing import Any

from actors import ComponentStatus, Phase
from provider.kserve import component_state, component_statuses
from provider.shared.workload_pods import (
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
