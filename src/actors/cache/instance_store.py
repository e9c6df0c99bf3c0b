"""The store of the Instances this provider reconciles, as its informers deliver them.

Only our Instances are kept (or another provider's that still hold our finalizer or objects: those
we release rather than forget), packed (a fifth of their size as dicts; every read is a fresh copy),
in the Instance informers' own stores. An Instance over the per-Instance bounds is kept only as a
stub, with why (`rejected`). An event needs a reconcile only when the Instance's metadata (but
resourceVersion and managedFields) changed: a spec change bumps metadata.generation, and our own
status writes change neither. (That the event of our own finalizer write needs none either is the
write ledger's to say: actors.apply.write_ledger.)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass

from actors.cache.limits import InstanceLimits, stub
from actors.cache.owned_index import OwnedIndex
from actors.cache.packed import compress, unpack, without_managed_fields
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
    """The Instances as the Instance informers store them, one store per watched namespace (or one
    for all): the informers write, the reconcilers read unpacked copies (`objects`) and the bounds
    each broke (`rejected`). Nothing is copied into a second store."""

    def __init__(self, provider: str, limits: InstanceLimits, index: OwnedIndex) -> None:
        self.provider = provider
        self.limits = limits
        self.index = index
        self._scopes: list[dict[str, StoredInstance | None]] = []
        self.objects: Mapping[str, KubeObject] = _Unpacked(self)
        # Instances kept as a stub because they broke a bound (key -> why).
        self.rejected: Mapping[str, str] = _Rejections(self)

    def scope_store(self) -> dict[str, StoredInstance | None]:
        """A new Instance informer's store (Informer(store=...)), read through this one."""
        store: dict[str, StoredInstance | None] = {}
        self._scopes.append(store)
        return store

    def stored(self, key: str) -> StoredInstance | None:
        for store in self._scopes:
            if (found := store.get(key)) is not None:
                return found
        return None

    def stored_items(self) -> Iterator[tuple[str, StoredInstance]]:
        for store in self._scopes:
            yield from ((key, value) for key, value in store.items() if value is not None)

    def transform(self, obj: KubeObject) -> StoredInstance | None:
        """What the informer stores of `obj`: nothing of another provider's Instance, a stub of one
        over a bound (the one place the bounds are checked), else the packed Instance."""
        if not self._ours_or_held(obj):
            return None  # another provider's Instance: keep nothing of it
        raw = b""
        try:
            rejected = self.limits.problem(obj)
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

    @staticmethod
    def changed(old: StoredInstance | None, new: StoredInstance | None) -> bool:
        """Whether what a reconcile reads changed with an informer's event (or the Instance
        appeared or went)."""
        if old is None or new is None:
            return old is not new
        return old.digest != new.digest

    def keys_matching(self, predicate: Callable[[KubeObject], bool]) -> list[str]:
        return [key for key, obj in self.objects.items() if predicate(obj)]


class _Unpacked(Mapping[str, KubeObject]):
    """Our Instances by key; each read unpacks a fresh copy."""

    def __init__(self, store: InstanceStore) -> None:
        self._store = store

    def __getitem__(self, key: str) -> KubeObject:
        if (found := self._store.stored(key)) is None:
            raise KeyError(key)
        return unpack(found.packed)

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and self._store.stored(key) is not None

    def __iter__(self) -> Iterator[str]:
        return (key for key, _ in self._store.stored_items())

    def __len__(self) -> int:
        return sum(1 for _ in self._store.stored_items())


class _Rejections(Mapping[str, str]):
    """Why each Instance kept as a stub was (the bound it broke)."""

    def __init__(self, store: InstanceStore) -> None:
        self._store = store

    def __getitem__(self, key: str) -> str:
        found = self._store.stored(key)
        if found is None or found.rejected is None:
            raise KeyError(key)
        return found.rejected

    def __iter__(self) -> Iterator[str]:
        return (key for key, value in self._store.stored_items() if value.rejected is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)
