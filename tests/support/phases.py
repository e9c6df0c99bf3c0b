"""Every phase an Instance shows, from a watch: a phase that lasts less than a poll interval (an
Updating of a few milliseconds) is still seen, each with the time it was written."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio

from actors.client import ApiError, KubeClient, TransportError
from actors.client.known_resources import INSTANCES
from tests.support.waiting import NotYet, wait_for


@dataclass(frozen=True)
class PhaseChange:
    seconds: float  # since the recording started
    phase: str
    message: str

    def __str__(self) -> str:
        return f"+{self.seconds:7.3f} s  {self.phase}: {self.message}"


@dataclass
class PhaseRecorder:
    """The Instance's (phase, message) changes, in order; `mark()` and `since()` cut out one
    transition's part."""

    name: str
    started: float = field(default_factory=time.monotonic)
    changes: list[PhaseChange] = field(default_factory=list)

    def observe(self, phase: str, message: str) -> None:
        last = self.changes[-1] if self.changes else None
        if last is None or (last.phase, last.message) != (phase, message):
            self.changes.append(PhaseChange(time.monotonic() - self.started, phase, message))

    def mark(self) -> int:
        return len(self.changes)

    def since(self, mark: int) -> list[str]:
        """The phases shown since `mark`, each once in a row (a new message is not a new phase)."""
        phases: list[str] = []
        for change in self.changes[mark:]:
            if not phases or phases[-1] != change.phase:
                phases.append(change.phase)
        return phases

    def report(self, mark: int = 0, title: str = "") -> str:
        lines = [f"{title or self.name}:"] + [f"  {change}" for change in self.changes[mark:]]
        return "\n".join(lines)

    async def reached(self, phase: str, after: int, timeout: float) -> PhaseChange:
        """The first change to `phase` after `after`, waiting up to `timeout` seconds for it."""

        async def found() -> PhaseChange | NotYet:
            hit = next((c for c in self.changes[after:] if c.phase == phase), None)
            return hit if hit is not None else NotYet([str(c) for c in self.changes[after:]])

        return await wait_for(found, what=f"{self.name} to show {phase}", timeout=timeout, interval=0.05)


async def _record(kube: KubeClient, namespace: str, recorder: PhaseRecorder) -> None:
    while True:
        try:
            items, version = await kube.list_all(INSTANCES, namespace)
            listed = [obj for obj in items if obj["metadata"]["name"] == recorder.name]
            for obj in listed:
                status = obj.get("status") or {}
                recorder.observe(str(status.get("phase", "")), str(status.get("message", "")))
            if not listed and recorder.changes:
                # Deleted while no watch ran (after the last one ended, before this list): its
                # DELETED event is never delivered, so a wait for "(deleted)" would hang.
                recorder.observe("(deleted)", "")
            async for event in kube.watch(INSTANCES, namespace, version, timeout_seconds=60):
                obj = event.get("object") or {}
                if (obj.get("metadata") or {}).get("name") != recorder.name:
                    continue
                if event.get("type") == "DELETED":
                    recorder.observe("(deleted)", "")
                    continue
                status = obj.get("status") or {}
                recorder.observe(str(status.get("phase", "")), str(status.get("message", "")))
        except (ApiError, TransportError):
            await anyio.sleep(0.2)  # a 410 or a dropped watch: list again


@asynccontextmanager
async def recording_phases(kube: KubeClient, namespace: str, name: str) -> AsyncIterator[PhaseRecorder]:
    """Record Instance `name`'s phases for the block (printed at its end: run pytest with -s to read
    the timeline)."""
    recorder = PhaseRecorder(name)
    async with anyio.create_task_group() as tg:
        tg.start_soon(_record, kube, namespace, recorder)
        try:
            yield recorder
        finally:
            print("\n" + recorder.report())
            tg.cancel_scope.cancel()
