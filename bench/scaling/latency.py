"""From a user's spec change to the derived object showing it: seen on one watch of the derived
kind for the whole phase, not by reading the object every few milliseconds (an LLMInferenceService
is ~100x a ConfigMap: polling it cost the API server and the two cores the provider shares more
than the change itself, and put the bench's reads into the figure)."""

from __future__ import annotations

import statistics
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
from bench.scaling.workloads import Workload, name_of

from actors.kube import ApiError, KubeClient, TransportError
from actors.resources import INSTANCES

# Longest wait for one spec change to show on its derived object.
LATENCY_CAP = 60.0


class Seen:
    """The watched value of each derived object as last seen, and when (perf_counter)."""

    def __init__(self) -> None:
        self.latest: dict[str, tuple[Any, float]] = {}
        self._changed = anyio.Event()

    def record(self, name: str, value: Any) -> None:
        self.latest[name] = (value, time.perf_counter())
        self._changed.set()
        self._changed = anyio.Event()

    async def when(self, name: str, value: Any) -> float:
        """When `name` was seen with `value` (waits for it)."""
        while (latest := self.latest.get(name)) is None or latest[0] != value:
            await self._changed.wait()
        return latest[1]


@asynccontextmanager
async def watching(kube: KubeClient, workload: Workload, namespace: str) -> AsyncIterator[Seen]:
    seen = Seen()
    listed = await kube.list(workload.derived, namespace)
    for obj in listed.get("items") or []:
        seen.record(obj["metadata"]["name"], workload.observed(obj))
    async with anyio.create_task_group() as tg:
        tg.start_soon(_follow, kube, workload, namespace, listed["metadata"]["resourceVersion"], seen)
        yield seen
        tg.cancel_scope.cancel()


async def _follow(kube: KubeClient, workload: Workload, namespace: str, version: str, seen: Seen) -> None:
    """Watch from `version` on, again from the last version seen when a watch ends."""
    while True:
        try:
            async for event in kube.watch(workload.derived, namespace, version):
                obj = event.get("object") or {}
                version = (obj.get("metadata") or {}).get("resourceVersion") or version
                if event.get("type") in ("ADDED", "MODIFIED"):
                    seen.record(obj["metadata"]["name"], workload.observed(obj))
        except (ApiError, TransportError) as err:
            if isinstance(err, ApiError) and err.status == 410:  # expired: what is there now
                listed = await kube.list(workload.derived, namespace)
                version = listed["metadata"]["resourceVersion"]
            await anyio.sleep(0.1)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def spec_change_latency(
    kube: KubeClient, workload: Workload, namespace: str, samples: int, offset: int = 0
) -> dict[str, float]:
    """p50/p99 (ms) from an Instance spec change to the derived object showing it, one at a time."""
    latencies = []
    async with watching(kube, workload, namespace) as seen:
        for i in range(samples):
            value = offset + 2 + i % 3
            started = time.perf_counter()
            await kube.patch(INSTANCES, namespace, name_of(i), workload.change(value))
            # Not seen within the cap: counted as the cap (a user's change waiting behind a whole
            # bulk backlog shows up as a p99 at the cap, not as a failed run).
            shown_at = started + LATENCY_CAP
            with anyio.move_on_after(LATENCY_CAP):
                shown_at = await seen.when(name_of(i) + workload.derived_suffix, value)
            latencies.append(min(shown_at - started, LATENCY_CAP))
    return {"p50_ms": 1000 * statistics.median(latencies), "p99_ms": 1000 * pct(latencies, 0.99)}
