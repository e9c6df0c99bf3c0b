"""status.components against KServe's real controllers: the pods KServe's Deployment runs (kwok
makes them Running and Ready on its fake Node) are counted per component on the Instance, and
follow a scale without anyone polling (the label-selected pod watch wakes the Instance)."""

from __future__ import annotations

from typing import Any

import pytest

from actors.client import KubeClient
from actors.client.known_resources import INSTANCES
from provider.kserve import build_provider
from tests.support.instance_status import instance_status, wait_phase
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
