"""Entries of keyed lists that another writer left beside ours, found in `managedFields`.

A list of `x-kubernetes-list-type: map` (a Service's ports by port and protocol, a container's env
by name, a pod's volumes by name, ...) is merged entry by entry. When a plain update (`kubectl
edit`) changes an entry's key (port 8000 to 6666), the API server sees our entry removed and a new
one added, owned by the editor alone; our next apply adds ours back *beside* it, and server-side
apply can never remove an entry it does not own. The object then differs from what the Instance
says for good, or the API server refuses it (two ports named `http`).

`stray_entries` finds such entries: in a list the desired object sets, not applied by us, with a
key the desired object does not have. `removal_patch` is the JSON patch that takes them out, each
removal guarded by a test of the entry as it was read (an entry changed or moved meanwhile makes
the patch fail rather than remove the wrong one), and puts ours in where the object lacks them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from actors.apply.conflicts import HAND_EDIT_MANAGER_PREFIX
from actors.client.resource import KubeObject

# ("f", field name) or ("k", ((key field, value), ...)): one step of a managedFields path.
Step = tuple[str, Any]
Path = tuple[Step, ...]


@dataclass(frozen=True)
class Owner:
    manager: str
    operation: str  # Apply or Update
    # Our own manager by update: the patch that put our entry back in place of a stray one (see
    # removal_patch) holds it beside our apply until the apply lets it go.
    ours: bool = False

    @property
    def hand_edit(self) -> bool:
        """`kubectl edit` and friends, as for a field taken by hand (conflicts.FieldConflict), or
        our own patch's hold on an entry our apply no longer wants."""
        return self.operation == "Update" and (self.ours or self.manager.startswith(HAND_EDIT_MANAGER_PREFIX))


@dataclass(frozen=True)
class StrayEntry:
    path: Path
    pointer: tuple[str | int, ...]  # where it is in the object read, for the JSON patch
    entry: Any  # the entry as read (the patch tests it before removing it)
    owners: tuple[Owner, ...]

    @property
    def field(self) -> str:
        """`.spec.ports[port=6666,protocol=TCP]`: the entry, in the words of a conflict's field."""
        out = ""
        for kind, value in self.path:
            out += f".{value}" if kind == "f" else "[" + ",".join(f"{k}={v}" for k, v in value) + "]"
        return out

    @property
    def managers(self) -> str:
        return ", ".join(sorted({o.manager for o in self.owners}))

    @property
    def hand_edit(self) -> bool:
        return all(o.hand_edit for o in self.owners)


def _keyed_paths(fields: Mapping[str, Any], prefix: Path = ()) -> Iterator[Path]:
    """The path of every keyed list entry in a fieldsV1 tree."""
    for key, sub in fields.items():
        if key.startswith("f:"):
            yield from _keyed_paths(sub or {}, (*prefix, ("f", key[2:])))
        elif key.startswith("k:"):
            step = ("k", tuple(sorted(json.loads(key[2:]).items())))
            yield (*prefix, step)
            yield from _keyed_paths(sub or {}, (*prefix, step))


def _matches(item: Any, key: tuple[tuple[str, Any], ...], *, partial: bool) -> bool:
    """`item` has the key's values. `partial`: a key field the item leaves out matches (a desired
    entry may leave a defaulted key field to the API server, e.g. a port's protocol)."""
    if not isinstance(item, dict):
        return False
    return all(item[k] == v if k in item else partial for k, v in key)


def _resolve(obj: Any, path: Path, *, partial: bool = False) -> tuple[tuple[str | int, ...], Any] | None:
    """The JSON pointer parts and value at `path` in `obj`, or None where it has none."""
    node: Any = obj
    pointer: tuple[str | int, ...] = ()
    for kind, value in path:
        if kind == "f":
            if not isinstance(node, dict) or value not in node:
                return None
            node, pointer = node[value], (*pointer, value)
        else:
            if not isinstance(node, list):
                return None
            found = next((i for i, item in enumerate(node) if _matches(item, value, partial=partial)), None)
            if found is None:
                return None
            node, pointer = node[found], (*pointer, found)
    return pointer, node


def stray_entries(live: KubeObject, desired: KubeObject, field_manager: str) -> list[StrayEntry]:
    """Entries of `live`'s keyed lists that `desired` sets, not applied by `field_manager`, whose key
    `desired` lacks; the outermost only (an entry inside a stray one goes with it). Status writers
    (a subresource) never count."""
    owners: dict[Path, set[Owner]] = {}
    ours: set[Path] = set()
    for managed in (live.get("metadata") or {}).get("managedFields") or []:
        if managed.get("subresource") or managed.get("fieldsType") != "FieldsV1":
            continue
        manager, operation = str(managed.get("manager", "")), str(managed.get("operation", ""))
        for path in _keyed_paths(managed.get("fieldsV1") or {}):
            if manager == field_manager and operation == "Apply":
                ours.add(path)
            else:
                owners.setdefault(path, set()).add(Owner(manager, operation, ours=manager == field_manager))
    strays: list[StrayEntry] = []
    for path in sorted(owners.keys() - ours, key=len):
        if any(path[: len(s.path)] == s.path for s in strays):
            continue
        wanted_list = _resolve(desired, path[:-1], partial=True)
        if wanted_list is None or not isinstance(wanted_list[1], list):
            continue  # a list we do not set: not ours to tidy
        if any(_matches(item, path[-1][1], partial=True) for item in wanted_list[1]):
            continue  # we want an entry of that key: the apply keeps or restores it
        found = _resolve(live, path)
        if found is None:
            continue
        pointer, entry = found
        strays.append(StrayEntry(path, pointer, entry, tuple(sorted(owners[path], key=str))))
    return strays


def _escape(part: str | int) -> str:
    return str(part).replace("~", "~0").replace("/", "~1")


def _pointer(parts: tuple[str | int, ...]) -> str:
    return "/" + "/".join(_escape(p) for p in parts)


def removal_patch(strays: list[StrayEntry], live: KubeObject, desired: KubeObject) -> list[dict[str, Any]]:
    """A JSON patch removing `strays`, the last of a list first (so that the indexes of the ones
    still to go hold), each after a test of the entry as read; then adding, to each list it touched,
    the entries of `desired` that `live` lacks. The API server checks the object after the whole
    patch: a Service whose only port a hand edit renumbered would be refused without a port, and a
    list that must not be empty never is. (Those entries are ours by this update until our next
    apply holds them too; stray_entries treats that hold like a hand edit once the apply lets go.)"""
    ops: list[dict[str, Any]] = []
    for stray in sorted(strays, key=lambda s: [(isinstance(p, int), p) for p in s.pointer], reverse=True):
        where = _pointer(stray.pointer)
        ops += [{"op": "test", "path": where, "value": stray.entry}, {"op": "remove", "path": where}]
    by_list: dict[tuple[str | int, ...], list[StrayEntry]] = {}
    for stray in strays:
        by_list.setdefault(stray.pointer[:-1], []).append(stray)
    for parent, removed in by_list.items():
        path = removed[0].path
        key_fields = [k for k, _ in path[-1][1]]
        wanted = _resolve(desired, path[:-1], partial=True)
        present = _resolve(live, path[:-1])
        if wanted is None or present is None or not isinstance(wanted[1], list):
            continue
        gone = [s.entry for s in removed]
        kept = [item for item in present[1] if item not in gone]
        for entry in wanted[1]:
            key = tuple((k, entry[k]) for k in key_fields if isinstance(entry, dict) and k in entry)
            if not any(_matches(item, key, partial=False) for item in kept):
                ops.append({"op": "add", "path": _pointer(parent) + "/-", "value": entry})
    return ops
