"""From a user's spec change to the derived object showing it: seen on one watch of the derived
kind for the whole phase, not by reading the object every few milliseconds (an LLMInferenceService
is ~100x a ConfigMap: polling it cost the API server and the two cores the provider shares more
than the change itself, and put the bench's reads into the figure).

With `idle`, a second watch, of the Instances, tells when each change reached the API server's
watchers (the provider's informer among them): each latency is then split into the API server's
part before the provider could see the change (the Instance write and its watch event) and the
rest (the provider's reconcile, its apply, and that object's watch event). The same watch tells
when the provider has written the Instance's status for the change, and the next change waits for
it: "N idle" holds for every change, not just for the first (sent back to back, each change would
meet the previous one's status write on the API server; docs/performance.md has what that cost)."""

from __future__ import annotations

import statistics
import time
from collections.abc import AsyncIterator, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
from bench.scaling.workloads import Workload, name_of

from actors.client import ApiError, KubeClient, TransportError
from actors.client.known_resources import INSTANCES
from actors.interface import KubeObject, Resource

# Longest wait for one spec change to show on its derived object.
LATENCY_CAP = 60.0
# Longest wait for its status write before the next change goes out regardless.
SETTLE_CAP = 10.0


class Seen:
    """The watched value of each object as last seen, and when it first showed (perf_counter)."""

    def __init__(self) -> None:
        self.latest: dict[str, tuple[Any, float]] = {}
        self._changed = anyio.Event()

    def record(self, name: str, value: Any) -> None:
        if (latest := self.latest.get(name)) is not None and latest[0] == value:
            return  # a later event that did not change the value (a status write): not when it showed
        self.latest[name] = (value, time.perf_counter())
        self._changed.set()
        self._changed = anyio.Event()

    async def when(self, name: str, value: Any) -> float:
        """When `name` was seen with `value` (waits for it)."""
        while (latest := self.latest.get(name)) is None or latest[0] != value:
            await self._changed.wait()
        return latest[1]


Observed = Callable[[KubeObject], Any]


def _generation(obj: KubeObject) -> Any:
    return obj["metadata"].get("generation")


def _status_generation(obj: KubeObject) -> Any:
    """The generation the Instance's status was last written for (its reconcile's last step; every
    condition a write reports carries it, while one no longer reported keeps an older one), None
    before the first status."""
    conditions = (obj.get("status") or {}).get("conditions") or []
    return max((c.get("observedGeneration") or 0 for c in conditions), default=None)


@asynccontextmanager
async def watching(
    kube: KubeClient, resource: Resource, namespace: str, *observed: Observed
) -> AsyncIterator[tuple[Seen, ...]]:
    """For each of `observed`, its value of each object of `resource` in `namespace` as last seen
    on one watch."""
    seen = tuple(Seen() for _ in observed)
    listed = await kube.list(resource, namespace)
    for obj in listed.get("items") or []:
        _record(obj, observed, seen)
    async with anyio.create_task_group() as tg:
        tg.start_soon(_follow, kube, resource, observed, namespace, listed["metadata"]["resourceVersion"], seen)
        yield seen
        tg.cancel_scope.cancel()


def _record(obj: KubeObject, observed: tuple[Observed, ...], seen: tuple[Seen, ...]) -> None:
    for value_of, values in zip(observed, seen, strict=True):
        values.record(obj["metadata"]["name"], value_of(obj))


async def _follow(
    kube: KubeClient,
    resource: Resource,
    observed: tuple[Observed, ...],
    namespace: str,
    version: str,
    seen: tuple[Seen, ...],
) -> None:
    """Watch from `version` on, again from the last version seen when a watch ends."""
    while True:
        try:
            async for event in kube.watch(resource, namespace, version):
                obj = event.get("object") or {}
                version = (obj.get("metadata") or {}).get("resourceVersion") or version
                if event.get("type") in ("ADDED", "MODIFIED"):
                    _record(obj, observed, seen)
        except (ApiError, TransportError) as err:
            if isinstance(err, ApiError) and err.status == 410:  # expired: what is there now
                listed = await kube.list(resource, namespace)
                version = listed["metadata"]["resourceVersion"]
            await anyio.sleep(0.1)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _percentiles(prefix: str, seconds: list[float]) -> dict[str, float]:
    return {f"{prefix}p50_ms": 1000 * statistics.median(seconds), f"{prefix}p99_ms": 1000 * pct(seconds, 0.99)}


async def spec_change_latency(
    kube: KubeClient, workload: Workload, namespace: str, samples: int, offset: int = 0, *, idle: bool = False
) -> dict[str, Any]:
    """p50/p99 (ms) from an Instance spec change to the derived object showing it, one at a time,
    and every latency (`samples_ms`, in the order sent, for the figures); with `idle`, each change
    waits for the previous one's status write, and the figures come also for the latency's two
    parts: until the Instance's watch event (`api_`), and from there to the derived object's
    (`provider_`)."""
    latencies: list[float] = []
    parts: tuple[list[float], list[float]] = ([], [])
    async with AsyncExitStack() as stack:
        (shown,) = await stack.enter_async_context(watching(kube, workload.derived, namespace, workload.observed))
        instances: tuple[Seen, ...] = ()
        if idle:
            instances = await stack.enter_async_context(
                watching(kube, INSTANCES, namespace, _generation, _status_generation)
            )
        for i in range(samples):
            value = offset + 2 + i % 3
            started = time.perf_counter()
            written = await kube.patch(INSTANCES, namespace, name_of(i), workload.change(value))
            # Not seen within the cap: counted as the cap (a user's change waiting behind a whole
            # bulk backlog shows up as a p99 at the cap, not as a failed run).
            shown_at = started + LATENCY_CAP
            with anyio.move_on_after(LATENCY_CAP):
                shown_at = await shown.when(name_of(i) + workload.derived_suffix, value)
            latencies.append(min(shown_at - started, LATENCY_CAP))
            if instances:
                reached, reconciled = instances
                with anyio.move_on_after(LATENCY_CAP):
                    # Seen by then: the provider reacts to that very event.
                    reached_at = await reached.when(name_of(i), _generation(written))
                    parts[0].append(reached_at - started)
                    parts[1].append(shown_at - reached_at)
                with anyio.move_on_after(SETTLE_CAP):
                    await reconciled.when(name_of(i), _generation(written))
    result: dict[str, Any] = _percentiles("", latencies)
    result["samples_ms"] = [round(1000 * s, 3) for s in latencies]
    if parts[0]:
        result.update(_percentiles("api_", parts[0]) | _percentiles("provider_", parts[1]))
    return result
