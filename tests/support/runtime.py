"""Run the real runtime (Manager, or the bare ActorSystem) inside a test's event loop, and look at what
it does (idle, quiet, reconciles counted, requests recorded)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio

from actors import Endpoints, KubeClient, Manager, ManagerOptions, Provider, SharedActors
from actors.queue.actor_system import ActorSystem
from tests.support.waiting import NotYet, wait_for


@asynccontextmanager
async def system_running(system: ActorSystem) -> AsyncIterator[None]:
    """The system's run loop in the background for the block; stopped when the block ends."""
    async with anyio.create_task_group() as tg:
        await tg.start(system.run)
        try:
            yield
        finally:
            tg.cancel_scope.cancel()


@asynccontextmanager
async def running_manager(
    controlplane: Any,
    provider: Provider[Any],
    namespace: str,
    *,
    shared: SharedActors | None = None,
    client: KubeClient | None = None,
    **options: Any,
) -> AsyncIterator[tuple[Manager, Counter[str]]]:
    """The real Manager for `provider`, watching only `namespace`. Pass the `client` that built
    the provider's shared actors (e.g. `build_provider(env, client)`) so both talk through it.
    Yields the manager and its requests counted by verb alone (`record_requests` says which
    resource each went to)."""
    client = client or await KubeClient.connect(str(controlplane.kubeconfig))
    requests: Counter[str] = Counter()
    client.observe(lambda verb, resource, code, seconds: requests.update([verb]))
    options.setdefault("endpoints", Endpoints(metrics_port=None, health_port=None, validation_port=None))
    opts = ManagerOptions(namespaces=[namespace], **options)
    manager = Manager(client, provider, options=opts, shared=shared)
    async with client, anyio.create_task_group() as tg:
        tg.start_soon(manager.run)

        async def ready() -> bool:
            return manager.ready()

        await wait_for(ready, what="the manager ready", interval=0.05)
        try:
            yield manager, requests
        finally:
            tg.cancel_scope.cancel()


def idle(manager: Manager) -> Callable[[], Awaitable[bool]]:
    """A probe for `wait_for`: nothing queued, nothing running."""

    async def idle() -> bool:
        return manager.actors.depth == 0 and manager.actors.busy == 0

    return idle


def runs_above(manager: Manager, runs: int) -> Callable[[], Awaitable[bool]]:
    """A probe for `wait_for`: more than `runs` reconciles have run (poll it finely: the runtime's
    timings are 10-100 ms)."""

    async def more_reconciles() -> bool:
        return manager.actors.stats.runs > runs

    return more_reconciles


def count_reconciles(manager: Manager) -> Counter[str]:
    """Reconciles per Instance key from now on (wraps the manager's reconciler)."""
    counts: Counter[str] = Counter()
    inner = manager.actors.reconcile

    async def counting(key: str) -> Any:
        counts[key] += 1
        return await inner(key)

    manager.actors.reconcile = counting
    return counts


async def wait_quiet(manager: Manager, *, quiet: float = 2.0, timeout: float = 60.0) -> None:
    """Wait until no reconcile has started for `quiet` seconds and none is queued or running.

    `idle` can hold for a moment between two runs: the echo of a write still on its way, an event
    the applier could not attribute (treated as news), a retry due shortly. Counts taken from a
    quiet manager are about what the test does next, not the tail of what came before. A manager
    that never settles (a retry storm) fails the wait, with the runs it saw."""
    actors = manager.actors
    last_runs, last_change = actors.stats.runs, time.monotonic()

    async def settled() -> bool | NotYet:
        nonlocal last_runs, last_change
        now = time.monotonic()
        if actors.stats.runs != last_runs or actors.depth or actors.busy:
            last_runs, last_change = actors.stats.runs, now
        if now - last_change >= quiet:
            return True
        return NotYet(
            f"{actors.stats.runs} runs, the last change {now - last_change:.1f} s ago; {actors.depth} waiting, "
            f"{actors.busy} running, {actors.parked} parked"
        )

    await wait_for(settled, what=f"no reconcile for {quiet:g} s", timeout=timeout, interval=0.05)


def record_requests(manager: Manager) -> list[tuple[str, str, int]]:
    """(verb, resource, status code) of every request the manager's client makes from now on; the
    resource as requests are labelled, `str(Resource)` (e.g. `services.core/v1`, with `/status`
    for a status write)."""
    seen: list[tuple[str, str, int]] = []
    manager.client.observe(lambda verb, resource, code, seconds: seen.append((verb, resource, code)))
    return seen
