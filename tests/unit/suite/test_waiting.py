"""tests.support.waiting: the first truthy answer ends the wait; a timeout says what was awaited and
what was last seen."""

from __future__ import annotations

import itertools

import anyio
import pytest

from tests.support.waiting import NotYet, WaitTimedOut, wait_for, wait_for_sync


async def test_the_first_truthy_answer_is_returned() -> None:
    answers = iter([None, NotYet("one"), {}, {"phase": "Ready"}])

    async def probe() -> dict[str, str] | NotYet | None:
        return next(answers)

    assert await wait_for(probe, interval=0) == {"phase": "Ready"}


async def test_a_timeout_names_what_was_awaited_and_the_last_answer() -> None:
    count = itertools.count()

    async def probe() -> NotYet:
        return NotYet({"phase": "Provisioning", "seen": next(count)})

    with pytest.raises(WaitTimedOut) as failed:
        await wait_for(probe, what="the Instance Ready", timeout=0.05, interval=0.01)
    message = str(failed.value)
    assert message.startswith("timed out after 0.05 s waiting for the Instance Ready; last seen: ")
    assert "'phase': 'Provisioning'" in message
    assert isinstance(failed.value, AssertionError)  # a failed test, not an error


async def test_without_a_name_the_probe_names_the_wait() -> None:
    async def instance_ready() -> bool:
        return False

    with pytest.raises(WaitTimedOut, match=r"waiting for .*instance_ready; last seen: False$"):
        await wait_for(instance_ready, timeout=0.02, interval=0.01)


def test_the_sync_version_has_the_same_signature_and_message() -> None:
    answers = iter([False, False, "found"])
    assert wait_for_sync(lambda: next(answers), interval=0) == "found"
    with pytest.raises(WaitTimedOut, match=r"^timed out after 0.02 s waiting for the pod gone; last seen: \['p'\]$"):
        wait_for_sync(lambda: NotYet(["p"]), what="the pod gone", timeout=0.02, interval=0.01)


def missing() -> bool:
    raise LookupError("no such Instance")


async def test_a_probes_error_ends_the_wait_with_that_error() -> None:
    async def probe() -> bool:
        return missing()

    with pytest.raises(LookupError, match="no such Instance"):
        await wait_for(probe, timeout=5, interval=0.01)
    with pytest.raises(LookupError, match="no such Instance"):
        wait_for_sync(missing, timeout=5, interval=0.01)


async def test_a_probe_running_at_the_deadline_is_cancelled_and_its_last_answer_reported() -> None:
    calls = itertools.count()

    async def probe() -> NotYet:
        if next(calls):
            await anyio.sleep(10)
        return NotYet("first")

    with pytest.raises(WaitTimedOut, match=r"last seen: 'first'$"):
        await wait_for(probe, timeout=0.1, interval=0.01)


async def test_a_probe_that_never_answered_says_so() -> None:
    async def probe() -> bool:
        await anyio.sleep(10)
        return True

    with pytest.raises(WaitTimedOut, match=r"last seen: \"no answer: the probe's first call was still running\"$"):
        await wait_for(probe, timeout=0.05, interval=0.01)
