"""An in-process stand-in for the API server behind `KubeClient`, for unit tests of the runtime's
reconciler and informers: the verbs they use (get, apply, patch, replace, create, delete_object,
list_all, list_pages, watch), with what they rely on: uids, resourceVersions and generations, the
resourceVersion precondition of a write, a JSON patch's `test`, the status subresource, finalizers
holding a delete, a delete's uid precondition; a watch from a resourceVersion replays what changed
after it, then waits for more, with bookmarks, the server ending it (`changes.end_watches`), and 410 Gone
for a resourceVersion older than the last compaction (`changes.compact`) (tests.support.fake_changes).

It is not a second API server: server-side apply merges the applied fields into the stored object
(no field ownership, so no apply conflicts unless a test injects one), and label selectors are
`key=value` terms. A test makes a request fail with `fail(...)` and reads what was asked of it in
`calls`.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from actors.client import JSON_PATCH, ApiError
from actors.client.kube_client import Page
from actors.interface import KubeObject, Resource
from tests.support.fake_changes import ChangeLog, labelled, selector


@dataclass(frozen=True)
class Call:
    verb: str  # get, apply, patch, replace, create, delete, list
    resource: Resource
    namespace: str | None
    name: str | None
    subresource: str = ""


@dataclass
class _Failure:
    verb: str
    resource: Resource | None
    subresource: str | None
    error: Exception
    times: int


def api_error(status: int, reason: str, message: str = "") -> ApiError:
    """An error as the API server answers it (a metav1.Status body)."""
    body = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": reason, "code": status}
    return ApiError(status=status, reason=reason, message=message or reason, body={**body, "message": message})


@dataclass
class FakeKube:
    objects: dict[tuple[Resource, str | None, str], KubeObject] = field(default_factory=dict)
    calls: list[Call] = field(default_factory=list)
    _failures: list[_Failure] = field(default_factory=list)
    _uids: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    changes: ChangeLog = field(default_factory=ChangeLog)  # compact(), bookmark(), end_watches()

    # -- what a test arranges and reads ------------------------------------------------------

    def fail(
        self,
        verb: str,
        error: Exception,
        *,
        resource: Resource | None = None,
        subresource: str | None = None,
        times: int = 1,
    ) -> None:
        """The next `times` requests of `verb` (on `resource`, `subresource` when given) raise `error`."""
        self._failures.append(_Failure(verb, resource, subresource, error, times))

    def stored(self, resource: Resource, namespace: str | None, name: str) -> KubeObject | None:
        """The object as stored (a copy), without a request."""
        obj = self.objects.get((resource, namespace, name))
        return copy.deepcopy(obj) if obj is not None else None

    def put(self, resource: Resource, obj: KubeObject) -> KubeObject:
        """Store `obj` as if someone else had created or replaced it (no request recorded)."""
        meta = obj["metadata"]
        key = (resource, meta.get("namespace"), meta["name"])
        stored = copy.deepcopy(obj)
        stored.setdefault("apiVersion", resource.api_version)
        stored.setdefault("kind", resource.kind)
        stored["metadata"].setdefault("uid", f"uid-{next(self._uids)}")
        stored["metadata"].setdefault("generation", 1)
        stored["metadata"]["resourceVersion"] = self.changes.next_version()
        self.changes.record(resource, "MODIFIED" if key in self.objects else "ADDED", stored)
        self.objects[key] = stored
        return copy.deepcopy(stored)

    def remove(self, resource: Resource, namespace: str | None, name: str) -> None:
        """Delete the object as if someone else had (no request recorded, finalizers ignored)."""
        gone = self.objects.pop((resource, namespace, name))
        gone["metadata"]["resourceVersion"] = self.changes.next_version()
        self.changes.record(resource, "DELETED", gone)

    def writes(self, verb: str, resource: Resource, subresource: str = "") -> list[Call]:
        return [c for c in self.calls if (c.verb, c.resource, c.subresource) == (verb, resource, subresource)]

    def view(self, resource: Resource) -> Mapping[str, KubeObject]:
        """`namespace/name` -> a fresh copy of each stored object of `resource`: an informer's cache
        that is always up to date."""
        return _View(self, resource)

    # -- the verbs ---------------------------------------------------------------------------

    async def get(self, res: Resource, namespace: str | None, name: str) -> KubeObject | None:
        self._request("get", res, namespace, name)
        return self.stored(res, namespace, name)

    async def list_all(
        self, res: Resource, namespace: str | None = None, *, label_selector: str | None = None, page_size: int = 500
    ) -> tuple[list[KubeObject], str]:
        self._request("list", res, namespace, None)
        return self._listed(res, namespace, label_selector), str(self.changes.revision)

    async def list_pages(
        self,
        res: Resource,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        page_size: int = 500,
        page_bytes: int = 4 * 1024 * 1024,
    ) -> AsyncIterator[Page]:
        """`page_size` objects a page (the fake does not weigh them), each page a request."""
        items, revision = self._listed(res, namespace, label_selector), str(self.changes.revision)
        for start in range(0, max(len(items), 1), page_size):
            self._request("list", res, namespace, None)
            done = start + page_size >= len(items)
            yield Page(items[start : start + page_size], revision, done)

    async def watch(
        self,
        res: Resource,
        namespace: str | None,
        resource_version: str,
        *,
        label_selector: str | None = None,
        timeout_seconds: int = 300,
    ) -> AsyncIterator[dict[str, Any]]:
        """The changes after `resource_version`, then each new one as it is made, until
        `timeout_seconds` pass or `end_watches()`."""
        self._request("watch", res, namespace, None)
        since = int(resource_version)
        if since < self.changes.compacted:
            raise api_error(410, "Expired", f"too old resource version: {since} ({self.changes.compacted})")
        async for event in self.changes.watch(res, namespace, since, label_selector, timeout_seconds):
            yield event

    async def create(self, res: Resource, obj: KubeObject, *, field_manager: str | None = None) -> KubeObject:
        meta = obj["metadata"]
        self._request("create", res, meta.get("namespace"), meta["name"])
        if (res, meta.get("namespace"), meta["name"]) in self.objects:
            raise api_error(409, "AlreadyExists", f'{res.plural} "{meta["name"]}" already exists')
        return self.put(res, obj)

    async def apply(
        self,
        res: Resource,
        obj: KubeObject,
        *,
        field_manager: str,
        force: bool = False,
        subresource: str = "",
        dry_run: bool = False,
    ) -> KubeObject:
        meta = obj["metadata"]
        self._request("apply", res, meta.get("namespace"), meta["name"], subresource)
        current = self.objects.get((res, meta.get("namespace"), meta["name"]))
        if current is None:
            return self.put(res, obj)
        merged = _merged(current, obj)
        return self._store(res, current, merged)

    async def patch(
        self,
        res: Resource,
        namespace: str | None,
        name: str,
        body: Any,
        *,
        content_type: str = "",
        subresource: str = "",
        field_manager: str | None = None,
    ) -> KubeObject:
        self._request("patch", res, namespace, name, subresource)
        current = self._existing(res, namespace, name)
        if content_type == JSON_PATCH:
            patched = _json_patched(current, body)
        else:
            _check_version(current, (body.get("metadata") or {}).get("resourceVersion"))
            patched = _merge_patched(current, body)
        return self._store(res, current, patched)

    async def replace(
        self, res: Resource, obj: KubeObject, *, subresource: str = "", field_manager: str | None = None
    ) -> KubeObject:
        meta = obj["metadata"]
        self._request("replace", res, meta.get("namespace"), meta["name"], subresource)
        current = self._existing(res, meta.get("namespace"), meta["name"])
        _check_version(current, meta.get("resourceVersion"))
        if subresource == "status":
            replaced = {**copy.deepcopy(current), "status": copy.deepcopy(obj.get("status") or {})}
        else:
            replaced = {**copy.deepcopy(obj), "status": copy.deepcopy(current.get("status") or {})}
            replaced["metadata"] = {**copy.deepcopy(current["metadata"]), **copy.deepcopy(meta)}
        return self._store(res, current, replaced)

    async def delete_object(
        self,
        res: Resource,
        namespace: str | None,
        name: str,
        *,
        propagation: str = "Background",
        uid: str | None = None,
    ) -> KubeObject | None:
        self._request("delete", res, namespace, name)
        key = (res, namespace, name)
        current = self.objects.get(key)
        if current is None:
            return None
        if uid is not None and current["metadata"]["uid"] != uid:
            raise api_error(409, "Conflict", f"Precondition failed: UID in precondition: {uid}")
        if current["metadata"].get("finalizers"):
            held = copy.deepcopy(current)
            held["metadata"].setdefault("deletionTimestamp", "2026-01-01T00:00:00Z")
            return self._store(res, current, held)
        self.remove(res, namespace, name)
        return {"kind": "Status", "apiVersion": "v1", "status": "Success"}

    async def delete(
        self,
        res: Resource,
        namespace: str | None,
        name: str,
        *,
        propagation: str = "Background",
        uid: str | None = None,
    ) -> bool:
        return await self.delete_object(res, namespace, name, propagation=propagation, uid=uid) is not None

    # -- the server's side -------------------------------------------------------------------

    def _request(self, verb: str, res: Resource, namespace: str | None, name: str | None, sub: str = "") -> None:
        self.calls.append(Call(verb, res, namespace, name, sub))
        for failure in self._failures:
            if (
                failure.verb == verb
                and failure.resource in (None, res)
                and failure.subresource in (None, sub)
                and failure.times > 0
            ):
                failure.times -= 1
                raise failure.error

    def _existing(self, res: Resource, namespace: str | None, name: str) -> KubeObject:
        current = self.objects.get((res, namespace, name))
        if current is None:
            raise api_error(404, "NotFound", f'{res.plural} "{name}" not found')
        return current

    def _store(self, res: Resource, current: KubeObject, new: KubeObject) -> KubeObject:
        """Write `new` over `current`: a new resourceVersion when anything changed, a new generation
        when the spec did; an object being deleted goes once its last finalizer does."""
        meta = new["metadata"]
        for fixed in ("uid", "generation", "resourceVersion", "deletionTimestamp"):
            if fixed in current["metadata"]:
                meta[fixed] = current["metadata"][fixed]
        if new == current:
            return copy.deepcopy(current)
        if new.get("spec") != current.get("spec"):
            meta["generation"] = int(current["metadata"].get("generation", 1)) + 1
        meta["resourceVersion"] = self.changes.next_version()
        key = (res, meta.get("namespace"), meta["name"])
        if meta.get("deletionTimestamp") and not meta.get("finalizers"):
            del self.objects[key]
            self.changes.record(res, "DELETED", new)
        else:
            self.objects[key] = new
            self.changes.record(res, "MODIFIED", new)
        return copy.deepcopy(new)

    def _listed(self, res: Resource, namespace: str | None, label_selector: str | None) -> list[KubeObject]:
        wanted = selector(label_selector)
        return [
            copy.deepcopy(obj)
            for (r, ns, _), obj in sorted(self.objects.items(), key=lambda item: item[0][1:])
            if r == res and (namespace is None or ns == namespace) and labelled(obj, wanted)
        ]


class _View(Mapping[str, KubeObject]):
    def __init__(self, kube: FakeKube, resource: Resource) -> None:
        self._kube = kube
        self._resource = resource

    def _keys(self) -> list[str]:
        return [f"{ns}/{name}" for (r, ns, name) in self._kube.objects if r == self._resource]

    def __getitem__(self, key: str) -> KubeObject:
        namespace, _, name = key.partition("/")
        obj = self._kube.stored(self._resource, namespace, name)
        if obj is None:
            raise KeyError(key)
        return obj

    def __iter__(self) -> Iterator[str]:
        return iter(self._keys())

    def __len__(self) -> int:
        return len(self._keys())


def _check_version(current: KubeObject, wanted: str | None) -> None:
    if wanted is not None and wanted != current["metadata"]["resourceVersion"]:
        raise api_error(
            409,
            "Conflict",
            "the object has been modified; please apply your changes to the latest version and try again",
        )


def _merged(current: Any, applied: Any) -> Any:
    """Server-side apply without field ownership: the applied fields over the stored ones (lists
    are replaced whole)."""
    if isinstance(current, dict) and isinstance(applied, dict):
        out = copy.deepcopy(current)
        for key, value in applied.items():
            out[key] = _merged(current.get(key), value)
        return out
    return copy.deepcopy(applied)


def _merge_patched(current: Any, patch: Any) -> Any:
    """RFC 7386: a null removes a key, a mapping merges, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = copy.deepcopy(current) if isinstance(current, dict) else {}
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = _merge_patched(out.get(key), value)
    return out


def _json_patched(current: KubeObject, ops: list[dict[str, Any]]) -> KubeObject:
    """RFC 6902 test, add, replace and remove; a failed test is the API server's 422."""
    out = copy.deepcopy(current)
    for op in ops:
        *parents, last = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].lstrip("/").split("/")]
        node: Any = out
        for part in parents:
            node = node.setdefault(part, {}) if op["op"] == "add" else node.get(part, {})
        if op["op"] == "test":
            if node.get(last) != op["value"]:
                raise api_error(422, "Invalid", f"the server rejected our request: test failed at {op['path']}")
        elif op["op"] in ("add", "replace"):
            node[last] = copy.deepcopy(op["value"])
        elif op["op"] == "remove":
            node.pop(last, None)
    return out
