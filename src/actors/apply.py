"""Server-side apply of an Instance's derived objects, and pruning of the ones no longer desired.

Every write is a strict dry-run first (dryRun=All), then the apply itself, under one field manager
and never forced unless the Instance opts in. A field owned by another manager surfaces as an
`ApplyConflict` naming the field and the manager instead of a silent takeover or a blind retry.
An object whose desired content and live resourceVersion are both what we last applied is not
sent again (its watched copy serves as the observed state), so a resync of converged Instances
writes, and reads, nothing. The watch event of our own apply (the object exactly as the apply
returned it, which that reconcile observed already) wakes nobody; an event that may be anything
else does, so a change by someone else is never missed.

Only what is already ours is ever written over or deleted. An object we have not seen carry our
labels and this Instance's controller reference is read first; if it exists, it belongs to someone
else (a Service created by hand that happens to have a derived name): it is reported as a
`NameClash`, never applied to, forced or deleted. Deletes carry the uid of the object we judged as
a precondition, so a namesake created in between is not touched either.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import structlog
from opentelemetry import trace

from actors.interface import KubeObject, Resource
from actors.kube import ApiError, KubeClient
from actors.owned import OwnedIndex, OwnedRef
from actors.ownership import is_owned_by, stamp

log = structlog.get_logger("actors.apply")
tracer = trace.get_tracer("actors.apply")

# kubectl's field managers for its writes that are not server-side applies (kubectl-edit,
# kubectl-patch, kubectl-scale, kubectl-label, kubectl-client-side-apply, ...): hand edits.
HAND_EDIT_MANAGER_PREFIX = "kubectl"
# The API server names the other manager as `conflict with "<manager>"`, then, for a manager that
# wrote with a plain update rather than an apply, ` using <apiVersion>` (after any
# ` with subresource "<name>"`).
_CONFLICT = re.compile(r'conflict with "(?P<manager>[^"]*)"(?: with subresource "[^"]*")?(?P<update> using )?')


@dataclass(frozen=True)
class FieldConflict:
    field: str
    manager: str
    message: str
    # The other manager wrote the field with a plain update (no ownership check), not an apply.
    by_update: bool = False

    @property
    def hand_edit(self) -> bool:
        """`kubectl edit` and friends: an update never checks field ownership, so it silently took
        a field of ours. That is drift to restore, not a co-owner that applied on purpose."""
        return self.by_update and self.manager.startswith(HAND_EDIT_MANAGER_PREFIX)


class ApplyConflict(Exception):
    def __init__(self, kind: str, name: str, conflicts: Sequence[FieldConflict]) -> None:
        self.kind = kind
        self.name = name
        self.conflicts = list(conflicts)
        detail = "; ".join(f"{c.field} is owned by field manager {c.manager!r}" for c in conflicts)
        super().__init__(f"{kind} {name}: {detail}" if detail else f"{kind} {name}: apply conflict")


class NameClash(Exception):
    """A derived object's name is taken by an object that is not this Instance's."""

    def __init__(self, kind: str, namespace: str, name: str, owner: str) -> None:
        self.kind = kind
        self.name = name
        super().__init__(
            f"{kind} {namespace}/{name} already exists and {owner}; the provider does not adopt or change "
            "objects it did not create: delete or rename it, or rename the Instance"
        )


class ResourceNotServed(Exception):
    """The API server does not serve the resource (its CRD was removed after discovery)."""

    def __init__(self, resource: Resource) -> None:
        self.resource = resource
        super().__init__(f"{resource} is not served")


def _owner_of(obj: KubeObject) -> str:
    """Who `obj` belongs to, in words, for a NameClash message."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return f"is controlled by {ref.get('kind', '?')} {ref.get('name', '?')}"
    return "was not created for this Instance"


def _not_served(err: ApiError) -> bool:
    """An apply (which creates what is missing) answered 404 without a Status: the whole resource is
    gone (the API server's `404 page not found`), not the object or its namespace."""
    return err.status == 404 and not err.body


def _parse_conflicts(err: ApiError) -> list[FieldConflict]:
    conflicts = []
    for cause in err.causes:
        message = str(cause.get("message", ""))
        match = _CONFLICT.search(message)
        manager = match["manager"] if match else "unknown"
        by_update = bool(match and match["update"])
        conflicts.append(FieldConflict(str(cause.get("field", "")), manager, message, by_update))
    return conflicts


def content_hash(obj: KubeObject) -> bytes:
    """A 128-bit digest of `obj`: collision-safe for skipping applies, 16 bytes per cached object."""
    return hashlib.blake2b(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode(), digest_size=16).digest()


def _resource_version(obj: KubeObject) -> str:
    return str(obj["metadata"].get("resourceVersion", ""))


@dataclass(slots=True)
class _Applied:
    digest: bytes
    resource_version: str


@dataclass
class SyncResult:
    observed: dict[tuple[str, str], KubeObject] = field(default_factory=dict)
    applied: int = 0
    skipped: int = 0
    pruned: int = 0


class Applier:
    def __init__(
        self,
        client: KubeClient,
        index: OwnedIndex,
        *,
        field_manager: str,
        provider_name: str,
        resources_by_kind: Mapping[str, Resource],
        wake_owner: Callable[[str], None] = lambda owner_key: None,
        unpruned: frozenset[Resource] = frozenset(),
    ) -> None:
        self.client = client
        self.index = index
        self.field_manager = field_manager
        self.provider_name = provider_name
        self.resources_by_kind = dict(resources_by_kind)
        # Kinds written by the runtime itself (the connection Secret), never pruned by a sync.
        self.unpruned = unpruned
        # (resource, namespace, name) -> what we last applied and the resourceVersion it produced.
        self._applied: dict[tuple[Resource, str, str], _Applied] = {}
        # Applies under way -> resourceVersion of the latest watch event for that object since it
        # started ("" for none): the event may come back before the response that tells us whose
        # write it was, so it is held until then.
        self._in_flight: dict[tuple[Resource, str, str], str] = {}
        self._wake_owner = wake_owner

    def resource_for(self, obj: KubeObject) -> Resource:
        kind = obj["kind"]
        resource = self.resources_by_kind.get(kind)
        if resource is None:
            raise ValueError(f"the provider produced a {kind}, which it does not declare as owned")
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
        owner_key = f"{meta['namespace']}/{meta['name']}"
        result = SyncResult()
        wanted: set[tuple[Resource, str]] = set()
        for obj in desired:
            resource = self.resource_for(obj)
            if resource not in available:
                # The kind's CRD is absent; the provider decides whether that matters.
                continue
            name = obj["metadata"]["name"]
            wanted.add((resource, name))
            result.observed[(obj["kind"], name)] = await self.apply(instance, obj, force=force, result=result)
        for ref in self.index.owned_by(owner_key, str(meta.get("uid", ""))):
            if (ref.resource, ref.name) not in wanted and ref.resource not in self.unpruned:
                await self.delete(ref)
                result.pruned += 1
        return result

    async def apply(
        self, instance: KubeObject, obj: KubeObject, *, force: bool = False, result: SyncResult | None = None
    ) -> KubeObject:
        """Apply one object of `instance` (stamped with our ownership); the object as stored."""
        result = result if result is not None else SyncResult()
        resource = self.resource_for(obj)
        stamped = stamp(obj, instance, self.provider_name)
        meta = instance["metadata"]
        live = self.index.get(f"{meta['namespace']}/{meta['name']}", resource, stamped["metadata"]["name"])
        if live is not None and live.owner_uid != meta.get("uid"):
            live = None  # a namesake Instance's object on its way out: not ours to write over
        return await self._apply_one(resource, stamped, live, instance, force=force, result=result)

    async def _apply_one(
        self,
        resource: Resource,
        stamped: KubeObject,
        live: OwnedRef | None,
        instance: KubeObject,
        *,
        force: bool,
        result: SyncResult,
    ) -> KubeObject:
        namespace = stamped["metadata"]["namespace"]
        name = stamped["metadata"]["name"]
        cache_key = (resource, namespace, name)
        digest = content_hash(stamped)
        last = self._applied.get(cache_key)
        if (
            last is not None
            and live is not None
            and not live.deleting
            and last.digest == digest
            and last.resource_version == live.resource_version
        ):
            result.skipped += 1
            return live.object()
        ours = live is not None or await self._existing_is_ours(resource, stamped, instance)
        meta = instance["metadata"]
        owner_key = f"{meta['namespace']}/{meta['name']}"
        with tracer.start_as_current_span(
            "apply", attributes={"k8s.kind": stamped["kind"], "k8s.name": name}
        ):
            self._in_flight[cache_key] = ""
            applied: KubeObject | None = None
            try:
                applied = await self._write(resource, stamped, force=force, ours=ours)
            finally:
                seen = self._in_flight.pop(cache_key)
                if seen and (applied is None or seen != _resource_version(applied)):
                    # An event arrived during the apply that is not our write (or we cannot tell):
                    # the owner runs again to look at it.
                    self._wake_owner(owner_key)
        self._applied[cache_key] = _Applied(digest, _resource_version(applied))
        result.applied += 1
        return applied

    async def _existing_is_ours(self, resource: Resource, stamped: KubeObject, instance: KubeObject) -> bool:
        """For an object our watch has not shown us as ours (a first apply, or a name someone else
        took): False when it does not exist yet, True when it is ours after all (the watch lags),
        NameClash when it belongs to someone else."""
        meta = stamped["metadata"]
        try:
            existing = await self.client.get(resource, meta["namespace"], meta["name"])
        except ApiError as err:
            if _not_served(err):
                raise ResourceNotServed(resource) from err
            raise
        if existing is None:
            return False
        # Its controller reference names this very Instance (by uid): ours, even if someone removed
        # our labels by hand (the apply puts them back). Anything else is not ours to write.
        if not is_owned_by(existing, instance):
            raise NameClash(stamped["kind"], meta["namespace"], meta["name"], _owner_of(existing))
        return True

    async def _write(self, resource: Resource, stamped: KubeObject, *, force: bool, ours: bool) -> KubeObject:
        """Apply; hand edits of our fields on an object of ours are taken back, other conflicts
        raised."""
        try:
            return await self._dry_run_then_apply(resource, stamped, force=force)
        except ApiError as err:
            if _not_served(err):
                raise ResourceNotServed(resource) from err
            if err.status != 409:
                raise
            conflicts = _parse_conflicts(err)
            if force or not ours or not conflicts or not all(c.hand_edit for c in conflicts):
                raise ApplyConflict(stamped["kind"], stamped["metadata"]["name"], conflicts) from err
            log.info(
                "restoring fields edited by hand",
                kind=stamped["kind"],
                name=stamped["metadata"]["name"],
                fields=[f"{c.field} ({c.manager})" for c in conflicts],
            )
            return await self._dry_run_then_apply(resource, stamped, force=True)

    async def _dry_run_then_apply(self, resource: Resource, stamped: KubeObject, *, force: bool) -> KubeObject:
        await self.client.apply(resource, stamped, field_manager=self.field_manager, force=force, dry_run=True)
        applied: KubeObject = await self.client.apply(resource, stamped, field_manager=self.field_manager, force=force)
        return applied

    async def delete(self, ref: OwnedRef) -> bool:
        """Delete an object the index shows as ours: it carries our labels and this Instance's
        controller reference (owned.owned_ref). The uid precondition makes the API server refuse if
        the name now belongs to another object (409), which is then left alone."""
        with tracer.start_as_current_span(
            "delete", attributes={"k8s.kind": ref.kind, "k8s.name": ref.name}
        ):
            self._applied.pop((ref.resource, ref.namespace, ref.name), None)
            try:
                return await self.client.delete(ref.resource, ref.namespace, ref.name, uid=ref.uid)
            except ApiError as err:
                if err.status == 409:
                    log.warning("not deleting a namesake of our object", kind=ref.kind, name=ref.name)
                    return False
                raise

    def absorbs_echo(self, ref: OwnedRef) -> bool:
        """Whether the watch event `ref` needs no reconcile: it is exactly what our last apply of the
        object returned (observed by the reconcile that made it), or it arrived while an apply of
        the object is under way and is held until the response shows whose write it was."""
        key = (ref.resource, ref.namespace, ref.name)
        if key in self._in_flight:
            self._in_flight[key] = ref.resource_version
            return True
        last = self._applied.get(key)
        return last is not None and not ref.deleting and last.resource_version == ref.resource_version

    def forget(self, namespace: str, names: Sequence[tuple[Resource, str]] = ()) -> None:
        for resource, name in names:
            self._applied.pop((resource, namespace, name), None)
