"""Why a write of a derived object was refused, in words an Instance's status can carry.

A field owned by another manager is an `ApplyConflict` naming the field and the manager, never a
silent takeover or a blind retry; a derived name taken by an object that is not this Instance's is
a `NameClash`; an object the API server refuses as invalid is `InvalidObject`, with the field and
why; a kind whose CRD went away after discovery is `ResourceNotServed`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from actors.client import ApiError
from actors.client.resource import KubeObject, Resource

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


def owner_in_words(obj: KubeObject) -> str:
    """Who `obj` belongs to, in words, for a NameClash message."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            return f"is controlled by {ref.get('kind', '?')} {ref.get('name', '?')}"
    return "was not created for this Instance"


class InvalidObject(Exception):
    """The API server refused a derived object as invalid (422): the field and why, in its words.
    Retrying cannot help; only a change of the Instance can."""

    def __init__(self, kind: str, name: str, err: ApiError) -> None:
        self.kind = kind
        self.name = name
        # Causes without a field (`<nil>: Invalid value: null`) say only that other rules were
        # skipped after the first failure: noise next to the causes that name a field.
        causes = [c for c in err.causes if c.get("field") and c.get("field") != "<nil>"]
        detail = "; ".join(f"{c['field']}: {c.get('message', '')}" for c in causes) if causes else err.message
        super().__init__(f"{kind} {name} was refused by the API server: {detail}")


def not_served(err: ApiError) -> bool:
    """A write answered 404 without a Status: the whole resource is gone (the API server's `404 page
    not found`), not the object or its namespace."""
    return err.not_found and not err.body


def parse_conflicts(err: ApiError) -> list[FieldConflict]:
    conflicts = []
    for cause in err.causes:
        message = str(cause.get("message", ""))
        match = _CONFLICT.search(message)
        manager = match["manager"] if match else "unknown"
        by_update = bool(match and match["update"])
        conflicts.append(FieldConflict(str(cause.get("field", "")), manager, message, by_update))
    return conflicts
