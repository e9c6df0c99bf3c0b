"""The phases of one run against a provider process: converge (with a user's change during it),
steady state (forced resync, spec-change latency, churn), restart and idle, delete all."""

from __future__ import annotations

import os
import signal
import statistics
import time
from collections.abc import Callable
from typing import Any

import anyio
from bench.scaling.latency import spec_change_latency, watching
from bench.scaling.process import READS, WRITES, ProviderProcess, Sample, cpu_seconds, rss_mib
from bench.scaling.workloads import Workload, name_of

from actors.client import KubeClient
from actors.client.known_resources import INSTANCES
from actors.contract import FINALIZER
from actors.interface import KubeObject

# How often the bench lists the namespace to see whether a phase is done (each list costs the API
# server, which shares the machine with the provider, so not more often).
POLL = 1.0
# Spec changes measured one at a time with the others idle: enough for the p99 to be the tenth
# longest, not one of two or three outliers.
IDLE_CHANGES = 1000


async def bounded(n: int, action: Callable[[int], Any], limit: int = 32) -> None:
    """Run action(0..n-1) with at most `limit` in flight (a burst, as a client fleet would send it)."""
    limiter = anyio.CapacityLimiter(limit)

    async def one(i: int) -> None:
        async with limiter:
            await action(i)

    async with anyio.create_task_group() as tg:
        for i in range(n):
            tg.start_soon(one, i)


def instance_done(obj: KubeObject) -> bool:
    """The Instance carries our finalizer and a status (written after its derived objects)."""
    return FINALIZER in (obj["metadata"].get("finalizers") or []) and bool((obj.get("status") or {}).get("phase"))


async def converged(kube: KubeClient, workload: Workload, namespace: str, n: int) -> bool:
    items, _ = await kube.list_all(INSTANCES, namespace)
    done = sum(1 for o in items if instance_done(o))
    if done < n:
        return False
    derived, _ = await kube.list_all(workload.derived, namespace)
    return sum(1 for o in derived if o["metadata"]["name"].endswith(workload.derived_suffix)) >= n


async def converge(
    kube: KubeClient, process: ProviderProcess, workload: Workload, n: int, *, probe: bool
) -> dict[str, Any]:
    """N Instances created at once; with `probe`, a user's spec changes while the bulk converge is
    under way (they must go ahead of it). The converge curve comes from one watch of the Instances:
    when each was created (its create answered) and when it was first seen done, in seconds from
    the first create (`converge_created_s`, `converge_done_s`, sorted)."""
    namespace = process.namespace
    result: dict[str, Any] = {"rss_start": rss_mib(process.pid)}
    before = process.scrape()
    cpu_start = cpu_seconds(process.pid)
    created: list[float] = []

    async def create(i: int) -> None:
        await kube.create(INSTANCES, workload.instance(name_of(i), namespace))
        created.append(time.perf_counter())

    async with watching(kube, INSTANCES, namespace, instance_done) as (done,):
        started = time.perf_counter()
        async with anyio.create_task_group() as tg:
            tg.start_soon(bounded, n, create)
            if probe:
                probes = min(50, n)
                with anyio.fail_after(600):
                    for i in range(probes):  # created in any order by the burst
                        while await kube.get(INSTANCES, namespace, name_of(i)) is None:
                            await anyio.sleep(0.05)
                during = await spec_change_latency(kube, workload, namespace, probes, offset=100)
                during.pop("samples_ms")
                result.update({f"converge_change_{k}": v for k, v in during.items()})
        with anyio.fail_after(3600):
            while not await converged(kube, workload, namespace, n):
                await anyio.sleep(POLL)
        elapsed = time.perf_counter() - started
        with anyio.move_on_after(10):  # the last status writes' events trail the list that saw them
            while sum(1 for value, _ in done.latest.values() if value) < n:
                await anyio.sleep(0.1)
    result.update(
        seconds=elapsed,
        per_second=n / elapsed,
        converge_created_s=sorted(round(at - started, 4) for at in created),
        converge_done_s=sorted(round(at - started, 4) for value, at in done.latest.values() if value),
    )
    await process.quiet()
    sample = process.scrape()
    result.update(
        cpu_seconds=cpu_seconds(process.pid) - cpu_start,
        requests={v: c / n for v, c in sorted(sample.verbs.items())},
        reconciles_per_instance=sample.reconciles / n,
        errors=sample.errors,
        exited=not process.alive(),
        rss=rss_mib(process.pid),
        rss_peak=rss_mib(process.pid, "VmHWM"),
        load_converge=os.getloadavg()[0],
        where=where_time_goes(before, sample, elapsed),
    )
    return result


def where_time_goes(before: Sample, after: Sample, wall: float) -> dict[str, float]:
    """Mean ms per reconcile step, per API request by verb and per garbage collection by
    generation (with the collections' total seconds) between two scrapes, and the mean
    number of reconciles in flight (sum of step time over wall: near --max-concurrent, 16 by
    default, the reconcile slots are the limit; far below, the wait is elsewhere: the event loop,
    the API server, the load generator)."""
    out: dict[str, float] = {}
    for key, total in after.seconds.items():
        count = after.counts[key] - before.counts.get(key, 0.0)
        if count:
            spent = total - before.seconds.get(key, 0.0)
            out[f"{key} ms"] = 1000 * spent / count
            if key.startswith("gc:"):  # many short pauses or few long ones: the total is the cost
                out[f"{key} total s"] = spent
    steps = sum(v - before.seconds.get(k, 0.0) for k, v in after.seconds.items() if k.startswith("step:"))
    out["in flight"] = steps / wall if wall else 0.0
    return out


async def steady(kube: KubeClient, process: ProviderProcess, workload: Workload, n: int) -> dict[str, Any]:
    """A forced resync (SIGHUP) over N converged Instances, then the spec-change latency."""
    before = process.scrape()
    assert process.proc is not None
    process.proc.send_signal(signal.SIGHUP)
    await anyio.sleep(0.5)
    with anyio.fail_after(600):
        while (now := process.scrape()).reconciles < before.reconciles + n or now.depth:
            await anyio.sleep(0.5)
    await process.quiet()
    after = process.scrape()
    result: dict[str, Any] = {
        "resync_writes": sum(after.verbs[v] - before.verbs[v] for v in WRITES),
        "resync_reads": sum(after.verbs[v] - before.verbs[v] for v in READS),
        "resync_reconciles": after.reconciles - before.reconciles,
        "load_steady": os.getloadavg()[0],
    }
    before, started = process.scrape(), time.perf_counter()
    latency = await spec_change_latency(kube, workload, process.namespace, min(IDLE_CHANGES, n), idle=True)
    result.update({f"change_{k}": v for k, v in latency.items()})
    result["change_where"] = where_time_goes(before, process.scrape(), time.perf_counter() - started)
    await process.quiet()
    return result


async def churn(kube: KubeClient, process: ProviderProcess, workload: Workload, n: int) -> dict[str, Any]:
    """Every Instance updated 10 times in a burst: applies of the derived object per Instance."""
    before = process.scrape().on_derived
    spans: list[float] = []

    async def burst(i: int) -> None:
        first = time.perf_counter()
        for k in range(10):
            await kube.patch(INSTANCES, process.namespace, name_of(i), workload.change(10 + k))
        spans.append(time.perf_counter() - first)

    started = time.perf_counter()
    await bounded(n, burst)
    await process.quiet()
    after = process.scrape().on_derived
    return {
        "churn_seconds": time.perf_counter() - started,
        # How long one Instance's ten edits took to send: coalescing can only merge what overlaps.
        "churn_burst_ms": 1000 * statistics.median(spans),
        "churn_applies_per_instance": (after["patch"] - before["patch"]) / n,
    }


async def restart_and_idle(process: ProviderProcess, n: int, idle_seconds: float) -> dict[str, Any]:
    """A new process (a restart, or a new leader) over N converged Instances: writes and CPU until
    it is quiet; then its CPU and requests over `idle_seconds` with nothing happening."""
    started = time.perf_counter()
    process.start()
    await process.wait_metrics()
    with anyio.fail_after(600):
        while process.scrape().reconciles < n:
            await anyio.sleep(0.2)
    await process.quiet()
    after = process.scrape()
    result: dict[str, Any] = {
        "restart_writes": after.writes(),
        "restart_verbs": dict(after.verbs),
        "restart_reads": sum(after.verbs[v] for v in READS),
        "restart_reconciles": after.reconciles,
        "restart_cpu": cpu_seconds(process.pid),
        "restart_seconds": time.perf_counter() - started,
    }
    # Idle starts once the restart's work is over: its actors exit after their idle timeout.
    with anyio.move_on_after(120):
        while process.scrape().live:
            await anyio.sleep(0.5)
    after = process.scrape()
    idle_from = cpu_seconds(process.pid)
    await anyio.sleep(idle_seconds)
    idle = process.scrape()
    result.update(
        idle_cpu_per_min=(cpu_seconds(process.pid) - idle_from) * 60 / idle_seconds,
        idle_reconciles=idle.reconciles - after.reconciles,
        idle_seconds=idle_seconds,
        idle_requests=dict(idle.since(after)),
        load_idle=os.getloadavg()[0],
    )
    return result


async def delete_all(kube: KubeClient, process: ProviderProcess, n: int) -> dict[str, Any]:
    """Every Instance deleted at once: time and CPU until the last is gone (derived objects deleted,
    finalizer removed)."""
    cpu_start = cpu_seconds(process.pid)
    started = time.perf_counter()
    await bounded(n, lambda i: kube.delete(INSTANCES, process.namespace, name_of(i)))
    with anyio.fail_after(3600):
        while (await kube.list(INSTANCES, process.namespace, limit=1)).get("items"):
            await anyio.sleep(POLL)
    elapsed = time.perf_counter() - started
    return {
        "delete_seconds": elapsed,
        "delete_per_second": n / elapsed,
        "delete_cpu": cpu_seconds(process.pid) - cpu_start,
        "load_delete": os.getloadavg()[0],
    }
