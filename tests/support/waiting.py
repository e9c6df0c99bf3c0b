"""Waiting for a condition, with a deadline: `wait_for` in the event loop, `wait_for_sync` for the
end-to-end tests (which drive kubectl and tilt from plain functions). One signature for both.

A probe returns what it found: something truthy ends the wait and is returned; anything falsy means
"not yet". A probe that has more to say than False returns `NotYet(what it saw)`, so a test that
times out fails with what was awaited and what was last seen, not with a bare timeout. tenacity
does the calling again.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, NoReturn, TypeVar

import anyio
from tenacity import AsyncRetrying, RetryCallState, Retrying, retry_if_result, stop_after_delay, wait_fixed

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


# What `wait_for` reports when its probe's first call was still running at the deadline.
_NO_ANSWER = NotYet("no answer: the probe's first call was still running")


def _timed_out(probe: Callable[[], Any], what: str | None, timeout: float, last: object) -> WaitTimedOut:
    awaited = what or getattr(probe, "__qualname__", repr(probe))
    return WaitTimedOut(f"timed out after {timeout:g} s waiting for {awaited}; last seen: {last!r}")


def _not_found(found: object) -> bool:
    return not found or isinstance(found, NotYet)


def _until_found(probe: Callable[[], Any], what: str | None, timeout: float, interval: float) -> dict[str, Any]:
    """tenacity's policy for both: call again while the answer is "not yet", every `interval`
    seconds, and give up after `timeout` with the last answer (a probe's exception ends the wait)."""

    def give_up(state: RetryCallState) -> NoReturn:
        assert state.outcome is not None
        raise _timed_out(probe, what, timeout, state.outcome.result())

    return {
        "retry": retry_if_result(_not_found),
        "stop": stop_after_delay(timeout),
        "wait": wait_fixed(interval),
        "retry_error_callback": give_up,
    }


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
    last: list[object] = [_NO_ANSWER]  # the latest answer, for the message when the deadline cancels

    async def recorded() -> T | NotYet | None:
        last[0] = found = await probe()
        return found

    with anyio.move_on_after(timeout):
        found: T | NotYet | None = await AsyncRetrying(
            sleep=anyio.sleep, **_until_found(probe, what, timeout, interval)
        )(recorded)
        assert found is not None and not isinstance(found, NotYet)  # tenacity called again on those
        return found
    raise _timed_out(probe, what, timeout, last[0])


def wait_for_sync(
    probe: Callable[[], T | NotYet | None],
    *,
    what: str | None = None,
    timeout: float = 30.0,
    interval: float = 0.1,
) -> T:
    """`wait_for` for a plain function: call `probe` every `interval` seconds until it returns
    something truthy (a call under way at `timeout` is not interrupted)."""
    found = Retrying(**_until_found(probe, what, timeout, interval))(probe)
    assert found is not None and not isinstance(found, NotYet)  # tenacity called again on those
    return found
