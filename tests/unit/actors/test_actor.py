"""The actor system in-process: coalescing, exclusivity per key, isolation, backoff, idle exit."""

from __future__ import annotations

import itertools
from collections import Counter

import anyio
import anyio.lowlevel

from actors.actor import ActorSystem, Outcome
from actors.ratelimit import ExponentialBackoff, RateLimiter, TokenBucket


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
    async with anyio.create_task_group() as tg:
        tg.start_soon(system.run)
        await anyio.lowlevel.checkpoint()
        system.notify("ns/a")
        await started.wait()
        for _ in range(100):
            system.notify("ns/a")
        release.set()
        with anyio.fail_after(5):
            while system.is_live("ns/a"):
                await anyio.sleep(0.01)
        tg.cancel_scope.cancel()
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
    async with anyio.create_task_group() as tg:
        tg.start_soon(system.run)
        await anyio.lowlevel.checkpoint()
        for round_ in range(50):
            for i in range(20):
                system.notify(f"ns/{i}")
            if round_ % 5 == 0:
                await anyio.sleep(0.002)
        with anyio.fail_after(10):
            while system.live:
                await anyio.sleep(0.01)
        tg.cancel_scope.cancel()
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
    async with anyio.create_task_group() as tg:
        tg.start_soon(system.run)
        await anyio.lowlevel.checkpoint()
        system.notify("ns/bad")
        for i in range(5):
            system.notify(f"ns/good-{i}")
        with anyio.fail_after(5):
            while len(done) < 5:
                await anyio.sleep(0.01)
        # The failing key is kept alive, waiting out its backoff; the good ones went idle.
        assert system.is_live("ns/bad")
        assert limiter.failures("ns/bad") == 1
        tg.cancel_scope.cancel()
    assert sorted(done) == [f"ns/good-{i}" for i in range(5)]
    assert system.stats.failures == 1


async def test_failure_retries_with_backoff_and_success_resets_it() -> None:
    attempts: list[float] = []

    async def reconcile(key: str) -> Outcome:
        attempts.append(anyio.current_time())
        return Outcome(failed=len(attempts) < 4)

    limiter = RateLimiter(ExponentialBackoff(base=0.02), TokenBucket())
    system = ActorSystem(reconcile, limiter=limiter, idle_timeout=0.1)
    async with anyio.create_task_group() as tg:
        tg.start_soon(system.run)
        await anyio.lowlevel.checkpoint()
        system.notify("ns/a")
        with anyio.fail_after(5):
            while len(attempts) < 4 or system.is_live("ns/a"):
                await anyio.sleep(0.005)
        tg.cancel_scope.cancel()
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
    async with anyio.create_task_group() as tg:
        tg.start_soon(system.run)
        await anyio.lowlevel.checkpoint()
        system.notify("ns/a")
        with anyio.fail_after(5):
            while system.is_live("ns/a") or len(runs) < 2:
                await anyio.sleep(0.01)
        assert system.live == 0
        system.notify("ns/a")  # recreated on demand
        with anyio.fail_after(5):
            while len(runs) < 3:
                await anyio.sleep(0.01)
        tg.cancel_scope.cancel()
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
    async with anyio.create_task_group() as tg:
        tg.start_soon(system.run)
        await anyio.lowlevel.checkpoint()
        for i in range(30):
            system.notify(f"ns/{i}")
        with anyio.fail_after(5):
            while system.live:
                await anyio.sleep(0.01)
        tg.cancel_scope.cancel()
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
    async with anyio.create_task_group() as tg:
        tg.start_soon(system.run)
        await anyio.lowlevel.checkpoint()
        system.notify("ns/a")
        await started.wait()
        # Ten edits spread over ~0.2 s, the first one while the first run is under way.
        for _ in range(10):
            system.notify("ns/a")
            await anyio.sleep(0.02)
        with anyio.fail_after(5):
            while system.is_live("ns/a"):
                await anyio.sleep(0.01)
        tg.cancel_scope.cancel()
    assert len(runs) == 2  # the burst cost one more run, not ten


async def test_settling_is_bounded_by_max_settle() -> None:
    runs: list[float] = []

    async def reconcile(key: str) -> Outcome:
        runs.append(anyio.current_time())
        return Outcome()

    system = ActorSystem(reconcile, idle_timeout=0.1, settle=0.05, max_settle=0.2)
    async with anyio.create_task_group() as tg:
        tg.start_soon(system.run)
        await anyio.lowlevel.checkpoint()
        system.notify("ns/a")
        # An endless stream of events must not starve the Instance: it runs at least every ~0.2 s.
        for _ in range(60):
            system.notify("ns/a")
            await anyio.sleep(0.01)
        tg.cancel_scope.cancel()
    assert len(runs) >= 3
