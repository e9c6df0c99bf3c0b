"""The actor system in-process: coalescing, exclusivity per key, isolation, backoff, idle exit, parking."""

from __future__ import annotations

import itertools
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.lowlevel

from actors import actor as actor_module
from actors.actor import ActorSystem, Outcome
from actors.ratelimit import ExponentialBackoff, RateLimiter, TokenBucket
from tests.support.runtime import until


@asynccontextmanager
async def system_running(system: ActorSystem) -> AsyncIterator[None]:
    """The system's run loop in the background for the block; stopped when the block ends."""
    async with anyio.create_task_group() as tg:
        tg.start_soon(system.run)
        await anyio.lowlevel.checkpoint()
        try:
            yield
        finally:
            tg.cancel_scope.cancel()


async def test_burst_during_slow_reconcile_yields_exactly_one_more_run() -> None:
    runs: list[str] = []
    release = anyio.Event()
    started = anyio.Event()

    async def reconcile(key: str) -> Outcome:
        runs.append(key)
        if len(runs) == 1:
            started.set()
            await release.wait()
        return Outcome()

    system = ActorSystem(reconcile, idle_timeout=0.2)
    async with system_running(system):
        system.notify("ns/a")
        await started.wait()
        for _ in range(100):
            system.notify("ns/a")
        release.set()
        await until(lambda: not system.is_live("ns/a"))
    assert runs == ["ns/a", "ns/a"]


async def test_one_key_is_never_reconciled_concurrently_under_load() -> None:
    running: Counter[str] = Counter()
    overlaps: list[str] = []
    runs: Counter[str] = Counter()

    async def reconcile(key: str) -> Outcome:
        running[key] += 1
        if running[key] > 1:
            overlaps.append(key)
        runs[key] += 1
        await anyio.sleep(0.001)
        running[key] -= 1
        return Outcome()

    system = ActorSystem(reconcile, max_concurrent=8, idle_timeout=0.2)
    async with system_running(system):
        for round_ in range(50):
            for i in range(20):
                system.notify(f"ns/{i}")
            if round_ % 5 == 0:
                await anyio.sleep(0.002)
        await until(lambda: not system.live, timeout=10)
    assert overlaps == []
    assert set(runs) == {f"ns/{i}" for i in range(20)}
    # Coalescing: far fewer runs than the 50 events each key received.
    assert all(1 <= n < 50 for n in runs.values())


async def test_a_raising_actor_leaves_the_others_running() -> None:
    done: list[str] = []

    async def reconcile(key: str) -> Outcome:
        if key == "ns/bad":
            raise RuntimeError("boom")
        await anyio.sleep(0.01)
        done.append(key)
        return Outcome()

    limiter = RateLimiter(ExponentialBackoff(base=10.0), TokenBucket())
    system = ActorSystem(reconcile, limiter=limiter, idle_timeout=0.1)
    async with system_running(system):
        system.notify("ns/bad")
        for i in range(5):
            system.notify(f"ns/good-{i}")
        await until(lambda: len(done) >= 5)
        # The failing key waits out its backoff (as an actor, or parked once idle).
        assert system.is_live("ns/bad") or system.parked == 1
        assert limiter.failures("ns/bad") == 1
    assert sorted(done) == [f"ns/good-{i}" for i in range(5)]
    assert system.stats.failures == 1


async def test_failure_retries_with_backoff_and_success_resets_it() -> None:
    attempts: list[float] = []

    async def reconcile(key: str) -> Outcome:
        attempts.append(anyio.current_time())
        return Outcome(failed=len(attempts) < 4)

    limiter = RateLimiter(ExponentialBackoff(base=0.02), TokenBucket())
    system = ActorSystem(reconcile, limiter=limiter, idle_timeout=0.1)
    async with system_running(system):
        system.notify("ns/a")
        await until(lambda: len(attempts) >= 4 and not system.is_live("ns/a"), step=0.005)
    gaps = [b - a for a, b in itertools.pairwise(attempts)]
    assert len(attempts) == 4
    assert gaps[0] >= 0.02 and gaps[1] >= 0.04 and gaps[2] >= 0.08
    assert limiter.failures("ns/a") == 0


async def test_requeue_after_runs_again_and_idle_actor_exits() -> None:
    runs: list[str] = []

    async def reconcile(key: str) -> Outcome:
        runs.append(key)
        return Outcome(requeue_after=0.05) if len(runs) == 1 else Outcome()

    system = ActorSystem(reconcile, idle_timeout=0.05)
    async with system_running(system):
        system.notify("ns/a")
        await until(lambda: len(runs) >= 2 and not system.is_live("ns/a"))
        assert system.live == 0
        system.notify("ns/a")  # recreated on demand
        await until(lambda: len(runs) >= 3)
    assert runs == ["ns/a"] * 3
    assert system.stats.started == 2


async def test_global_cap_on_concurrent_reconciles() -> None:
    current = 0
    peak = 0

    async def reconcile(key: str) -> Outcome:
        nonlocal current, peak
        current += 1
        peak = max(peak, current)
        await anyio.sleep(0.01)
        current -= 1
        return Outcome()

    system = ActorSystem(reconcile, max_concurrent=3, idle_timeout=0.05)
    async with system_running(system):
        for i in range(30):
            system.notify(f"ns/{i}")
        await until(lambda: not system.live)
    assert peak == 3
    assert system.stats.runs == 30


async def test_follow_up_run_waits_for_a_burst_to_settle() -> None:
    runs: list[float] = []
    started = anyio.Event()

    async def reconcile(key: str) -> Outcome:
        runs.append(anyio.current_time())
        started.set()
        await anyio.sleep(0.02)
        return Outcome()

    system = ActorSystem(reconcile, idle_timeout=0.1, settle=0.05, max_settle=1.0)
    async with system_running(system):
        system.notify("ns/a")
        await started.wait()
        # Ten edits spread over ~0.2 s, the first one while the first run is under way.
        for _ in range(10):
            system.notify("ns/a")
            await anyio.sleep(0.02)
        await until(lambda: not system.is_live("ns/a"))
    assert len(runs) == 2  # the burst cost one more run, not ten


async def test_settling_is_bounded_by_max_settle() -> None:
    runs: list[float] = []

    async def reconcile(key: str) -> Outcome:
        runs.append(anyio.current_time())
        return Outcome()

    system = ActorSystem(reconcile, idle_timeout=0.1, settle=0.05, max_settle=0.2)
    async with system_running(system):
        system.notify("ns/a")
        # An endless stream of events must not starve the Instance: it runs at least every ~0.2 s.
        for _ in range(60):
            system.notify("ns/a")
            await anyio.sleep(0.01)
    assert len(runs) >= 3


async def test_a_run_due_after_the_idle_timeout_is_parked_not_kept_as_an_actor() -> None:
    runs: list[float] = []

    async def reconcile(key: str) -> Outcome:
        runs.append(time.monotonic())
        return Outcome(requeue_after=0.3) if len(runs) == 1 else Outcome()

    system = ActorSystem(reconcile, idle_timeout=0.05)
    async with system_running(system):
        system.notify("ns/a")
        await until(lambda: not system.is_live("ns/a"))
        assert (system.live, system.parked, len(runs)) == (0, 1, 1)
        await until(lambda: len(runs) >= 2 and not system.is_live("ns/a"))
    assert runs[1] - runs[0] >= 0.3  # ran when due, not when parked
    assert (system.parked, system.stats.started) == (0, 2)


async def test_an_event_for_a_parked_key_runs_it_now_and_drops_the_timer() -> None:
    runs: list[str] = []

    async def reconcile(key: str) -> Outcome:
        runs.append(key)
        return Outcome(requeue_after=3600) if len(runs) == 1 else Outcome()

    system = ActorSystem(reconcile, idle_timeout=0.02)
    async with system_running(system):
        system.notify("ns/a")
        await until(lambda: system.parked > 0)
        system.notify("ns/a")
        await until(lambda: len(runs) >= 2)
    assert runs == ["ns/a", "ns/a"]
    assert system.parked == 0


async def test_settling_survives_the_clock_passing_the_quiet_point_between_reads(monkeypatch: Any) -> None:
    """The actor's clock advances 40 ms per read, settle is 100 ms: the quiet point is still ahead
    when checked and already past one read later. A second read for the sleep would give a
    negative delay, which anyio rejects (it once took the whole system down)."""

    class SteppingClock:
        now = 1000.0

        def monotonic(self) -> float:
            self.now += 0.04
            return self.now

    monkeypatch.setattr(actor_module, "time", SteppingClock())
    runs: list[str] = []
    second_event_sent = anyio.Event()

    async def reconcile(key: str) -> Outcome:
        runs.append(key)
        if len(runs) == 1:
            system.notify(key)  # an event while running: a follow-up run, after settling
            second_event_sent.set()
        return Outcome()

    system = ActorSystem(reconcile, idle_timeout=10.0, settle=0.1, max_settle=10.0)
    async with system_running(system):
        system.notify("ns/a")
        await until(lambda: len(runs) >= 2)
    assert second_event_sent.is_set() and runs == ["ns/a", "ns/a"]


async def test_keys_beyond_the_free_slots_wait_in_a_backlog_without_an_actor() -> None:
    order: list[str] = []

    async def reconcile(key: str) -> Outcome:
        order.append(key)
        await anyio.sleep(0.005)
        return Outcome()

    keys = [f"ns/{i:02d}" for i in range(50)]
    system = ActorSystem(reconcile, max_concurrent=2, idle_timeout=10.0)
    async with system_running(system):
        for key in keys:
            system.notify(key)
        for key in keys[10:20]:
            system.notify(key)  # already waiting: no second entry, no second run
        assert (system.live, system.depth) == (2, 50)
        await until(lambda: len(order) >= 50 and system.depth == 0)
        live_after = system.live
    assert order == keys  # first come, first served, each once
    assert live_after == 50  # all ran, then idle (idle_timeout not reached)


async def test_a_defect_in_one_actors_loop_parks_a_retry_and_spares_the_others(monkeypatch: Any) -> None:
    runs: Counter[str] = Counter()

    async def reconcile(key: str) -> Outcome:
        runs[key] += 1
        if runs[key] == 1:
            system.notify(key)  # an event during the run: the loop goes on to settle the burst
        return Outcome()

    limiter = RateLimiter(ExponentialBackoff(base=0.05), TokenBucket())
    system = ActorSystem(reconcile, limiter=limiter, idle_timeout=0.05)
    original = system._settle_burst
    broken_once = {"ns/bad"}

    async def settle(actor: Any) -> None:
        if actor.key in broken_once:
            broken_once.clear()
            raise RuntimeError("defect")
        await original(actor)

    monkeypatch.setattr(system, "_settle_burst", settle)
    async with system_running(system):
        for key in ("ns/bad", "ns/good"):
            system.notify(key)
        await until(lambda: runs["ns/bad"] >= 2 and runs["ns/good"] >= 2)
    # The defect cost ns/bad one parked retry; ns/good ran its follow-up as usual.
    assert system.stats.failures == 1
    assert runs == {"ns/bad": 2, "ns/good": 2}
