"""status.components against KServe's real controllers: the pods KServe's Deployment runs (kwok
makes them Running and Ready on its fake Node) are counted per component on the Instance, and
follow a scale without anyone polling (the label-selected pod watch wakes the Instance); with a
replica range, what KServe's HorizontalPodAutoscaler wants and why it cannot scale (the
autoscaler watch)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from actors.client import KubeClient
from actors.client.known_resources import INSTANCES
from provider.kserve import build_provider
from tests.support.events import events_about
from tests.support.instance_status import conditions_of, instance_status, wait_phase, wait_status
from tests.support.instances import predictor_instance, predictor_parameters
from tests.support.kserve import KServeCluster
from tests.support.runtime import running_manager
from tests.support.waiting import NotYet, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.kserve]

TIMEOUT = 120.0


async def test_components_show_the_pods_kserve_runs(kserve: KServeCluster, kserve_namespace: str) -> None:
    kube, ns, name = kserve.kube, kserve_namespace, "counted"
    client = await KubeClient.connect(str(kserve.plane.kubeconfig))
    provider, shared = build_provider({}, client)

    async def components(total: int) -> list[dict[str, Any]] | NotYet:
        found = list((await instance_status(kube, ns, name)).get("components") or [])
        if [(c.get("ready"), c.get("total"), c.get("state")) for c in found] != [(total, total, "Ready")]:
            return NotYet(found)
        return found

    async with running_manager(kserve.plane, provider, ns, shared=shared, client=client):
        await kube.create(
            INSTANCES,
            predictor_instance(
                name, ns, on_cluster=True, parameters=predictor_parameters(minReplicas=2, maxReplicas=2)
            ),
        )
        await wait_phase(kube, ns, name, "Ready", timeout=TIMEOUT)
        (entry,) = await wait_for(lambda: components(2), timeout=TIMEOUT)
        pods = [ref["name"] for ref in entry["podRefs"]]
        assert len(pods) == 2 and all(pod.startswith(f"{name}-predictor-") for pod in pods)

        # A merge patch: the provider writes the status between a read and a replace.
        scale_down = {"spec": {"components": {"predictor": {"parameters": {"minReplicas": 1, "maxReplicas": 1}}}}}
        await kube.patch(INSTANCES, ns, name, scale_down)
        (entry,) = await wait_for(lambda: components(1), timeout=TIMEOUT)
        assert len(entry["podRefs"]) == 1


async def test_the_autoscalers_count_and_trouble_reach_status_and_a_change_is_one_event(
    kserve: KServeCluster, kserve_namespace: str
) -> None:
    """A range (1 to 3 replicas on CPU): KServe's HorizontalPodAutoscaler has no metrics to read in
    this cluster (no metrics-server), and the Instance's Autoscaling condition says so in its words,
    with the one replica it keeps. A minimum of 2 makes it want 2 (below its minimum it scales
    without metrics): the condition says 2, two pods run ready, and one Scaled Event says 1 -> 2."""
    kube, ns, name = kserve.kube, kserve_namespace, "autoscaled"
    client = await KubeClient.connect(str(kserve.plane.kubeconfig))
    provider, shared = build_provider({}, client)
    scaling = predictor_parameters(minReplicas=1, maxReplicas=3, scaleMetric="cpu", scaleTarget=50)

    def scaled_to(wanted: str, pods: int) -> Callable[[dict[str, Any]], bool]:
        def check(status: dict[str, Any]) -> bool:
            found = [(c.get("ready"), c.get("total"), c.get("state")) for c in status.get("components") or []]
            autoscaling = conditions_of(status).get("Autoscaling") or {}
            said = (autoscaling.get("reason"), str(autoscaling.get("message") or "").split(", cannot scale")[0])
            return found == [(pods, pods, "Ready")] and said == ("FailedGetResourceMetric", f"predictor: {wanted}")

        return check

    async with running_manager(kserve.plane, provider, ns, shared=shared, client=client):
        await kube.create(INSTANCES, predictor_instance(name, ns, on_cluster=True, parameters=scaling))
        status = await wait_status(
            kube, ns, name, scaled_to("1 of 1 to 3 replicas wanted", 1), "1 wanted and ready, no metrics", TIMEOUT
        )
        autoscaling = conditions_of(status)["Autoscaling"]
        assert autoscaling["status"] == "False" and "unable to get metrics for resource cpu" in autoscaling["message"]
        assert not [e for e in await events_about(kube, ns, name) if e["reason"] == "Scaled"]

        minimum = {"spec": {"components": {"predictor": {"parameters": {"minReplicas": 2}}}}}
        await kube.patch(INSTANCES, ns, name, minimum)
        await wait_status(kube, ns, name, scaled_to("2 of 2 to 3 replicas wanted", 2), "2 wanted and ready", TIMEOUT)

        async def scaled_events() -> list[dict[str, Any]] | NotYet:
            # Recorded once the status saying 2 is written: a moment after that status shows.
            found = [e for e in await events_about(kube, ns, name) if e["reason"] == "Scaled"]
            return found or NotYet(found)

        (scaled,) = await wait_for(scaled_events, what="the Scaled Event", timeout=TIMEOUT)
        assert scaled["note"] == "predictor: 1 -> 2 replicas wanted by KServe's autoscaler"
        assert scaled["type"] == "Normal" and scaled.get("series") is None  # once, not a series of repeats
