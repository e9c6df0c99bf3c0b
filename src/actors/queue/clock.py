"""The actor system's time source, injectable so its tests run on a fake clock instead of sleeping.

`MonotonicClock` is the event loop's clock (anyio's, i.e. the monotonic clock the loop schedules
timers with). A test clock implements the same three calls and advances only when told to.
"""

from __future__ import annotations

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
        return anyio.current_time()

    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(max(0.0, seconds))

    async def wait(self, event: anyio.Event, deadline: float) -> None:
        with anyio.move_on_after(max(0.0, deadline - self.now())):
            await event.wait()
