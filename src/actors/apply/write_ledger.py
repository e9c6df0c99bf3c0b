"""The one ledger of our own writes: to Instances (the finalizer) and to derived objects.

A watch event wakes the Instance it concerns, except the echo of a write of ours: the object exactly
as our write returned it, which the reconcile that made it has seen already (waking it would cost
every Instance one more reconcile for nothing). Writers report each write here (`begin` before the
request, `finish` with the resourceVersion it produced); the informers' handlers report each event
(`on_event`). An event that arrives while a write of the same object is under way may come back
before the response that tells whose write it was: it is held, and when the write finishes with
another resourceVersion, `finish` says so and the reconcile that wrote looks once more. Likewise
the DELETED event of an object our delete removed at once (`deleted`, `on_deleted`): the pass that
deleted it went on knowing it was gone.
"""

from __future__ import annotations

from actors.client.resource import Resource

# (resource, namespace, name)
ObjectId = tuple[Resource, str, str]


class WriteLedger:
    def __init__(self) -> None:
        # Object → resourceVersion our latest write of it produced.
        self._written: dict[ObjectId, str] = {}
        # Writes under way → resourceVersion of the latest event for the object since ("" for none).
        self._in_flight: dict[ObjectId, str] = {}
        # Objects our deletes removed at once, until their DELETED event comes.
        self._deleted: set[ObjectId] = set()

    def begin(self, obj: ObjectId) -> None:
        self._in_flight[obj] = ""

    def finish(self, obj: ObjectId, resource_version: str | None) -> bool:
        """The write of `obj` ended, producing `resource_version` (None: it failed). True when an
        event arrived meanwhile that is not this write (or may not be): the writer must look again."""
        seen = self._in_flight.pop(obj, "")
        if resource_version:
            self._written[obj] = resource_version
        return bool(seen) and seen != resource_version

    def on_event(self, obj: ObjectId, resource_version: str, *, deleting: bool = False, relevant: bool = True) -> bool:
        """Note a watch event; True when it needs no reconcile of its own: the echo of our write,
        or an event held while a write of the object is under way. An event that is not
        `relevant` (nothing a reconcile reads changed) is not held against the write in flight."""
        self._deleted.discard(obj)  # there again (recreated): its deletion is no longer ours
        if obj in self._in_flight:
            if relevant:
                self._in_flight[obj] = resource_version
            return True
        written = self._written.get(obj)
        if written is None:
            return False
        if written == resource_version and not deleting:
            return True
        del self._written[obj]  # a later version than our write's: whatever comes next is not ours
        return False

    def deleted(self, obj: ObjectId) -> None:
        """Our delete removed `obj` at once: the pass that did it knows it is gone."""
        self._deleted.add(obj)

    def on_deleted(self, obj: ObjectId) -> bool:
        """Note a DELETED event; True when it is the echo of our own delete."""
        if obj in self._deleted:
            self._deleted.discard(obj)
            return True
        return False

    def written(self, obj: ObjectId) -> str | None:
        """The resourceVersion our latest write of `obj` produced, if we wrote it in this process."""
        return self._written.get(obj)

    def forget(self, obj: ObjectId) -> None:
        self._written.pop(obj, None)
