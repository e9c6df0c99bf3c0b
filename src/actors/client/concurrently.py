"""Independent requests of one reconcile, sent at once: a pass waits for the slowest of them, not
for their sum (the API server's latency, not the provider's CPU, is what a pass mostly waits on).

Errors are not raised as an ExceptionGroup, which the reconciler's `except` clauses (an API error,
an unreachable API server) would not catch: every call runs to its end, then the first error in
the calls' order is raised as it is.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

import anyio

T = TypeVar("T")


async def all_of(calls: Sequence[Callable[[], Awaitable[T]]]) -> list[T]:
    """The calls' results in their order; one call runs inline, without a task group."""
    if len(calls) == 1:
        return [await calls[0]()]
    outcomes: list[tuple[T] | Exception] = [ValueError("not run")] * len(calls)

    async def run(index: int, call: Callable[[], Awaitable[T]]) -> None:
        try:
            outcomes[index] = (await call(),)
        except Exception as err:  # raised below, in order, once every call is done
            outcomes[index] = err

    async with anyio.create_task_group() as task_group:
        for index, call in enumerate(calls):
            task_group.start_soon(run, index, call)
    results: list[T] = []
    for outcome in outcomes:
        if isinstance(outcome, Exception):
            raise outcome
        results.append(outcome[0])
    return results
