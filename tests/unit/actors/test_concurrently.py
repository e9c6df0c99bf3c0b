"""actors.client.concurrently.all_of: independent calls at once, errors raised as themselves."""

from __future__ import annotations

import anyio
import pytest

from actors.client.concurrently import all_of


async def test_calls_run_together_and_results_keep_their_order() -> None:
    started: list[int] = []
    both_started = anyio.Event()

    async def call(i: int) -> int:
        started.append(i)
        if len(started) == 2:
            both_started.set()
        with anyio.fail_after(1):
            await both_started.wait()  # the first call only returns once the second has begun
        await anyio.sleep(0.01 * (2 - i))  # the first finishes last
        return i * 10

    assert await all_of([lambda: call(1), lambda: call(2)]) == [10, 20]


async def test_every_call_finishes_then_the_first_error_in_order_is_raised_as_itself() -> None:
    finished: list[str] = []

    async def fails(name: str, delay: float) -> str:
        await anyio.sleep(delay)
        finished.append(name)
        raise KeyError(name)

    async def succeeds() -> str:
        await anyio.sleep(0.03)
        finished.append("ok")
        return "ok"

    with pytest.raises(KeyError, match="first"):
        await all_of([lambda: fails("first", 0.02), lambda: fails("second", 0.0), succeeds])
    assert sorted(finished) == ["first", "ok", "second"]


async def test_no_calls_and_one_call() -> None:
    assert await all_of([]) == []

    async def one() -> str:
        return "inline"

    assert await all_of([one]) == ["inline"]
