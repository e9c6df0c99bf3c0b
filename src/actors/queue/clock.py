"""The time source of everything in the runtime that reads time or waits for it: the actor system,
the rate limiter, leader election and the HTTP authorizer's cache. Injectable, so tests run on a
fake clock (tests/support/clock.py) that moves only when told to, instead of sleeping.

`MonotonicClock` reads the monotonic clock asyncio's event loop schedules its timers with, so it
can be read outside a running loop too (a component built before the loop starts).
"""

from __future__ import annotations

import time
from typing import Protocol

import anyio


class Clock(Protocol):
    def now(self) -> float:
        """Seconds on a monotonic scale."""
        ...

    async def sleep(self, seconds: float) -> None: ...

    async def wait(self, event: anyio.Event, deadline: float) -> None:
        """Until `event` is set or `deadline` (on this clock) has passed, whichever comes first."""
        ...


class MonotonicClock:
    def now(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(max(0.0, seconds))

    async def wait(self, event: anyio.Event, deadline: float) -> None:
        with anyio.move_on_after(max(0.0, deadline - self.now())):
            await event.wait()
