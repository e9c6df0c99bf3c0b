"""The one component that knows which writes to derived objects were our own.

A watch event of a derived object wakes its Instance, except the echo of our own apply: the object
exactly as the apply returned it, which the reconcile that made it has observed already (waking it
would cost every Instance one more reconcile for nothing). The Applier reports each write here
(`begin` before the request, `finish` with the resourceVersion it produced); the owned-kinds
informers report each event (`on_event`). An event that arrives while a write of the same object is
under way may come back before the response that tells whose write it was: it is held, and when the
write finishes with another resourceVersion, `finish` says so and the reconcile that wrote runs
once more to look at it. Likewise the DELETED event of an object our delete removed at once
(`deleted`, `on_deleted`): the pass that deleted it went on knowing it was gone.
"""

from __future__ import annotations

from actors.cache.owned_index import OwnedRef
from actors.client.resource import Resource

# (resource, namespace, name)
ObjectId = tuple[Resource, str, str]


def object_id(ref: OwnedRef) -> ObjectId:
    return ref.resource, ref.namespace, ref.name


class OwnWrites:
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
        event arrived meanwhile that is not this write (or may not be): the owner must look again."""
        seen = self._in_flight.pop(obj, "")
        if resource_version is not None:
            self._written[obj] = resource_version
        return bool(seen) and seen != resource_version

    def deleted(self, obj: ObjectId) -> None:
        """Our delete removed `obj` at once: the pass that did it knows it is gone."""
        self._deleted.add(obj)

    def on_deleted(self, ref: OwnedRef) -> bool:
        """Note a DELETED event; True when it is the echo of our own delete."""
        obj = object_id(ref)
        if obj in self._deleted:
            self._deleted.discard(obj)
            return True
        return False

    def on_event(self, ref: OwnedRef) -> bool:
        """Note a watch event of a derived object; True when it is the echo of our own write."""
        obj = object_id(ref)
        self._deleted.discard(obj)  # there again (recreated): its deletion is no longer ours
        if obj in self._in_flight:
            self._in_flight[obj] = ref.resource_version
            return True
        return not ref.deleting and self._written.get(obj) == ref.resource_version

    def written(self, obj: ObjectId) -> str | None:
        """The resourceVersion our latest write of `obj` produced, if we wrote it in this process."""
        return self._written.get(obj)

    def forget(self, obj: ObjectId) -> None:
        self._written.pop(obj, None)
