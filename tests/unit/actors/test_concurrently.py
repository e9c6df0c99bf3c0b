"""actors.client.concurrently.all_of: independent calls at once, errors raised as themselves."""

from __future__ import annotations

import anyio
import pytest

from actors.client.concurrently import all_of


async def test_calls_run_together_and_results_keep_their_order() -> None:
    started: list[int] = []
    both_started = anyio.Event()
    second_finished = anyio.Event()

    async def call(i: int) -> int:
        started.append(i)
        if len(started) == 2:
            both_started.set()
        with anyio.fail_after(1):
            await both_started.wait()  # the first call only returns once the second has begun
            if i == 1:
                await second_finished.wait()  # the first finishes last
        if i == 2:
            second_finished.set()
        return i * 10

    assert await all_of([lambda: call(1), lambda: call(2)]) == [10, 20]


async def test_every_call_finishes_then_the_first_error_in_order_is_raised_as_itself() -> None:
    finished: list[str] = []
    # Each call finishes after the one before it here: second, then first, then ok.
    after = {"second": None, "first": "second", "ok": "first"}
    done = {name: anyio.Event() for name in after}

    async def finish(name: str) -> None:
        before = after[name]
        if before is not None:
            with anyio.fail_after(1):
                await done[before].wait()
        finished.append(name)
        done[name].set()

    async def fails(name: str) -> str:
        await finish(name)
        raise KeyError(name)

    async def succeeds() -> str:
        await finish("ok")
        return "ok"

    with pytest.raises(KeyError, match="first"):
        await all_of([lambda: fails("first"), lambda: fails("second"), succeeds])
    assert finished == ["second", "first", "ok"]


async def test_no_calls_and_one_call() -> None:
    assert await all_of([]) == []

    async def one() -> str:
        return "inline"

    assert await all_of([one]) == ["inline"]
