"""Conformance 7: 500 Instances created, brought to Ready, then deleted: nothing of ours remains.

Each `llm` Instance derives an LLMInferenceService and a PodMonitor; once KServe (played by the
test through the status subresource) reports Ready, the runtime adds the `<instance>-conn` Secret.
All 1,500 objects must exist exactly once before the deletion, and zero objects carrying our
provider label (of any kind the provider owns, Secrets included) after it.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from typing import Any

import anyio
import pytest

from actors.kube import KubeClient
from actors.resources import INSTANCES, SECRETS
from provider.kinds import LLM_INFERENCE_SERVICE, POD_MONITOR
from tests.integration.test_conformance_support import (
    SELECTOR,
    census,
    condition,
    inventory,
    kserve_provider,
    kserve_ready,
    llm_instance,
)
from tests.support.runtime import running_manager, wait_for

pytestmark = pytest.mark.integration

COUNT = 500


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


async def test_500_instances_created_ready_then_deleted_leave_nothing(
    controlplane: Any, kube: KubeClient, namespace: str
) -> None:
    names = [f"scale-{i:03d}" for i in range(COUNT)]
    async with running_manager(controlplane, kserve_provider(), namespace):
        started = time.monotonic()
        await in_parallel([partial(kube.create, INSTANCES, llm_instance(n, namespace)) for n in names])

        async def all_synced() -> bool:
            items, _ = await kube.list_all(INSTANCES, namespace)
            synced = [
                o
                for o in items
                if (c := condition(o, "Synced"))
                and c["status"] == "True"
                and c.get("observedGeneration") == o["metadata"]["generation"]
            ]
            return len(synced) == COUNT

        await wait_for(all_synced, timeout=600)
        synced_after = time.monotonic() - started
        await in_parallel([partial(kserve_ready, kube, namespace, n) for n in names])

        async def all_ready() -> bool:
            items, _ = await kube.list_all(INSTANCES, namespace)
            ready = sum(1 for o in items if (o.get("status") or {}).get("phase") == "Ready")
            return ready == COUNT and (await labelled_count(kube, namespace))["Secret"] == COUNT

        await wait_for(all_ready, timeout=600)
        ready_after = time.monotonic() - started

        objects = await inventory(kube, namespace)
        assert Counter(o["kind"] for o in objects) == {
            "LLMInferenceService": COUNT,
            "PodMonitor": COUNT,
            "Secret": COUNT,
        }
        assert max(census(objects).values()) == 1

        deleting = time.monotonic()
        await in_parallel([partial(kube.delete, INSTANCES, namespace, n) for n in names])

        async def instances_gone() -> bool:
            items, _ = await kube.list_all(INSTANCES, namespace)
            return not items

        await wait_for(instances_gone, timeout=600)
        deleted_after = time.monotonic() - deleting

    assert await inventory(kube, namespace) == []
    print(
        f"{COUNT} Instances: synced in {synced_after:.1f} s, Ready (with Secrets) in {ready_after:.1f} s, "
        f"deleted with every derived object in {deleted_after:.1f} s"
    )
