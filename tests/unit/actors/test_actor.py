"""The actor system in-process, on a fake clock: coalescing, exclusivity per key, isolation, backoff,
idle exit, parking. No test sleeps on the wall clock; time moves when the test moves it."""

from __future__ import annotations

import itertools
from collections import Counter
from typing import Any

import anyio
import anyio.lowlevel

from actors.manager.options import ManagerOptions
from actors.queue.actor_system import Action, ActorSystem, Reconcile
from actors.queue.ratelimit import Backoff, ExponentialBackoff, RateLimiter, TokenBucket
from tests.support.clock import FakeClock
from tests.support.runtime import system_running

# The Manager's defaults: the one definition of the runtime's tunables.
OPTIONS = ManagerOptions()


def actor_system(
    reconcile: Reconcile, clock: FakeClock, *, limiter: RateLimiter | None = None, **settings: Any
) -> ActorSystem:
    """An actor system with the Manager's defaults but for the `settings` a test is about, its time
    on the test's clock."""
    settings.setdefault("max_concurrent", OPTIONS.max_concurrent)
    return ActorSystem(reconcile, limiter=limiter or OPTIONS.rate_limiter(), clock=clock, **settings)


async def test_burst_during_slow_reconcile_yields_exactly_one_more_run() -> None:
    clock = FakeClock()
    runs: list[str] = []
    release = anyio.Event()
    started = anyio.Event()

    async def reconcile(key: str) -> Action:
        runs.append(key)
        if len(runs) == 1:
            started.set()
            await release.wait()
        return Action()

    system = actor_system(reconcile, clock, idle_timeout=0.2)
    async with system_running(system):
        system.notify("ns/a")
        await started.wait()
        for _ in range(100):
            system.notify("ns/a")
        release.set()
        await clock.until(lambda: not system.is_live("ns/a"))
    assert runs == ["ns/a", "ns/a"]


async def test_one_key_is_never_reconciled_concurrently_under_load() -> None:
    clock = FakeClock()
    running: Counter[str] = Counter()
    overlaps: list[str] = []
    runs: Counter[str] = Counter()

    async def reconcile(key: str) -> Action:
        running[key] += 1
        if running[key] > 1:
            overlaps.append(key)
        runs[key] += 1
        await clock.sleep(0.001)
        running[key] -= 1
        return Action()

    system = actor_system(reconcile, clock, max_concurrent=8, idle_timeout=0.2)
    async with system_running(system):
        for round_ in range(50):
            for i in range(20):
                system.notify(f"ns/{i}")
            if round_ % 5 == 0:
                await clock.advance(0.002)
        await clock.until(lambda: not system.live, timeout=10)
    assert overlaps == []
    assert set(runs) == {f"ns/{i}" for i in range(20)}
    # Coalescing: far fewer runs than the 50 events each key received.
    assert all(1 <= n < 50 for n in runs.values())


async def test_a_raising_actor_leaves_the_others_running() -> None:
    clock = FakeClock()
    done: list[str] = []

    async def reconcile(key: str) -> Action:
        if key == "ns/bad":
            raise RuntimeError("boom")
        await clock.sleep(0.01)
        done.append(key)
        return Action()

    limiter = RateLimiter(
        ExponentialBackoff(Backoff(10.0, OPTIONS.backoff_cap)), TokenBucket(OPTIONS.qps, OPTIONS.burst, clock)
    )
    system = actor_system(reconcile, clock, limiter=limiter, idle_timeout=0.1)
    async with system_running(system):
        system.notify("ns/bad")
        for i in range(5):
            system.notify(f"ns/good-{i}")
        await clock.until(lambda: len(done) >= 5)
        # The failing key waits out its backoff (as an actor, or parked once idle).
        assert system.is_live("ns/bad") or system.parked == 1
        assert limiter.failures("ns/bad") == 1
    assert sorted(done) == [f"ns/good-{i}" for i in range(5)]
    assert system.stats.failures == 1


async def test_failure_retries_with_backoff_and_success_resets_it() -> None:
    clock = FakeClock()
    attempts: list[float] = []

    async def reconcile(key: str) -> Action:
        attempts.append(clock.now())
        return Action(failed=len(attempts) < 4)

    limiter = RateLimiter(
        ExponentialBackoff(Backoff(0.02, OPTIONS.backoff_cap)), TokenBucket(OPTIONS.qps, OPTIONS.burst, clock)
    )
    system = actor_system(reconcile, clock, limiter=limiter, idle_timeout=0.1)
    async with system_running(system):
        system.notify("ns/a")
        await clock.until(lambda: len(attempts) >= 4 and not system.is_live("ns/a"))
    gaps = [b - a for a, b in itertools.pairwise(attempts)]
    assert len(attempts) == 4
    assert gaps[0] >= 0.02 and gaps[1] >= 0.04 and gaps[2] >= 0.08
    assert limiter.failures("ns/a") == 0


async def test_requeue_after_runs_again_and_idle_actor_exits() -> None:
    clock = FakeClock()
    runs: list[str] = []

    async def reconcile(key: str) -> Action:
        runs.append(key)
        return Action(requeue_after=0.05) if len(runs) == 1 else Action()

    system = actor_system(reconcile, clock, idle_timeout=0.05)
    async with system_running(system):
        system.notify("ns/a")
        await clock.until(lambda: len(runs) >= 2 and not system.is_live("ns/a"))
        assert system.live == 0
        system.notify("ns/a")  # recreated on demand
        await clock.until(lambda: len(runs) >= 3)
    assert runs == ["ns/a"] * 3
    assert system.stats.started == 2


async def test_global_cap_on_concurrent_reconciles() -> None:
    clock = FakeClock()
    current = 0
    peak = 0

    async def reconcile(key: str) -> Action:
        nonlocal current, peak
        current += 1
        peak = max(peak, current)
        await clock.sleep(0.01)
        current -= 1
        return Action()

    system = actor_system(reconcile, clock, max_concurrent=3, reserved=0, idle_timeout=0.05)
    async with system_running(system):
        for i in range(30):
            system.notify(f"ns/{i}")
        await clock.until(lambda: not system.live)
    assert peak == 3
    assert system.stats.runs == 30


async def test_follow_up_run_waits_for_a_burst_to_settle() -> None:
    clock = FakeClock()
    runs: list[float] = []
    started = anyio.Event()

    async def reconcile(key: str) -> Action:
        runs.append(clock.now())
        started.set()
        await clock.sleep(0.02)
        return Action()

    system = actor_system(reconcile, clock, idle_timeout=0.1, settle=0.05, max_settle=1.0)
    async with system_running(system):
        system.notify("ns/a")
        await started.wait()
        # Ten edits spread over ~0.2 s, the first one while the first run is under way.
        for _ in range(10):
            system.notify("ns/a")
            await clock.advance(0.02)
        await clock.until(lambda: not system.is_live("ns/a"))
    assert len(runs) == 2  # the burst cost one more run, not ten


async def test_settling_is_bounded_by_max_settle() -> None:
    clock = FakeClock()
    runs: list[float] = []

    async def reconcile(key: str) -> Action:
        runs.append(clock.now())
        return Action()

    system = actor_system(reconcile, clock, idle_timeout=0.1, settle=0.05, max_settle=0.2)
    async with system_running(system):
        system.notify("ns/a")
        # An endless stream of events must not starve the Instance: it runs at least every ~0.2 s.
        for _ in range(60):
            system.notify("ns/a")
            await clock.advance(0.01)
    assert len(runs) >= 3


async def test_a_run_due_after_the_idle_timeout_is_parked_not_kept_as_an_actor() -> None:
    clock = FakeClock()
    runs: list[float] = []

    async def reconcile(key: str) -> Action:
        runs.append(clock.now())
        return Action(requeue_after=0.3) if len(runs) == 1 else Action()

    system = actor_system(reconcile, clock, idle_timeout=0.05)
    async with system_running(system):
        system.notify("ns/a")
        await clock.until(lambda: not system.is_live("ns/a"))
        assert (system.live, system.parked, len(runs)) == (0, 1, 1)
        await clock.until(lambda: len(runs) >= 2 and not system.is_live("ns/a"))
    assert runs[1] - runs[0] >= 0.3  # ran when due, not when parked
    assert (system.parked, system.stats.started) == (0, 2)


async def test_an_event_for_a_parked_key_runs_it_now_and_drops_the_timer() -> None:
    clock = FakeClock()
    runs: list[str] = []

    async def reconcile(key: str) -> Action:
        runs.append(key)
        return Action(requeue_after=3600) if len(runs) == 1 else Action()

    system = actor_system(reconcile, clock, idle_timeout=0.02)
    async with system_running(system):
        system.notify("ns/a")
        await clock.until(lambda: system.parked > 0)
        system.notify("ns/a")
        await clock.until(lambda: len(runs) >= 2)
    assert runs == ["ns/a", "ns/a"]
    assert system.parked == 0


async def test_settling_survives_the_clock_passing_the_quiet_point_between_reads() -> None:
    """The actor's clock advances 40 ms per read, settle is 100 ms: the quiet point is still ahead
    when checked and already past one read later. A second read for the sleep would give a
    negative delay, which anyio rejects (it once took the whole system down); the fake clock
    refuses it too."""
    clock = FakeClock(start=1000.0, step=0.04)
    runs: list[str] = []
    second_event_sent = anyio.Event()

    async def reconcile(key: str) -> Action:
        runs.append(key)
        if len(runs) == 1:
            system.notify(key)  # an event while running: a follow-up run, after settling
            second_event_sent.set()
        return Action()

    system = actor_system(
        reconcile, clock, limiter=OPTIONS.rate_limiter(clock), idle_timeout=10.0, settle=0.1, max_settle=10.0
    )
    async with system_running(system):
        system.notify("ns/a")
        await clock.until(lambda: len(runs) >= 2)
    assert second_event_sent.is_set() and runs == ["ns/a", "ns/a"]
    assert system.stats.failures == 0  # not the retry after a defect in the actor's loop


async def test_keys_beyond_the_free_slots_wait_in_a_backlog_without_an_actor() -> None:
    clock = FakeClock()
    order: list[str] = []

    async def reconcile(key: str) -> Action:
        order.append(key)
        await clock.sleep(0.005)
        return Action()

    keys = [f"ns/{i:02d}" for i in range(50)]
    system = actor_system(reconcile, clock, max_concurrent=2, reserved=0, idle_timeout=10.0)
    async with system_running(system):
        for key in keys:
            system.notify(key)
        for key in keys[10:20]:
            system.notify(key)  # already waiting: no second entry, no second run
        assert (system.live, system.depth) == (2, 50)
        await clock.until(lambda: len(order) >= 50 and system.depth == 0)
        live_after = system.live
    assert order == keys  # first come, first served, each once
    assert live_after == 50  # all ran, then idle (idle_timeout not reached)


async def test_a_defect_in_one_actors_loop_parks_a_retry_and_spares_the_others(monkeypatch: Any) -> None:
    clock = FakeClock()
    runs: Counter[str] = Counter()

    async def reconcile(key: str) -> Action:
        runs[key] += 1
        if runs[key] == 1:
            system.notify(key)  # an event during the run: the loop goes on to settle the burst
        return Action()

    limiter = RateLimiter(
        ExponentialBackoff(Backoff(0.05, OPTIONS.backoff_cap)), TokenBucket(OPTIONS.qps, OPTIONS.burst, clock)
    )
    system = actor_system(reconcile, clock, limiter=limiter, idle_timeout=0.05)
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
        await clock.until(lambda: runs["ns/bad"] >= 2 and runs["ns/good"] >= 2)
    # The defect cost ns/bad one parked retry; ns/good ran its follow-up as usual.
    assert system.stats.failures == 1
    assert runs == {"ns/bad": 2, "ns/good": 2}


async def test_an_urgent_key_goes_ahead_of_the_bulk_backlog() -> None:
    clock = FakeClock()
    order: list[str] = []

    async def reconcile(key: str) -> Action:
        order.append(key)
        await clock.sleep(0.01)
        return Action()

    system = actor_system(reconcile, clock, max_concurrent=1, idle_timeout=10.0)
    async with system_running(system):
        for i in range(5):
            system.notify(f"ns/bulk-{i}")
        system.notify("ns/bulk-3", urgent=True)  # a user's change to a key already queued
        system.notify("ns/edit", urgent=True)
        await clock.until(lambda: len(order) == 6)
    # The one running first finishes; then the urgent keys, in arrival order; then the rest.
    assert order == ["ns/bulk-0", "ns/bulk-3", "ns/edit", "ns/bulk-1", "ns/bulk-2", "ns/bulk-4"]


async def test_bulk_runs_leave_the_reserved_slot_to_a_users_change() -> None:
    clock = FakeClock()
    started: list[str] = []
    running: set[str] = set()
    peak = 0
    waits: list[tuple[bool, float]] = []

    async def reconcile(key: str) -> Action:
        nonlocal peak
        started.append(key)
        running.add(key)
        peak = max(peak, len(running))
        await clock.sleep(1.0)
        running.discard(key)
        return Action()

    def on_wait(seconds: float, urgent: bool) -> None:
        waits.append((urgent, seconds))

    runs: list[tuple[bool, float]] = []
    system = actor_system(
        reconcile,
        clock,
        limiter=OPTIONS.rate_limiter(clock),
        max_concurrent=4,
        reserved=1,
        idle_timeout=10.0,
        on_wait=on_wait,
        on_run=lambda seconds, urgent: runs.append((urgent, seconds)),
    )
    async with system_running(system):
        for i in range(9):
            system.notify(f"ns/bulk-{i}")
        await clock.settle()
        assert len(running) == 3  # bulk work leaves the fourth slot free
        await clock.advance(0.5)
        system.notify("ns/bulk-1", urgent=True)  # running: its next run is urgent
        system.notify("ns/edit", urgent=True)  # queued behind nobody: the reserved slot
        await clock.settle()
        assert started[3] == "ns/edit" and clock.now() == 0.5
        await clock.until(lambda: len(started) == 11)
    assert peak == 4
    assert (True, 0.0) in waits  # ns/edit started at once
    assert all(seconds <= 0.5 + 0.01 for urgent, seconds in waits if urgent)  # bulk-1's follow-up too
    assert max(seconds for urgent, seconds in waits if not urgent) >= 2.0  # bulk-6..8 waited two rounds
    # Each finished run's own duration, by the same priority: every reconcile here takes a second.
    assert len(runs) >= 8 and all(abs(seconds - 1.0) < 0.01 for _, seconds in runs), runs
    assert any(urgent for urgent, _ in runs) and not all(urgent for urgent, _ in runs)


async def test_a_derived_objects_events_wait_for_the_keys_backoff_and_a_users_change_does_not() -> None:
    clock = FakeClock()
    runs: list[float] = []

    async def reconcile(key: str) -> Action:
        runs.append(clock.now())
        return Action(failed=True)  # a conflict that persists

    limiter = RateLimiter(ExponentialBackoff(Backoff(1.0, 100.0)), TokenBucket(OPTIONS.qps, OPTIONS.burst, clock))
    system = actor_system(reconcile, clock, max_concurrent=4, limiter=limiter, idle_timeout=60.0)
    async with system_running(system):
        system.notify("ns/a")
        await clock.until(lambda: len(runs) == 1)
        for _ in range(20):  # another writer's changes of the derived object, every 50 ms
            system.notify("ns/a", deferrable=True)
            await clock.advance(0.04)
        assert len(runs) == 1  # all of them waited for the backoff (1 s)
        await clock.until(lambda: len(runs) == 2)
        assert runs[1] - runs[0] >= 1.0
        system.notify("ns/a", urgent=True)  # the user edits the Instance: at once
        await clock.until(lambda: len(runs) == 3, timeout=0.5)


async def test_a_take_back_that_keeps_recurring_backs_off_through_the_quiet_passes_between() -> None:
    clock = FakeClock()
    runs: list[float] = []
    edited = [True]

    async def reconcile(key: str) -> Action:
        runs.append(clock.now())
        took_back, edited[0] = edited[0], False
        return Action(back_off=took_back)

    limiter = RateLimiter(ExponentialBackoff(Backoff(0.005, 1000.0)), TokenBucket(OPTIONS.qps, OPTIONS.burst, clock))
    system = actor_system(reconcile, clock, max_concurrent=4, limiter=limiter, idle_timeout=60.0)
    async with system_running(system):
        system.notify("ns/a")
        end = clock.now() + 30.0
        while clock.now() < end:  # a hand edit every 50 ms, each event a deferrable one
            edited[0] = True
            system.notify("ns/a", deferrable=True)
            await clock.advance(0.05)
    # Each take-back doubles the wait before the next (5 ms ... 20 s): about log2(30 s / 5 ms)
    # take-backs and as many quiet passes, not one per edit (600).
    assert len(runs) <= 2 * 14, len(runs)
    assert system.stats.failures == 0  # a take-back is no failure


async def test_next_run_says_when_a_key_runs_by_itself_without_waiting_to_see() -> None:
    clock = FakeClock()
    outcomes = {
        "ns/requeued": Action(requeue_after=30.0),
        "ns/failing": Action(failed=True),
        "ns/refused": Action(terminal=True),
        "ns/done": Action(),
    }
    runs: list[str] = []

    async def reconcile(key: str) -> Action:
        runs.append(key)
        return outcomes[key]

    limiter = RateLimiter(ExponentialBackoff(Backoff(10.0, OPTIONS.backoff_cap)), TokenBucket(1000, 1000, clock))
    system = actor_system(reconcile, clock, limiter=limiter, idle_timeout=5.0)
    async with system_running(system):
        assert system.next_run("ns/done") is None
        for key in outcomes:
            system.notify(key)
            assert system.next_run(key) == clock.now()  # waiting to run
        await clock.until(lambda: len(runs) == len(outcomes))
        await clock.settle()
        started = clock.now()
        expected = {"ns/requeued": started + 30.0, "ns/failing": started + 10.0, "ns/refused": None, "ns/done": None}
        assert {key: system.next_run(key) for key in outcomes} == expected  # held by live actors
        await clock.advance(6.0)  # past the idle timeout: the scheduled runs are parked
        assert system.parked == 2
        assert {key: system.next_run(key) for key in outcomes} == expected
