"""Which watch events of derived objects are the echo of our own writes and deletes."""

from __future__ import annotations

from actors.apply.write_ledger import OwnWrites
from actors.cache.owned_index import OwnedRef
from actors.interface import Resource

CM = Resource("", "v1", "configmaps", "ConfigMap")
OBJ = (CM, "ns", "a-cm")


def ref(version: str, *, deleting: bool = False) -> OwnedRef:
    return OwnedRef(CM, "ns", "a-cm", "ConfigMap", version, "u", "a", deleting)


def test_the_echo_of_our_apply_is_ours_and_a_later_change_is_not() -> None:
    writes = OwnWrites()
    writes.begin(OBJ)
    assert not writes.finish(OBJ, "2")
    assert writes.on_event(ref("2"))
    assert not writes.on_event(ref("3"))


def test_the_deleted_event_of_our_delete_is_ours_once_and_a_recreation_clears_it() -> None:
    writes = OwnWrites()
    writes.deleted(OBJ)
    assert writes.on_deleted(ref("2"))
    assert not writes.on_deleted(ref("2"))  # only once
    writes.deleted(OBJ)
    assert not writes.on_event(ref("5"))  # created again by someone: its next deletion is not ours
    assert not writes.on_deleted(ref("5"))
