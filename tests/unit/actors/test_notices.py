"""A status message the provider marks as a warning is one Event when it is new, none while it stands;
the Normal Events a status pass asks for are recorded as asked."""

from __future__ import annotations

from typing import Any, cast

from actors import EventNote
from actors.reconcile.notices import Notices
from actors.status.events import EventRecorder


class Recorded:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    async def record(self, instance: Any, type_: str, reason: str, note: str, action: str) -> None:
        self.events.append((type_, reason, note))


def instance(message: str | None) -> dict[str, Any]:
    return {"metadata": {"name": "chat", "namespace": "models"}, "status": {"message": message} if message else {}}


async def test_said_when_new_and_not_while_it_stands() -> None:
    recorded = Recorded()
    notices = Notices(cast(EventRecorder, recorded))
    held = "llmEngine: Unschedulable: 0/1 nodes are available: 1 Insufficient nvidia.com/gpu."
    await notices.warning(instance("Deployment does not have minimum availability."), "PodsCannotStart", held)
    await notices.warning(instance(held), "PodsCannotStart", held)  # the next pass: status says it already
    await notices.warning(instance(None), "", "Deployment does not have minimum availability.")  # no reason: no Event
    assert recorded.events == [("Warning", "PodsCannotStart", held)]


async def test_the_events_a_status_pass_asks_for_are_recorded_as_normal_events() -> None:
    recorded = Recorded()
    notices = Notices(cast(EventRecorder, recorded))
    await notices.noted(
        instance(None), [EventNote("Scaled", "predictor: 1 -> 3"), EventNote("Scaled", "other: 2 -> 1")]
    )
    await notices.noted(instance(None), [])
    assert recorded.events == [("Normal", "Scaled", "predictor: 1 -> 3"), ("Normal", "Scaled", "other: 2 -> 1")]
