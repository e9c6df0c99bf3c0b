"""Server-side apply of an Instance's derived objects, and pruning of the ones no longer desired.

One write per changed object, none for an unchanged one:

- Every write is one server-side apply (`fieldValidation=Strict`, our field manager, never forced
  unless the Instance opts in): an invalid or conflicting apply stores nothing, so no dry run
  precedes it. A field another manager owns is an `ApplyConflict` naming the field and the
  manager; a field taken by a hand edit (`kubectl edit`, `scale`: plain updates that never check
  ownership) is taken back, and so is a keyed list entry whose key a hand edit changed (which an
  apply can never remove: `actors.apply.stray_entries`).
- Only what is already ours is ever written over or deleted. An object the watch has not shown as
  ours is read once first (GET; the reads of one pass are sent at once, as they do not depend on
  each other: a first pass waits for one round-trip, not one per object); if it exists and its
  controller reference is not this Instance, it is a `NameClash`, never applied to, forced or
  deleted. (A create-only first write would save that read, but a create is a plain update in
  managedFields: the API server then reports our own later applies as conflicts with ourselves,
  and fields our create set would never be removed by an apply that stops setting them.)
- An object is not sent at all when its intent annotation (a digest of what we apply) equals what
  we would apply now and its content still holds every value we set: that survives a restart, so a
  new leader over converged Instances writes nothing. A hand edit of one of our values, or an
  object deleted meanwhile, is restored.

Deletes carry the uid of the object we judged as a precondition, so a namesake created in between
is not touched either. Which writes were ours, so their watch events wake nobody, is
`actors.apply.write_ledger`'s business.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import structlog
from opentelemetry import trace

from actors.apply.conflicts import (
    ApplyConflict,
    FieldConflict,
    InvalidObject,
    NameClash,
    ResourceNotServed,
    not_served,
    owner_in_words,
    parse_conflicts,
)
from actors.apply.stray_entries import removal_patch, stray_entries
from actors.apply.write_ledger import ObjectId, WriteLedger
from actors.cache.owned_index import OwnedIndex, OwnedRef, projected
from actors.client import JSON_PATCH, ApiError, KubeClient
from actors.client.concurrently import all_of
from actors.client.json_codec import content_hash
from actors.client.resource import GroupVersionKind, KubeObject, Resource, gvk_of, object_key
from actors.contract import is_owned_by, stamp
from actors.observe.tracing import span

log = structlog.get_logger(__name__)
tracer = trace.get_tracer(__name__)


def holds(live: Any, wanted: Any) -> bool:
    """Every value of `wanted` is in `live` (maps may carry more keys, e.g. defaults the API server
    added; lists must match element by element)."""
    if isinstance(wanted, dict):
        return isinstance(live, dict) and all(k in live and holds(live[k], v) for k, v in wanted.items())
    if isinstance(wanted, list):
        return isinstance(live, list) and len(live) == len(wanted) and all(map(holds, live, wanted))
    return bool(live == wanted) and type(live) is type(wanted)


def _deleting(obj: KubeObject) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


# What a pass read of the objects the watch has not shown as ours, by (resource, name): the object,
# None (no such object), or the error the read met (raised when that object's turn comes).
LookedUp = Mapping[tuple[Resource, str], KubeObject | Exception | None]


@dataclass
class SyncResult:
    observed: dict[tuple[Resource, str], KubeObject] = field(default_factory=dict)
    applied: int = 0
    skipped: int = 0
    # An event of a written object arrived during the write that was not the write itself.
    recheck: bool = False
    # Fields another writer took by hand (kubectl edit, scale) that the pass took back, in words.
    taken_back: list[str] = field(default_factory=list)
    # Objects the pass pruned, in words.
    pruned_objects: list[str] = field(default_factory=list)
    # The objects written (not skipped as unchanged), by (resource, name).
    written: set[tuple[Resource, str]] = field(default_factory=set)


class Applier:
    def __init__(
        self,
        client: KubeClient,
        index: OwnedIndex,
        writes: WriteLedger,
        *,
        field_manager: str,
        provider_name: str,
        intent_annotation: str,
        resources: Sequence[Resource],
        unpruned: frozenset[Resource] = frozenset(),
    ) -> None:
        self.client = client
        self.index = index
        self.writes = writes
        self.field_manager = field_manager
        self.provider_name = provider_name
        self.intent_annotation = intent_annotation
        self._by_gvk: Mapping[GroupVersionKind, Resource] = {r.gvk: r for r in resources}
        # Kinds written by the runtime itself (the connection Secret), never pruned by a sync.
        self.unpruned = unpruned

    def resource_for(self, obj: KubeObject) -> Resource:
        resource = self._by_gvk.get(gvk_of(obj))
        if resource is None:
            raise ValueError(
                f"the provider produced a {obj.get('apiVersion')} {obj.get('kind')}, which it does not declare as owned"
            )
        return resource

    async def sync(
        self,
        instance: KubeObject,
        desired: Sequence[KubeObject],
        *,
        available: frozenset[Resource],
        force: bool = False,
    ) -> SyncResult:
        meta = instance["metadata"]
        owner_key = object_key(instance)
        result = SyncResult()
        # The kind's CRD may be absent; the provider decides whether that matters.
        todo = [(r, obj) for obj in desired if (r := self.resource_for(obj)) in available]
        wanted = {(resource, obj["metadata"]["name"]) for resource, obj in todo}
        unseen = [key for key in wanted if self._live(owner_key, str(meta.get("uid", "")), *key) is None]
        looked_up = await self._look_up(meta["namespace"], unseen) if len(unseen) > 1 else {}
        for resource, obj in todo:
            result.observed[(resource, obj["metadata"]["name"])] = await self.apply(
                instance, obj, force=force, result=result, looked_up=looked_up
            )
        for ref in self.index.owned_by(owner_key, str(meta.get("uid", ""))):
            if (ref.resource, ref.name) not in wanted and ref.resource not in self.unpruned:
                await self.delete(ref)
                result.pruned_objects.append(f"{ref.kind} {ref.name}")
        return result

    def _live(self, owner_key: str, owner_uid: str, resource: Resource, name: str) -> OwnedRef | None:
        """Our object of that name as the watch shows it; None for none, or for a namesake
        Instance's object on its way out (not ours to write over)."""
        live = self.index.get(owner_key, resource, name)
        return live if live is not None and live.owner_uid == owner_uid else None

    async def _look_up(self, namespace: str, keys: Sequence[tuple[Resource, str]]) -> LookedUp:
        """Read the objects all at once. Errors are kept, not raised here: each belongs to the apply
        of its object, which the pass reaches in order."""

        async def read(key: tuple[Resource, str]) -> KubeObject | Exception | None:
            try:
                return await self.client.get(key[0], namespace, key[1])
            except Exception as err:  # handed to the apply that needs it
                return err

        return dict(zip(keys, await all_of([partial(read, key) for key in keys]), strict=True))

    async def apply(
        self,
        instance: KubeObject,
        obj: KubeObject,
        *,
        force: bool = False,
        result: SyncResult | None = None,
        looked_up: LookedUp | None = None,
    ) -> KubeObject:
        """Apply one object of `instance` (stamped with our ownership); the object as stored.
        `looked_up`: what the pass already read of it, if it did."""
        result = result if result is not None else SyncResult()
        resource = self.resource_for(obj)
        stamped = stamp(obj, instance, self.provider_name)
        intent = content_hash(stamped).hex()
        stamped["metadata"]["annotations"] = {
            **(stamped["metadata"].get("annotations") or {}),
            self.intent_annotation: intent,
        }
        meta = instance["metadata"]
        owner_key = object_key(instance)
        live = self._live(owner_key, str(meta.get("uid", "")), resource, stamped["metadata"]["name"])
        if live is not None and self._unchanged(live, intent, stamped):
            result.skipped += 1
            return live.object()
        object_id: ObjectId = (resource, stamped["metadata"]["namespace"], stamped["metadata"]["name"])
        with span(tracer, "apply", {"k8s.kind": stamped["kind"], "k8s.name": object_id[2]}):
            self.writes.begin(object_id)
            written: KubeObject | None = None
            try:
                written = await self._write(
                    resource, stamped, live, instance, force=force, looked_up=looked_up, result=result
                )
            finally:
                rv = None if written is None else str(written["metadata"].get("resourceVersion", ""))
                result.recheck |= self.writes.finish(object_id, rv)
        result.applied += 1
        result.written.add((resource, stamped["metadata"]["name"]))
        return written

    def _unchanged(self, live: OwnedRef, intent: str, stamped: KubeObject) -> bool:
        if live.deleting or live.intent != intent:
            return False
        if self.writes.written((live.resource, live.namespace, live.name)) == live.resource_version:
            return True  # exactly what our last write of it produced
        # Written before a restart, or edited since: look, at what the index keeps of both. (Items
        # of a core-group list carry no apiVersion and kind; the resource says what they are.)
        wanted = projected(live.resource, stamped)
        return holds(live.object(), {k: v for k, v in wanted.items() if k not in ("apiVersion", "kind")})

    async def _write(
        self,
        resource: Resource,
        stamped: KubeObject,
        live: OwnedRef | None,
        instance: KubeObject,
        *,
        force: bool,
        looked_up: LookedUp | None,
        result: SyncResult,
    ) -> KubeObject:
        try:
            if live is None:
                await self._refuse_foreign(resource, stamped, instance, looked_up or {})
            return await self._apply(resource, stamped, force=force, result=result)
        except ApiError as err:
            if not_served(err):
                raise ResourceNotServed(resource) from err
            if err.invalid:
                raise InvalidObject(stamped["kind"], stamped["metadata"]["name"], err) from err
            raise

    async def _refuse_foreign(
        self, resource: Resource, stamped: KubeObject, instance: KubeObject, looked_up: LookedUp
    ) -> None:
        """For an object the watch has not shown as ours (a first apply, or a name someone else
        took): nothing when it does not exist or is ours after all (the watch lags, or someone
        removed our labels: the apply puts them back), NameClash when it belongs to someone else."""
        meta = stamped["metadata"]
        key = (resource, meta["name"])
        if key in looked_up:
            existing = looked_up[key]
            if isinstance(existing, Exception):
                raise existing
        else:
            existing = await self.client.get(resource, meta["namespace"], meta["name"])
        if existing is not None and not is_owned_by(existing, instance):
            raise NameClash(stamped["kind"], meta["namespace"], meta["name"], owner_in_words(existing))

    async def _apply(
        self, resource: Resource, stamped: KubeObject, *, force: bool, result: SyncResult, again: bool = True
    ) -> KubeObject:
        """Apply; hand edits of our fields are taken back, entries a hand edit left in our keyed
        lists removed (before applying again when they made the object invalid), other conflicts
        raised."""
        try:
            written = await self._apply_fields(resource, stamped, force=force, result=result)
        except ApiError as err:
            if not (err.invalid and again):
                raise
            # Refused, perhaps for an entry a hand edit left beside ours (two ports named `http`).
            live = await self.client.get(resource, stamped["metadata"]["namespace"], stamped["metadata"]["name"])
            if live is None or not await self._remove_strays(
                resource, live, stamped, force=force, result=result, refused=True
            ):
                raise
            return await self._apply(resource, stamped, force=force, result=result, again=False)
        return await self._remove_strays(resource, written, stamped, force=force, result=result) or written

    async def _remove_strays(
        self,
        resource: Resource,
        live: KubeObject,
        stamped: KubeObject,
        *,
        force: bool,
        result: SyncResult,
        refused: bool = False,
    ) -> KubeObject | None:
        """Remove the entries of our keyed lists that hand edits left (every other writer's too when
        forced); the object after, or None when there were none. Another writer's entry is left
        alone, unless the API server `refused` our apply: then it is an ApplyConflict naming the
        entry and its manager (the force annotation takes it out), not a duplicate name."""
        found = stray_entries(live, stamped, self.field_manager)
        strays = [s for s in found if force or s.hand_edit]
        kind, meta = stamped["kind"], stamped["metadata"]
        if refused:
            foreign = [s for s in found if s not in strays]
            if foreign:
                raise ApplyConflict(
                    kind, meta["name"], [FieldConflict(s.field, s.managers, "an entry beside ours") for s in foreign]
                )
        if not strays:
            return None
        result.taken_back += [f"{kind} {meta['name']} {s.field} (from {s.managers})" for s in strays]
        log.info(
            "removing list entries left by hand edits", kind=kind, name=meta["name"], entries=[s.field for s in strays]
        )
        return await self.client.patch(
            resource,
            meta["namespace"],
            meta["name"],
            removal_patch(strays, live, stamped),
            content_type=JSON_PATCH,
            field_manager=self.field_manager,
        )

    async def _apply_fields(
        self, resource: Resource, stamped: KubeObject, *, force: bool, result: SyncResult
    ) -> KubeObject:
        """Apply; hand edits of our fields are taken back, other conflicts raised."""
        try:
            return await self.client.apply(resource, stamped, field_manager=self.field_manager, force=force)
        except ApiError as err:
            if not err.conflict:
                raise
            conflicts = parse_conflicts(err)
            if force or not conflicts or not all(c.hand_edit for c in conflicts):
                raise ApplyConflict(stamped["kind"], stamped["metadata"]["name"], conflicts) from err
            kind, name = stamped["kind"], stamped["metadata"]["name"]
            result.taken_back += [f"{kind} {name} {c.field} (from {c.manager})" for c in conflicts]
            log.info(
                "restoring fields edited by hand",
                kind=stamped["kind"],
                name=stamped["metadata"]["name"],
                fields=[f"{c.field} ({c.manager})" for c in conflicts],
            )
            return await self.client.apply(resource, stamped, field_manager=self.field_manager, force=True)

    async def delete(self, ref: OwnedRef) -> bool:
        """Delete an object the index shows as ours: it carries our labels and this Instance's
        controller reference (owned.owned_ref). The uid precondition makes the API server refuse if
        the name now belongs to another object (409), which is then left alone. True when the
        object is gone now: not there, or deleted at once (the answer is a Status, or the object
        without a deletionTimestamp); False while it lingers (finalizers, a grace period) or for a
        namesake (the watch says when ours went)."""
        with span(tracer, "delete", {"k8s.kind": ref.kind, "k8s.name": ref.name}):
            self.writes.forget((ref.resource, ref.namespace, ref.name))
            try:
                answer = await self.client.delete_object(ref.resource, ref.namespace, ref.name, uid=ref.uid)
            except ApiError as err:
                if err.conflict:
                    log.warning("not deleting a namesake of our object", kind=ref.kind, name=ref.name)
                    return False
                raise
            if answer is None:
                return True
            if answer.get("kind") == "Status" or not _deleting(answer):
                if self.index.get(ref.owner_key, ref.resource, ref.name) is not None:
                    # Its DELETED event is still to come (the watch may have been faster).
                    self.writes.deleted((ref.resource, ref.namespace, ref.name))
                return True
            # It lingers, and the answer says so already: the index shows it going now, as its
            # watch event will, so a retry that comes before that event does not delete it again.
            indexed = self.index.get(ref.owner_key, ref.resource, ref.name)
            if indexed is not None and indexed.uid == ref.uid and not indexed.deleting:
                self.index.update(indexed, replace(indexed, deleting=True))
            return False
