"""Per-key actors with coalescing mailboxes.

One task per Instance key. A key is never reconciled twice at once (one actor, one loop), and a
burst of N events while a reconcile runs collapses into a single flag, so it costs exactly one more
run. An actor with nothing pending exits after `idle_timeout` and is recreated by the next event, so
memory follows the working set. An actor task costs a few kilobytes, so keys that could not run yet
do not get one: while every reconcile slot is taken, a key without an actor waits in a backlog (a
dict entry) and gets its actor when a slot frees, urgent keys (a user's change to an existing
Instance) before bulk ones (a mass creation, a resync), each in arrival order; and a run scheduled
beyond the idle timeout (a status poll, a long backoff) is parked as one heap entry served by a
single timer task. A burst of new Instances thus costs one actor per slot and a backlog entry per
other Instance, not a task each. Bulk runs never take the last `reserved` slots: a user's change
finds one free even while a mass creation fills the others (which also keeps the API server's queue
behind the bulk work that much shorter).

The follow-up run after a burst waits for the burst to settle (100 ms without an event, at most 1
s), so an Instance edited ten times in quick succession is applied about once more, not ten times.
The reconcile function is wrapped so that one actor raising never touches another.
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import anyio
import structlog
from anyio.abc import TaskGroup, TaskStatus

from actors.queue.clock import Clock, MonotonicClock
from actors.queue.ratelimit import RateLimiter

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Action:
    """What a reconcile asks of its actor next (kube-runtime's `Action`, controller-runtime's
    `Result`): nothing until the next event, a run after `requeue_after` seconds, or, for a failure,
    a run after the rate limiter's delay (the error policy: per-key backoff and a global bucket)."""

    requeue_after: float | None = None  # success: run again after this many seconds
    failed: bool = False  # failure: run again after the rate limiter's delay
    # Success, but the pass had to undo another writer's change: pace the next one as a failure
    # would be (the key's backoff goes on growing), so a writer fighting us sets no rhythm.
    back_off: bool = False
    # A failure a retry would only repeat (controller-runtime's TerminalError): counted and traced
    # as an error, but run again only on the next event.
    terminal: bool = False


Reconcile = Callable[[str], Awaitable[Action]]
# Seconds from the first event a run answers to the run holding a slot, and whether it was urgent
# (controller-runtime's workqueue queue duration): where a user's change waits.
WaitObserver = Callable[[float, bool], None]
# Seconds a run took (its reconcile, holding the slot), and whether it was urgent.
RunObserver = Callable[[float, bool], None]


@dataclass(eq=False)  # hashed by identity: it is the borrower of its reconcile slot
class _Actor:
    key: str
    wake: anyio.Event = field(default_factory=anyio.Event)
    pending: bool = False
    # Every event pending since the last run may wait for the key's backoff (a derived object's).
    deferrable: bool = True
    running: bool = False
    due: float | None = None  # monotonic deadline of a scheduled run (requeue or backoff)
    last_poke: float = 0.0
    # The slots given to it when it was spawned, for its first run (taken at once, so that
    # admission counts them exactly: a limiter's acquire counts a token before it returns).
    held: tuple[anyio.CapacityLimiter, ...] = ()
    queued_at: float | None = None  # the first event the next run answers
    urgent: bool = False  # the next run answers a user's change

    def poke(self, now: float, urgent: bool = False, deferrable: bool = False) -> None:
        if not self.pending:
            self.deferrable = True
        self.deferrable &= deferrable
        self.pending = True
        self.last_poke = now
        if self.queued_at is None:
            self.queued_at = now
        self.urgent |= urgent
        self.wake.set()


@dataclass
class ActorStats:
    started: int = 0
    exited: int = 0
    runs: int = 0
    failures: int = 0


class ActorSystem:
    def __init__(
        self,
        reconcile: Reconcile,
        *,
        limiter: RateLimiter,
        max_concurrent: int,
        idle_timeout: float,
        reserved: int | None = None,
        settle: float = 0.1,
        max_settle: float = 1.0,
        clock: Clock | None = None,
        on_wait: WaitObserver | None = None,
        on_run: RunObserver | None = None,
    ) -> None:
        self._clock: Clock = clock or MonotonicClock()
        self.reconcile = reconcile
        self._limiter = limiter
        self._slots = anyio.CapacityLimiter(max_concurrent)
        # Slots only urgent runs take: one in eight by default, none below eight slots (where one
        # would cost bulk work too large a share; urgent keys still go first in the backlog).
        if reserved is None:
            reserved = max_concurrent // 8
        reserved = min(reserved, max_concurrent - 1)
        self._bulk_slots = anyio.CapacityLimiter(max_concurrent - reserved) if reserved > 0 else None
        self._on_wait = on_wait
        self._on_run = on_run
        self._idle_timeout = idle_timeout
        self._settle = settle
        self._max_settle = max_settle
        self._actors: dict[str, _Actor] = {}
        # Runs of exited actors, due at a monotonic time: key -> due, and a heap of (due, key)
        # whose entries no longer in `_parked` (the key ran earlier) are skipped when they come up.
        self._parked: dict[str, float] = {}
        # Keys waiting for a reconcile slot before getting an actor, in arrival order (with the
        # time they were queued): urgent ones go first.
        self._urgent: dict[str, float] = {}
        self._backlog: dict[str, float] = {}
        self._timers: list[tuple[float, str]] = []
        self._timers_changed = anyio.Event()
        # Keys whose last run failed (or had to back off), until when: events that may wait for
        # that (`deferrable`) do not run them sooner.
        self._backing_off: dict[str, float] = {}
        # Keys whose backoff is kept through a success until then (see _loop).
        self._calm_after: dict[str, float] = {}
        self._task_group: TaskGroup | None = None
        self.stats = ActorStats()

    # -- introspection (metrics, tests) ---------------------------------------------------

    @property
    def live(self) -> int:
        return len(self._actors)

    @property
    def depth(self) -> int:
        """Keys waiting to run now (not running, not merely scheduled for later)."""
        waiting = len(self._urgent) + len(self._backlog)
        return waiting + sum(1 for a in self._actors.values() if a.pending and not a.running)

    @property
    def busy(self) -> int:
        """Reconciles running right now."""
        return sum(1 for a in self._actors.values() if a.running)

    def is_live(self, key: str) -> bool:
        return key in self._actors

    @property
    def parked(self) -> int:
        """Keys with a scheduled run and no actor (waiting in the timer heap)."""
        return len(self._parked)

    def next_run(self, key: str) -> float | None:
        """When `key` runs next by itself, on the system's clock: now when it is waiting or
        running, a requeue's or a backoff's time, or None when only an event would run it. (That a
        retry is or is not scheduled, without waiting to see one.)"""
        actor = self._actors.get(key)
        if key in self._urgent or key in self._backlog or (actor is not None and (actor.pending or actor.running)):
            return self._clock.now()
        return actor.due if actor is not None else self._parked.get(key)

    # -- lifecycle ------------------------------------------------------------------------

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Serve until cancelled; reports started once `notify` may be called."""
        async with anyio.create_task_group() as task_group:
            self._task_group = task_group
            task_status.started()
            try:
                await self._serve_timers()
            finally:
                self._task_group = None

    async def _serve_timers(self) -> None:
        """Wake parked keys when their run comes due."""
        while True:
            changed = self._timers_changed = anyio.Event()
            due = self._timers[0][0] if self._timers else math.inf
            if due > self._clock.now():
                await self._clock.wait(changed, due)
                continue
            due, key = heapq.heappop(self._timers)
            if self._parked.get(key) == due:
                del self._parked[key]
                self.notify(key)

    def _park(self, key: str, due: float) -> None:
        self._parked[key] = due
        heapq.heappush(self._timers, (due, key))
        if self._timers[0] == (due, key):
            self._timers_changed.set()  # the earliest timer moved: re-arm the sleep

    def notify(self, key: str, *, urgent: bool = False, deferrable: bool = False) -> None:
        """Wake (or create) the actor for `key`. Cheap and synchronous: call it from any event.
        An `urgent` key waiting for a slot goes ahead of every bulk one. A `deferrable` event (a
        change of a derived object, which another writer may be making in a loop) does not run a
        key sooner than its backoff allows: the run that comes then reads the latest state."""
        now = self._clock.now()
        if deferrable and self._backing_off.get(key, -math.inf) > now:
            return
        actor = self._actors.get(key)
        if actor is not None:
            actor.poke(now, urgent, deferrable)
            return
        if self._task_group is None:
            raise RuntimeError("ActorSystem is not running")
        self._parked.pop(key, None)  # a fresh run supersedes the scheduled one
        if self._urgent or (not urgent and self._backlog) or not self._slot_free(urgent):
            # Already queued: its run will read the latest state anyway.
            if urgent:
                self._urgent[key] = self._backlog.pop(key, now)
            elif key not in self._urgent:
                self._backlog.setdefault(key, now)
            return
        # A key queued in bulk that turned urgent leaves the backlog as it gets its actor (else
        # admission would give it a second one later).
        self._spawn(key, self._backlog.pop(key, now), urgent)

    def _limiters(self, urgent: bool) -> tuple[anyio.CapacityLimiter, ...]:
        """The slots a run takes: any for an urgent run, an unreserved one as well for bulk."""
        return (self._slots,) if urgent or self._bulk_slots is None else (self._bulk_slots, self._slots)

    def _slot_free(self, urgent: bool) -> bool:
        return all(limiter.available_tokens > 0 for limiter in self._limiters(urgent))

    def _spawn(self, key: str, queued_at: float, urgent: bool) -> None:
        assert self._task_group is not None
        actor = _Actor(key, held=self._limiters(urgent))
        for limiter in actor.held:
            limiter.acquire_on_behalf_of_nowait(actor)
        self._actors[key] = actor
        self.stats.started += 1
        self._task_group.start_soon(self._loop, actor, name=f"actor:{key}")
        actor.poke(queued_at, urgent)

    def _admit_backlog(self) -> None:
        """Give actors to backlog keys, oldest first (urgent ones before all), for the free slots."""
        while self._task_group is not None:
            if self._urgent and self._slot_free(urgent=True):
                queue, urgent = self._urgent, True
            elif self._backlog and not self._urgent and self._slot_free(urgent=False):
                queue, urgent = self._backlog, False
            else:
                return
            key = next(iter(queue))
            self._spawn(key, queue.pop(key), urgent)  # a backlog key has no actor: notify() queues only those

    async def _wait_for_work(self, actor: _Actor) -> bool:
        """Block until the actor has work; False when it should exit for idleness (parking a run
        scheduled beyond the idle timeout)."""
        idle_at = self._clock.now() + self._idle_timeout
        while not actor.pending:
            now = self._clock.now()
            if actor.due is not None and now >= actor.due:
                actor.queued_at = actor.due
                actor.due = None
                return True
            if now >= idle_at:
                if actor.due is not None:
                    self._park(actor.key, actor.due)
                return False
            wake_at = idle_at if actor.due is None else min(actor.due, idle_at)
            await self._clock.wait(actor.wake, wake_at)
        return True

    async def _loop(self, actor: _Actor) -> None:
        try:
            while await self._wait_for_work(actor):
                actor.pending = False
                actor.wake = anyio.Event()
                actor.due = None  # a fresh run supersedes any scheduled one
                queued_at, urgent = actor.queued_at, actor.urgent
                actor.queued_at, actor.urgent = None, False
                outcome = await self._run_once(actor, queued_at, urgent)
                self._admit_backlog()  # our slot is free again
                now = self._clock.now()
                if outcome.failed or outcome.back_off:
                    self.stats.failures += outcome.failed
                    delay = self._limiter.when(actor.key)
                    actor.due = now + delay
                    self._backing_off[actor.key] = actor.due
                    if outcome.back_off:
                        # A success before this has passed is a lull in a fight, not its end: the
                        # backoff goes on growing (a hand edit every 50 ms leaves a quiet pass
                        # between two take-backs, which would otherwise reset it every time).
                        self._calm_after[actor.key] = actor.due + delay
                    if actor.pending and actor.deferrable:
                        # Only derived objects' events came during the run: they wait too.
                        actor.pending = False
                        actor.wake = anyio.Event()
                else:
                    self._backing_off.pop(actor.key, None)
                    if now >= self._calm_after.get(actor.key, -math.inf):
                        self._calm_after.pop(actor.key, None)
                        self._limiter.forget(actor.key)
                    if outcome.requeue_after is not None:
                        actor.due = now + outcome.requeue_after
                if actor.pending:
                    await self._settle_burst(actor)
        except Exception:
            # A defect in this loop (not in the reconcile, which is wrapped) must cost one key a
            # delayed retry, not the task group and with it every other actor.
            log.exception("actor failed, retrying later", instance=actor.key)
            self.stats.failures += 1
            self._park(actor.key, self._clock.now() + self._limiter.when(actor.key))
        finally:
            self._release(actor, actor.held)  # never ran (cancelled): the slots it was given
            # No await between the idle decision and this removal, so a concurrent notify()
            # either found this actor while it was still registered (and set pending, which
            # keeps it looping) or will create a fresh one.
            if self._actors.get(actor.key) is actor:
                del self._actors[actor.key]
            self.stats.exited += 1

    async def _settle_burst(self, actor: _Actor) -> None:
        """Events arrived while we ran: let the burst finish (no event for `settle` seconds, at
        most `max_settle`) so the follow-up run sees its end. The first reaction to a change is
        never delayed; only the run that follows one already under way."""
        deadline = self._clock.now() + self._max_settle
        # A timer on the last event's time, re-armed as events keep coming: no event to wait on.
        while (quiet_at := actor.last_poke + self._settle) < deadline:
            # One clock read per step: reading it twice let the delay turn negative between the
            # check and the sleep, which anyio rejects (and which took the whole system down).
            remaining = quiet_at - self._clock.now()
            if remaining <= 0:
                return
            await self._clock.sleep(remaining)

    async def _acquire(self, actor: _Actor, urgent: bool) -> tuple[anyio.CapacityLimiter, ...]:
        taken: list[anyio.CapacityLimiter] = []
        try:
            for limiter in self._limiters(urgent):
                await limiter.acquire_on_behalf_of(actor)
                taken.append(limiter)
        except BaseException:
            self._release(actor, tuple(taken))
            raise
        return tuple(taken)

    @staticmethod
    def _release(actor: _Actor, limiters: tuple[anyio.CapacityLimiter, ...]) -> None:
        for limiter in limiters:
            limiter.release_on_behalf_of(actor)
        actor.held = ()

    async def _run_once(self, actor: _Actor, queued_at: float | None, urgent: bool) -> Action:
        held = actor.held or await self._acquire(actor, urgent)
        try:
            if self._on_wait is not None and queued_at is not None:
                self._on_wait(max(0.0, self._clock.now() - queued_at), urgent)
            actor.running = True
            self.stats.runs += 1
            started = self._clock.now()
            try:
                outcome = await self.reconcile(actor.key)
            except Exception:
                log.exception("reconcile raised", instance=actor.key)
                outcome = Action(failed=True)
            finally:
                actor.running = False
            if self._on_run is not None:  # a run cut short by shutdown is not one
                self._on_run(self._clock.now() - started, urgent)
            return outcome
        finally:
            self._release(actor, held)
