"""Per-key actors with coalescing mailboxes.

One task per Instance key. A key is never reconciled twice at once (one actor, one loop), and a
burst of N events while a reconcile runs collapses into a single flag, so it costs exactly one
more run. An actor with nothing pending and nothing scheduled exits after `idle_timeout` and is
recreated by the next event, so memory follows the working set. The follow-up run after a burst
waits for the burst to settle (100 ms without an event, at most 1 s), so an Instance edited ten
times in quick succession is applied about once more, not ten times. The reconcile function is wrapped
so that one actor raising never touches another.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import anyio
import structlog
from anyio.abc import TaskGroup

from actors.ratelimit import RateLimiter

log = structlog.get_logger("actors.actor")


@dataclass(frozen=True)
class Outcome:
    """What a reconcile asks of its actor next."""

    requeue_after: float | None = None  # success: run again after this many seconds
    failed: bool = False  # failure: run again after the rate limiter's delay


Reconcile = Callable[[str], Awaitable[Outcome]]


@dataclass
class _Actor:
    key: str
    wake: anyio.Event = field(default_factory=anyio.Event)
    pending: bool = False
    running: bool = False
    due: float | None = None  # monotonic deadline of a scheduled run (requeue or backoff)
    last_poke: float = 0.0

    def poke(self) -> None:
        self.pending = True
        self.last_poke = time.monotonic()
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
        limiter: RateLimiter | None = None,
        max_concurrent: int = 16,
        idle_timeout: float = 60.0,
        settle: float = 0.1,
        max_settle: float = 1.0,
    ) -> None:
        self._reconcile = reconcile
        self._limiter = limiter or RateLimiter()
        self._slots = anyio.CapacityLimiter(max_concurrent)
        self._idle_timeout = idle_timeout
        self._settle = settle
        self._max_settle = max_settle
        self._actors: dict[str, _Actor] = {}
        self._task_group: TaskGroup | None = None
        self.stats = ActorStats()

    # -- introspection (metrics, tests) ---------------------------------------------------

    @property
    def live(self) -> int:
        return len(self._actors)

    @property
    def depth(self) -> int:
        """Keys waiting to run now (not running, not merely scheduled for later)."""
        return sum(1 for a in self._actors.values() if a.pending and not a.running)

    @property
    def busy(self) -> int:
        """Reconciles running right now."""
        return sum(1 for a in self._actors.values() if a.running)

    def is_live(self, key: str) -> bool:
        return key in self._actors

    # -- lifecycle ------------------------------------------------------------------------

    async def run(self) -> None:
        """Serve until cancelled."""
        async with anyio.create_task_group() as task_group:
            self._task_group = task_group
            try:
                await anyio.sleep_forever()
            finally:
                self._task_group = None

    def notify(self, key: str) -> None:
        """Wake (or create) the actor for `key`. Cheap and synchronous: call it from any event."""
        actor = self._actors.get(key)
        if actor is None:
            if self._task_group is None:
                raise RuntimeError("ActorSystem is not running")
            actor = _Actor(key)
            self._actors[key] = actor
            self.stats.started += 1
            self._task_group.start_soon(self._loop, actor, name=f"actor:{key}")
        actor.poke()

    async def _wait_for_work(self, actor: _Actor) -> bool:
        """Block until the actor has work; False when it should exit for idleness."""
        while not actor.pending:
            now = time.monotonic()
            if actor.due is not None and now >= actor.due:
                actor.due = None
                return True
            timeout = (actor.due - now) if actor.due is not None else self._idle_timeout
            with anyio.move_on_after(timeout):
                await actor.wake.wait()
            if not actor.pending and actor.due is None:
                return False
        return True

    async def _loop(self, actor: _Actor) -> None:
        try:
            while await self._wait_for_work(actor):
                actor.pending = False
                actor.wake = anyio.Event()
                actor.due = None  # a fresh run supersedes any scheduled one
                outcome = await self._run_once(actor)
                if actor.pending:
                    await self._settle_burst(actor)
                if outcome.failed:
                    self.stats.failures += 1
                    actor.due = time.monotonic() + self._limiter.when(actor.key)
                else:
                    self._limiter.forget(actor.key)
                    if outcome.requeue_after is not None:
                        actor.due = time.monotonic() + outcome.requeue_after
        finally:
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
        deadline = time.monotonic() + self._max_settle
        # A timer on the last event's time, re-armed as events keep coming: no event to wait on.
        while (quiet_at := actor.last_poke + self._settle) < deadline and time.monotonic() < quiet_at:  # noqa: ASYNC110
            await anyio.sleep(quiet_at - time.monotonic())

    async def _run_once(self, actor: _Actor) -> Outcome:
        async with self._slots:
            actor.running = True
            self.stats.runs += 1
            try:
                return await self._reconcile(actor.key)
            except Exception:
                log.exception("reconcile raised", instance=actor.key)
                return Outcome(failed=True)
            finally:
                actor.running = False
