"""The store of the Instances this provider reconciles, as its informers deliver them.

Only our Instances are kept (or another provider's that still hold our finalizer or objects: those
we release rather than forget), packed (a fifth of their size as dicts; every read is a fresh copy).
An Instance over the per-Instance bounds is kept only as a stub, with why (`rejected`). An event
needs a reconcile only when the Instance's metadata (but resourceVersion and managedFields) changed:
a spec change bumps metadata.generation, and our own status writes change neither. (That the event
of our own finalizer write needs none either is the write ledger's to say: actors.apply.write_ledger.)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from actors.cache.limits import InstanceLimits, spec_bytes, stub
from actors.cache.owned_index import OwnedIndex
from actors.cache.packed import PackedObjects, compress, without_managed_fields
from actors.client import json_codec
from actors.client.json_codec import content_hash
from actors.client.resource import KubeObject, object_key
from actors.contract import LABEL_PROVIDER, holds_finalizer, provider_name

# Fields whose change alone never needs a reconcile (our own status writes come back as events).
_VOLATILE_METADATA = ("resourceVersion", "managedFields")


@dataclass(frozen=True, slots=True)
class StoredInstance:
    """What the informer keeps per Instance: the digest of what needs a reconcile when it changes
    (an event is judged without unpacking either version), the packed object, and why it was kept
    only as a stub (a bound it broke), if it was."""

    digest: bytes
    packed: bytes
    rejected: str | None = None
    resource_version: str = ""


def reconcile_digest(obj: KubeObject) -> bytes:
    """Digest of the metadata but resourceVersion: a spec change bumps metadata.generation (the
    Instance CRD has a status subresource), so this covers the spec too, and a status write
    (ours, coming back as an event) leaves it unchanged."""
    meta = obj.get("metadata") or {}
    return content_hash({k: v for k, v in meta.items() if k not in _VOLATILE_METADATA})


class InstanceStore:
    def __init__(self, provider: str, limits: InstanceLimits, index: OwnedIndex) -> None:
        self.provider = provider
        self.limits = limits
        self.index = index
        self.objects = PackedObjects()
        # Instances kept as a stub because they broke a bound (key → why).
        self.rejected: dict[str, str] = {}

    def transform(self, obj: KubeObject) -> StoredInstance | None:
        if not self._ours_or_held(obj):
            return None  # another provider's Instance: keep nothing of it
        raw = b""
        try:
            rejected = self.limits.size_problem(spec_bytes(obj))
            if rejected is None:
                raw = json_codec.dumps(without_managed_fields(obj))
                rejected = self.limits.object_size_problem(len(raw))
        except RecursionError:
            rejected = "spec nests too deep to read"
        if rejected:
            kept = stub(obj)
            raw = json_codec.dumps(kept)
        else:
            kept = obj
        version = str((obj.get("metadata") or {}).get("resourceVersion", ""))
        return StoredInstance(reconcile_digest(kept), compress(raw), rejected, version)

    def _ours_or_held(self, obj: KubeObject) -> bool:
        """Ours, or another provider's now but still holding our finalizer or objects."""
        if provider_name(obj) == self.provider:
            return True
        meta = obj.get("metadata") or {}
        if (meta.get("labels") or {}).get(LABEL_PROVIDER) == self.provider and holds_finalizer(obj):
            return True
        return bool(self.index.owned_by(object_key(obj), str(meta.get("uid", ""))))

    def update(self, key: str, old: StoredInstance | None, new: StoredInstance | None) -> bool:
        """Store the informer's change; True when what a reconcile reads changed (or the Instance
        appeared or went)."""
        if new is None:
            self.objects.discard(key)
            self.rejected.pop(key, None)
            return old is not None
        self.objects.put(key, new.packed)
        if new.rejected:
            self.rejected[key] = new.rejected
        else:
            self.rejected.pop(key, None)
        return old is None or old.digest != new.digest

    def keys_matching(self, predicate: Callable[[KubeObject], bool]) -> list[str]:
        return [key for key, obj in self.objects.items() if predicate(obj)]
