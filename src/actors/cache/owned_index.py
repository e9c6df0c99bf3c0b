"""A compact index of the derived objects we own, fed by label-selected informers.

Per object we keep what the runtime needs: its resourceVersion (to skip no-op applies), the
owning Instance (to wake its actor and to inventory it), whether it is being deleted, and what the
provider reads of the object (`projected`) as zlib-compressed JSON, for status mapping and to tell
whether our values still hold. Compressed, an LLMInferenceService costs well under a kilobyte, so a
steady-state pass reads nothing from the API server and thousands of Instances still fit.

What is kept is bounded by what the provider wrote, not by what anyone else stores: a Secret's
values are kept as digests (the runtime only ever compares them with its own), and an object whose
projection is over `max_bytes` of JSON (someone else's bulk on an object of ours) is kept as a stub,
its metadata only, and applied again whole at the next pass.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, Final

from actors.cache.packed import compress, unpack, without_managed_fields
from actors.client import json_codec
from actors.client.known_resources import SECRETS
from actors.contract import INSTANCE_GROUP, INSTANCE_KIND, LABEL_INSTANCE, LABEL_MANAGED_BY, MANAGED_BY_VALUE
from actors.interface import KubeObject, Resource


def _packed(resource: Resource, obj: KubeObject, max_bytes: int) -> bytes:
    raw = json_codec.dumps(projected(resource, obj))
    if len(raw) > max_bytes:
        raw = json_codec.dumps(_stub(obj))
    return compress(raw)


@dataclass(frozen=True, slots=True)
class OwnedRef:
    resource: Resource
    namespace: str
    name: str
    kind: str
    resource_version: str
    owner_uid: str
    owner_name: str
    deleting: bool
    packed: bytes = b""
    uid: str = ""
    # The digest of the intent we last applied, from the object's annotation (survives restarts).
    intent: str = ""

    def object(self) -> KubeObject:
        """The object as last seen by the watch (without managedFields)."""
        return unpack(self.packed) if self.packed else {}

    @property
    def owner_key(self) -> str:
        return f"{self.namespace}/{self.owner_name}"


def _digest(value: Any) -> str:
    return hashlib.blake2b(str(value).encode(), digest_size=16).hexdigest()


def projected(resource: Resource, obj: KubeObject) -> KubeObject:
    """What the runtime keeps and compares of an object of `resource`: all of it but managedFields,
    and of a Secret, its values' digests (to compare with what we would write, not to read)."""
    kept = without_managed_fields(obj)
    if resource == SECRETS and isinstance(obj.get("data"), dict):
        kept["data"] = {key: _digest(value) for key, value in obj["data"].items()}
    return kept


_STUB_METADATA: Final = ("name", "namespace", "uid", "resourceVersion", "deletionTimestamp")


def _stub(obj: KubeObject) -> KubeObject:
    meta = obj.get("metadata") or {}
    kept = {key: meta[key] for key in _STUB_METADATA if key in meta}
    return {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind"), "metadata": kept}


def owned_ref(resource: Resource, obj: KubeObject, *, intent_annotation: str, max_bytes: int) -> OwnedRef | None:
    """The OwnedRef of `obj`, or None unless it is ours: its controller is an Instance and it carries
    the managed-by and instance labels for that Instance (the informer's selector checked the
    provider label). Only what is indexed is ever pruned or deleted."""
    meta = obj.get("metadata") or {}
    labels = meta.get("labels") or {}
    if labels.get(LABEL_MANAGED_BY) != MANAGED_BY_VALUE:
        return None
    for ref in meta.get("ownerReferences") or []:
        if (
            ref.get("controller")
            and ref.get("kind") == INSTANCE_KIND
            and str(ref.get("apiVersion", "")).partition("/")[0] == INSTANCE_GROUP
            and labels.get(LABEL_INSTANCE) == ref.get("name")
        ):
            return OwnedRef(
                resource=resource,
                namespace=str(meta.get("namespace", "")),
                name=str(meta["name"]),
                kind=str(obj.get("kind") or resource.kind),
                resource_version=str(meta.get("resourceVersion", "")),
                owner_uid=str(ref.get("uid", "")),
                owner_name=str(ref.get("name", "")),
                deleting=bool(meta.get("deletionTimestamp")),
                packed=_packed(resource, obj, max_bytes),
                uid=str(meta.get("uid", "")),
                intent=str((meta.get("annotations") or {}).get(intent_annotation, "")) if intent_annotation else "",
            )
    return None


class OwnedIndex:
    def __init__(self) -> None:
        self._by_owner: dict[str, dict[tuple[Resource, str], OwnedRef]] = defaultdict(dict)

    def update(self, old: OwnedRef | None, new: OwnedRef | None) -> None:
        if old is not None:
            bucket = self._by_owner.get(old.owner_key)
            if bucket is not None:
                bucket.pop((old.resource, old.name), None)
                if not bucket:
                    del self._by_owner[old.owner_key]
        if new is not None:
            self._by_owner[new.owner_key][(new.resource, new.name)] = new

    def owned_by(self, owner_key: str, owner_uid: str) -> list[OwnedRef]:
        """Objects whose controller is exactly this Instance (same uid: not a namesake)."""
        bucket = self._by_owner.get(owner_key) or {}
        return [ref for ref in bucket.values() if ref.owner_uid == owner_uid]

    def get(self, owner_key: str, resource: Resource, name: str) -> OwnedRef | None:
        bucket = self._by_owner.get(owner_key) or {}
        return bucket.get((resource, name))

    def __len__(self) -> int:
        return sum(len(b) for b in self._by_owner.values())
