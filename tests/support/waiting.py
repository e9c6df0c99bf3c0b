"""Waiting for a condition, with a deadline: `wait_for` in the event loop, `wait_for_sync` for the
end-to-end tests (which drive kubectl and tilt from plain functions). One signature for both.

A probe returns what it found: something truthy ends the wait and is returned; anything falsy means
"not yet". A probe that has more to say than False returns `NotYet(what it saw)`, so a test that
times out fails with what was awaited and what was last seen, not with a bare timeout.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio

T = TypeVar("T")


class NotYet:
    """A probe's answer while its condition does not hold: falsy, and carrying what the probe saw."""

    def __init__(self, seen: object) -> None:
        self.seen = seen

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return repr(self.seen)


class WaitTimedOut(AssertionError):
    """The condition did not hold in time (an assertion: the test fails, it does not error)."""


def _timed_out(probe: Callable[[], Any], what: str | None, timeout: float, last: object) -> WaitTimedOut:
    awaited = what or getattr(probe, "__qualname__", repr(probe))
    return WaitTimedOut(f"timed out after {timeout:g} s waiting for {awaited}; last seen: {last!r}")


async def wait_for(
    probe: Callable[[], Awaitable[T | NotYet | None]],
    *,
    what: str | None = None,
    timeout: float = 30.0,
    interval: float = 0.1,
) -> T:
    """Await `probe` every `interval` seconds until it returns something truthy, and return that. A
    probe still running at `timeout` is cancelled; the wait then fails naming `what` (the probe's
    name by default) and the probe's last answer."""
    last: object = None
    with anyio.move_on_after(timeout):
        while True:
            found = await probe()
            if found and not isinstance(found, NotYet):
                return found
            last = found
            await anyio.sleep(interval)
    raise _timed_out(probe, what, timeout, last)


def wait_for_sync(
    probe: Callable[[], T | NotYet | None],
    *,
    what: str | None = None,
    timeout: float = 30.0,
    interval: float = 0.1,
) -> T:
    """`wait_for` for a plain function: call `probe` every `interval` seconds until it returns
    something truthy (a call under way at `timeout` is not interrupted)."""
    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        found = probe()
        if found and not isinstance(found, NotYet):
            return found
        last = found
        if time.monotonic() >= deadline:
            raise _timed_out(probe, what, timeout, last)
        time.sleep(interval)
