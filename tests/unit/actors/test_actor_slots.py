"""The actor system's reconcile slots in-process: every slot is used while runs are starting, and a
key gets one actor however it was queued."""

from __future__ import annotations

from collections import Counter

import anyio
import anyio.lowlevel

from actors.manager.options import ManagerOptions
from actors.queue.actor_system import Action, ActorSystem
from tests.support.clock import FakeClock
from tests.support.runtime import system_running

# The Manager's defaults: the one definition of the runtime's tunables.
OPTIONS = ManagerOptions()


async def test_every_slot_is_used_while_the_first_runs_are_still_taking_theirs() -> None:
    """A limiter counts a token as borrowed before its acquire returns: a slot must not count
    twice then (once as taken, once as promised to an actor not yet running), or a key queued in
    that moment waits until a run ends, and with every run held (as at a gate, or by a slow API
    server) nothing ends. Seen as a conformance test's backlog stuck one short of its slots."""
    clock = FakeClock()
    gate = anyio.Event()
    running: set[str] = set()

    async def reconcile(key: str) -> Action:
        running.add(key)
        await gate.wait()
        return Action()

    system = ActorSystem(
        reconcile, limiter=OPTIONS.rate_limiter(), max_concurrent=4, reserved=0, idle_timeout=10.0, clock=clock
    )
    async with system_running(system):
        for i in range(3):
            system.notify(f"ns/first-{i}")
        await anyio.lowlevel.checkpoint()  # the three actors are inside their slots' acquire
        for i in range(10):
            system.notify(f"ns/next-{i}")
        await clock.settle()
        assert (len(running), system.busy, system.depth) == (4, 4, 9)
        gate.set()
        await clock.until(lambda: len(running) == 13 and system.depth == 0 and system.busy == 0)


async def test_a_queued_key_turned_urgent_gets_one_actor_and_one_run() -> None:
    """A bulk key waiting in the backlog that a user's change makes urgent takes the reserved slot
    and leaves the backlog: admission must not give it a second actor (two reconciles of one
    Instance at once)."""
    clock = FakeClock()
    gate = anyio.Event()
    runs: Counter[str] = Counter()
    running: set[str] = set()
    overlaps: list[str] = []

    async def reconcile(key: str) -> Action:
        runs[key] += 1
        if key in running:
            overlaps.append(key)
        running.add(key)
        if key == "ns/bulk-0":
            await gate.wait()
        else:
            await clock.sleep(1.0)
        running.discard(key)
        return Action()

    system = ActorSystem(
        reconcile, limiter=OPTIONS.rate_limiter(), max_concurrent=2, reserved=1, idle_timeout=10.0, clock=clock
    )
    async with system_running(system):
        system.notify("ns/bulk-0")  # takes the one bulk slot and holds it
        system.notify("ns/bulk-1")  # waits in the backlog
        await clock.settle()
        system.notify("ns/bulk-1", urgent=True)  # a user's edit: the reserved slot, at once
        await clock.settle()
        assert running == {"ns/bulk-0", "ns/bulk-1"}
        gate.set()  # bulk-0 ends, and its slot goes to whatever the backlog still holds
        await clock.until(lambda: not running and system.depth == 0)
        await clock.advance(2.0)
    assert overlaps == []
    assert runs == {"ns/bulk-0": 1, "ns/bulk-1": 1}
