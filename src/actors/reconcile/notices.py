"""What of a reconcile a user must know, as Events on the Instance (`kubectl describe instance`).

Each function turns one outcome of a pass into at most one Event: the Instance became Ready, it
failed (and why: its bounds, its version bundle, the provider's rules, the API server refusing an
object), a derived name is taken by someone else's object, another field manager holds a field,
a field edited by hand was taken back, derived objects were deleted, the Instance was handed to
another provider. Repeats are the recorder's series (actors.status.events), not more Events.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from actors.apply.conflicts import ApplyConflict, InvalidObject, NameClash
from actors.interface import EventNote, KubeObject, Phase
from actors.reconcile.validate import Refusal
from actors.status.events import EventRecorder

# events.k8s.io's `action`: what the provider was doing.
VALIDATE, SYNC, STATUS, CLEANUP = "Validate", "Sync", "Status", "Cleanup"


@dataclass
class Notices:
    recorder: EventRecorder | None

    async def refused(self, instance: KubeObject, refusal: Refusal) -> None:
        await self._warn(instance, refusal.reason, refusal.message, VALIDATE)

    async def sync_failed(self, instance: KubeObject, err: Exception) -> None:
        if isinstance(err, ApplyConflict):
            await self._warn(instance, "ApplyConflict", f"apply conflict: {err}", SYNC)
        elif isinstance(err, NameClash):
            await self._warn(instance, "NameClash", str(err), SYNC)
        elif isinstance(err, InvalidObject):
            await self._warn(instance, "Invalid", str(err), SYNC)
        else:
            await self._warn(instance, "ApplyFailed", f"sync failed: {err}", SYNC)

    async def taken_back(self, instance: KubeObject, fields: Sequence[str]) -> None:
        note = "took back fields edited by hand: " + ", ".join(fields)
        await self._warn(instance, "FieldTakenBack", note, SYNC)

    async def phase(self, instance: KubeObject, phase: Phase, message: str) -> None:
        """The phase the provider reported, when it is news: Ready, or Failed (the provider's own
        verdict: a refusal or a failed sync has its own Event), and not already so."""
        before = (instance.get("status") or {}).get("phase")
        if phase == before:
            return
        if phase == Phase.READY:
            await self._record(instance, "Normal", "Ready", message or "the Instance is serving", STATUS)
        elif phase == Phase.FAILED:
            await self._warn(instance, "Failed", message, STATUS)

    async def warning(self, instance: KubeObject, reason: str, message: str) -> None:
        """A status message worth a Warning (the provider gave its reason), once: when the
        Instance's status said something else before."""
        if reason and message != (instance.get("status") or {}).get("message"):
            await self._warn(instance, reason, message, STATUS)

    async def noted(self, instance: KubeObject, events: Sequence[EventNote]) -> None:
        """The Normal Events the provider's status pass asked for."""
        for event in events:
            await self._record(instance, "Normal", event.reason, event.note, STATUS)

    async def deleted(self, instance: KubeObject, objects: Sequence[str]) -> None:
        if objects:
            await self._record(instance, "Normal", "Deleted", "deleted " + ", ".join(objects), CLEANUP)

    async def released(self, instance: KubeObject, to: str) -> None:
        note = f"released to provider {to!r}: the provider's objects deleted, its finalizer removed"
        await self._record(instance, "Normal", "Released", note, CLEANUP)

    async def _warn(self, instance: KubeObject, reason: str, note: str, action: str) -> None:
        await self._record(instance, "Warning", reason, note, action)

    async def _record(self, instance: KubeObject, type_: str, reason: str, note: str, action: str) -> None:
        if self.recorder is not None:
            await self.recorder.record(instance, "Normal" if type_ == "Normal" else "Warning", reason, note, action)
