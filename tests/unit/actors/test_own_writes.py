"""The write ledger: which watch events are the echo of our own writes and deletes."""

from __future__ import annotations

from actors.apply.write_ledger import WriteLedger
from actors.interface import Resource

CM = Resource("", "v1", "configmaps", "ConfigMap")
OBJ = (CM, "ns", "a-cm")


def test_the_echo_of_our_apply_is_ours_and_a_later_change_is_not() -> None:
    writes = WriteLedger()
    writes.begin(OBJ)
    assert not writes.finish(OBJ, "2")
    assert writes.on_event(OBJ, "2")
    assert not writes.on_event(OBJ, "3")


def test_the_deleted_event_of_our_delete_is_ours_once_and_a_recreation_clears_it() -> None:
    writes = WriteLedger()
    writes.deleted(OBJ)
    assert writes.on_deleted(OBJ)
    assert not writes.on_deleted(OBJ)  # only once
    writes.deleted(OBJ)
    assert not writes.on_event(OBJ, "5")  # created again by someone: its next deletion is not ours
    assert not writes.on_deleted(OBJ)
