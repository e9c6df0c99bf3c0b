"""The runtime's own gauges and counters on a real control plane: Instances by the phase written on
their status (and gone from it once deleted), the leader, and the step that failed."""

from __future__ import annotations

from typing import Any

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from actors.client.known_resources import INSTANCES
from actors.manager.manager import Manager
from tests.support.instances import null_instance
from tests.support.null_provider import RefusedConfigMap
from tests.support.runtime import running_manager
from tests.support.waiting import wait_for

pytestmark = pytest.mark.integration


def values(manager: Manager, name: str) -> dict[tuple[tuple[str, str], ...], float]:
    text = generate_latest(manager.metrics.registry).decode()
    return {
        tuple(sorted(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
        if s.name == name
    }


async def test_instances_by_phase_leader_and_step_errors(controlplane: Any, kube: Any, namespace: str) -> None:
    async with running_manager(controlplane, RefusedConfigMap(ready=False), namespace) as (manager, _):
        assert values(manager, "provider_leader") == {(): 1.0}
        for name in ("one", "two"):
            await kube.create(INSTANCES, null_instance(name, namespace))
        await kube.create(INSTANCES, null_instance("refused", namespace, refused=True))

        async def counted() -> bool:
            # The object the API server refuses fails the Instance (not retried until it changes).
            phases = values(manager, "provider_instances")
            return phases.get((("phase", "Provisioning"),)) == 2.0 and phases.get((("phase", "Failed"),)) == 1.0

        await wait_for(counted)
        assert values(manager, "provider_instance_phase_longest_seconds")[(("phase", "Provisioning"),)] >= 0

        async def sync_failed() -> bool:
            return values(manager, "provider_reconcile_step_errors_total").get((("step", "sync"),), 0) >= 1

        await wait_for(sync_failed)

        await kube.delete(INSTANCES, namespace, "one")

        async def forgotten() -> bool:
            return values(manager, "provider_instances").get((("phase", "Provisioning"),)) == 1.0

        await wait_for(forgotten)
