"""The one fake clock of the tests: time moves only when the test lets it, so timing behaviour
(backoff gaps, settle windows, idle exits, parked runs, a token bucket's refill) is checked exactly
and without sleeping. It is an `actors.queue.clock.Clock` for the actor system, and `now` is the
plain time function a `TokenBucket` takes.

`step` makes every read of `now()` move time on by that much, as a loaded machine's clock does
between two reads. A negative delay is refused, as anyio's sleep (trio's, at least) refuses it: the
runtime must never ask for one."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable

import anyio
import anyio.lowlevel

# Scheduler passes that let every runnable task go as far as it can before time moves.
_SETTLE_PASSES = 50
# A timer fires this late, as a real one always does a little: a gap measured between two runs is
# then never a rounding error short of the delay that separated them.
_LATENESS = 1e-6


class FakeClock:
    def __init__(self, start: float = 0.0, *, step: float = 0.0) -> None:
        self._now = start
        self._step = step
        self._timers: list[tuple[float, int, anyio.Event]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        self._now += self._step
        return self._now

    def _timer(self, deadline: float) -> anyio.Event:
        event = anyio.Event()
        if deadline <= self._now:
            event.set()
        else:
            heapq.heappush(self._timers, (deadline, next(self._seq), event))
        return event

    async def sleep(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError(f"a negative delay: {seconds}")
        await self._timer(self._now + seconds).wait()

    async def wait(self, event: anyio.Event, deadline: float) -> None:
        timer = self._timer(deadline)
        if event.is_set() or timer.is_set():
            await anyio.lowlevel.checkpoint()
            return
        async with anyio.create_task_group() as tg:

            async def first(which: anyio.Event) -> None:
                await which.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(first, event)
            tg.start_soon(first, timer)

    async def settle(self) -> None:
        """Let every task run until it waits on the clock or an event."""
        for _ in range(_SETTLE_PASSES):
            await anyio.lowlevel.checkpoint()

    async def advance(self, seconds: float) -> None:
        """Move time forward by `seconds`, firing each timer in order and letting tasks run."""
        end = self._now + seconds
        while self._timers and self._timers[0][0] + _LATENESS <= end:
            deadline, _, event = heapq.heappop(self._timers)
            self._now = max(self._now, deadline + _LATENESS)
            event.set()
            await self.settle()
        self._now = end
        await self.settle()

    async def until(self, condition: Callable[[], bool], timeout: float = 60.0) -> None:
        """Run (jumping from timer to timer, as trio's autojump clock does) until `condition` holds;
        fail after `timeout` seconds of fake time."""
        end = self._now + timeout
        await self.settle()
        while not condition():
            if not self._timers or self._timers[0][0] > end:
                raise TimeoutError(f"condition not met after {timeout} s of fake time")
            await self.advance(self._timers[0][0] + _LATENESS - self._now)
