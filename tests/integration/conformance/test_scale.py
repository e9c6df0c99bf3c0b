"""Conformance 7: many Instances created, synced (and brought to Ready), then deleted: nothing of
ours remains.

Each `llm` Instance derives an LLMInferenceService and a PodMonitor; once KServe reports it Ready,
the runtime adds the `<instance>-conn` Secret. Every object must exist exactly once before the
deletion, and zero objects of ours (carrying our provider label and controlled by an Instance, of
any kind the provider owns, Secrets included) after it.

Two sizes, because Ready is KServe's word and KServe's real controllers cost what they cost: 500
Instances on the plain control plane (synced, then deleted), and READY_COUNT brought to Ready by
KServe's controllers (the `kserve` fixture). KServe 0.20's llmisvc makes an RSA-4096 certificate
per service, again on every reconcile until its pods have IPs: on 2 cores, 100 services took over
10 minutes to become Ready (measured), 20 take about a minute.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Any

import anyio
import pytest

from actors.client import KubeClient
from actors.client.known_resources import INSTANCES, SECRETS
from actors.interface import KubeObject
from provider.model.kinds import LLM_INFERENCE_SERVICE, POD_MONITOR
from tests.support.convergence import SELECTOR, census, condition, inventory, kserve_provider
from tests.support.instances import llm_instance
from tests.support.kserve import DEPLOYMENTS, KServeCluster
from tests.support.runtime import running_manager
from tests.support.waiting import NotYet, wait_for

pytestmark = pytest.mark.integration

COUNT = int(os.environ.get("CONFORMANCE_SCALE_COUNT", "500"))
READY_COUNT = int(os.environ.get("CONFORMANCE_SCALE_READY_COUNT", "20"))


async def in_parallel(calls: Sequence[Callable[[], Awaitable[Any]]], limit: int = 16) -> None:
    gate = anyio.CapacityLimiter(limit)

    async def one(call: Callable[[], Awaitable[Any]]) -> None:
        async with gate:
            await call()

    async with anyio.create_task_group() as tg:
        for call in calls:
            tg.start_soon(one, call)


async def labelled_count(kube: KubeClient, namespace: str) -> Counter[str]:
    counts: Counter[str] = Counter()
    for res in (LLM_INFERENCE_SERVICE, POD_MONITOR, SECRETS):
        items, _ = await kube.list_all(res, namespace, label_selector=SELECTOR)
        counts[res.kind] = len(items)
    return counts


def ours(objects: list[KubeObject]) -> list[KubeObject]:
    """What the provider owns: KServe copies an LLMInferenceService's spec.labels (ours) onto the
    Deployment, Service and pods it creates, which its controller reference tells apart."""
    return [o for o in objects if is_controlled_by_instance(o)]


def is_controlled_by_instance(obj: KubeObject) -> bool:
    owners = obj["metadata"].get("ownerReferences") or []
    return any(o.get("controller") and o.get("kind") == INSTANCES.kind for o in owners)


async def create_converge_delete(plane: Any, kube: KubeClient, namespace: str, count: int, *, ready: bool) -> str:
    names = [f"scale-{i:03d}" for i in range(count)]
    async with running_manager(plane, kserve_provider(), namespace):
        started = time.monotonic()
        await in_parallel([partial(kube.create, INSTANCES, llm_instance(n, namespace, on_cluster=True)) for n in names])

        async def all_synced() -> bool:
            items, _ = await kube.list_all(INSTANCES, namespace)
            synced = [
                o
                for o in items
                if (c := condition(o, "Synced"))
                and c["status"] == "True"
                and c.get("observedGeneration") == o["metadata"]["generation"]
            ]
            return len(synced) == count

        await wait_for(all_synced, timeout=600)
        report = f"{count} Instances: synced in {time.monotonic() - started:.1f} s"
        expected = {"LLMInferenceService": count, "PodMonitor": count}
        if ready:
            ready_counts: list[tuple[float, int]] = []

            async def all_ready() -> bool | NotYet:
                items, _ = await kube.list_all(INSTANCES, namespace)
                done = sum(1 for o in items if (o.get("status") or {}).get("phase") == "Ready")
                ready_counts.append((round(time.monotonic() - started, 1), done))
                if done == count and (await labelled_count(kube, namespace))["Secret"] == count:
                    return True
                return NotYet({"(seconds, Ready)": ready_counts[:: max(1, len(ready_counts) // 20)]})

            await wait_for(all_ready, what="every Instance Ready with its Secret", timeout=600)
            report += f", Ready (with Secrets) in {time.monotonic() - started:.1f} s"
            expected["Secret"] = count

        objects = ours(await inventory(kube, namespace))
        kinds = Counter(o["kind"] for o in objects)
        assert kinds == expected, kinds
        assert max(census(objects).values()) == 1

        deleting = time.monotonic()
        await in_parallel([partial(kube.delete, INSTANCES, namespace, n) for n in names])

        async def instances_gone() -> bool:
            items, _ = await kube.list_all(INSTANCES, namespace)
            return not items

        await wait_for(instances_gone, timeout=600)
        report += f", deleted with every derived object in {time.monotonic() - deleting:.1f} s"

        # KServe's Deployments and Services go through the garbage collector, in no set order (a CI
        # run saw a workload Service outlive every Deployment): wait for all of them.
        async def kserves_gone() -> bool | NotYet:
            deployments, _ = await kube.list_all(DEPLOYMENTS, namespace)
            left = [{**d, "kind": "Deployment"} for d in deployments] + await inventory(kube, namespace)
            names = sorted(f"{o['kind']}/{o['metadata']['name']}" for o in left)
            return not left or NotYet({"outliving their Instances": len(left), "first": names[:20]})

        await wait_for(kserves_gone, what="every derived object gone", timeout=600)
    return report


async def test_500_instances_synced_then_deleted_leave_nothing(
    controlplane: Any, kube: KubeClient, namespace: str
) -> None:
    print(await create_converge_delete(controlplane, kube, namespace, COUNT, ready=False))


@pytest.mark.kserve
async def test_instances_ready_through_kserve_then_deleted_leave_nothing(
    kserve: KServeCluster, kserve_namespace: str
) -> None:
    print(await create_converge_delete(kserve.plane, kserve.kube, kserve_namespace, READY_COUNT, ready=True))
