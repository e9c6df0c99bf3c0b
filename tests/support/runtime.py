"""Run the real runtime (Manager, or the bare ActorSystem) inside a test's event loop, and wait for
conditions."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio

from actors.client import KubeClient
from actors.interface import Provider
from actors.manager.manager import Manager, ManagerOptions
from actors.manager.shared import SharedActors
from actors.queue.actor_system import ActorSystem
from actors.serve.endpoints import Endpoints


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
    provider: Provider,
    namespace: str,
    *,
    shared: SharedActors | None = None,
    client: KubeClient | None = None,
    **options: Any,
) -> AsyncIterator[tuple[Manager, Counter[str]]]:
    """The real Manager for `provider`, watching only `namespace`. Pass the `client` that built
    the provider's shared actors (e.g. `build_provider(env, client)`) so both talk through it."""
    client = client or await KubeClient.connect(str(controlplane.kubeconfig))
    requests: Counter[str] = Counter()
    client.observe(lambda verb, resource, code, seconds: requests.update([verb]))
    options.setdefault("endpoints", Endpoints(metrics_port=None, health_port=None, validation_port=None))
    opts = ManagerOptions(namespaces=[namespace], **options)
    manager = Manager(client, provider, options=opts, shared=shared)
    async with client, anyio.create_task_group() as tg:
        tg.start_soon(manager.run)
        with anyio.fail_after(30):
            while not manager.ready():
                await anyio.sleep(0.05)
        try:
            yield manager, requests
        finally:
            tg.cancel_scope.cancel()


async def wait_for(predicate: Callable[[], Awaitable[Any]], timeout: float = 30.0) -> Any:
    with anyio.fail_after(timeout):
        while True:
            value = await predicate()
            if value:
                return value
            await anyio.sleep(0.1)


async def until(condition: Callable[[], bool], timeout: float = 5.0, step: float = 0.01) -> None:
    """Poll a cheap, synchronous condition every `step` seconds (fine enough for the runtime's
    10-100 ms timings, which `wait_for`'s 0.1 s would blur); fail the test after `timeout`."""
    with anyio.fail_after(timeout):
        while not condition():
            await anyio.sleep(step)


def idle(manager: Manager) -> Callable[[], Awaitable[bool]]:
    async def idle() -> bool:
        return manager.actors.depth == 0 and manager.actors.busy == 0

    return idle


def count_reconciles(manager: Manager) -> Counter[str]:
    """Reconciles per Instance key from now on (wraps the manager's reconciler)."""
    counts: Counter[str] = Counter()
    inner = manager.actors.reconcile

    async def counting(key: str) -> Any:
        counts[key] += 1
        return await inner(key)

    manager.actors.reconcile = counting
    return counts
