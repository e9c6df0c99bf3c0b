"""Which Instance events need a reconcile: the store says what changed, the write ledger what was ours."""

from __future__ import annotations

from typing import Any

from actors.apply.write_ledger import WriteLedger
from actors.cache.instance_store import InstanceStore, StoredInstance
from actors.cache.limits import InstanceLimits
from actors.cache.owned_index import OwnedIndex
from actors.client.known_resources import INSTANCES
from actors.contract import FINALIZER
from actors.manager.manager import instance_needs_reconcile
from tests.support.instances import bare_instance

KEY = "ns/a"
INSTANCE = (INSTANCES, "ns", "a")


class Events:
    """The store and the ledger as an Instance informer and the manager drive them on each event."""

    def __init__(self) -> None:
        self.store = InstanceStore("p", InstanceLimits(), OwnedIndex())
        self.informer_store = self.store.scope_store()
        self.writes = WriteLedger()

    def update(self, old: StoredInstance | None, new: StoredInstance | None) -> bool:
        self.informer_store[KEY] = new
        return instance_needs_reconcile(self.writes, KEY, self.store.changed(old, new), new)


def instance(version: str, *, finalizer: bool = False, generation: int = 1, phase: str = "") -> dict[str, Any]:
    """Instance `a` as a watch event carries it, at resourceVersion `version`."""
    obj = bare_instance("a", "ns", provider="p", uid="u")
    obj["metadata"].update(resourceVersion=version, generation=generation, finalizers=[FINALIZER] if finalizer else [])
    obj["status"] = {"phase": phase} if phase else {}
    return obj


def stored(store: InstanceStore, obj: dict[str, Any]) -> StoredInstance:
    value = store.transform(obj)
    assert value is not None
    return value


def test_our_own_finalizer_write_comes_back_without_a_reconcile_and_a_user_edit_does_not() -> None:
    events = Events()
    store = events.store
    created = stored(store, instance("1"))
    assert events.update(None, created)  # a new Instance: reconcile
    events.writes.begin(INSTANCE)  # the reconcile adds the finalizer (resourceVersion 2) and goes on
    assert not events.writes.finish(INSTANCE, "2")
    ours = stored(store, instance("2", finalizer=True))
    assert not events.update(created, ours)
    assert store.objects[KEY]["metadata"]["resourceVersion"] == "2"  # stored all the same
    status = stored(store, instance("3", finalizer=True, phase="Ready"))
    assert not events.update(ours, status)  # a status write changes no metadata
    edited = stored(store, instance("4", finalizer=True, generation=2, phase="Ready"))
    assert events.update(status, edited)  # a spec change


def test_an_expectation_is_settled_by_whichever_event_comes_next() -> None:
    events = Events()
    store = events.store
    created = stored(store, instance("1"))
    events.update(None, created)
    events.writes.begin(INSTANCE)
    assert not events.writes.finish(INSTANCE, "2")
    # Someone else's write came first: it is judged on its own, and a later event is not
    # mistaken for ours.
    edited = stored(store, instance("3", generation=2))
    assert events.update(created, edited)
    again = stored(store, instance("2", finalizer=True))
    assert events.update(edited, again)


def test_events_during_our_write_are_held_back_and_another_writers_asks_for_a_look() -> None:
    events = Events()
    store = events.store
    created = stored(store, instance("1"))
    events.update(None, created)
    events.writes.begin(INSTANCE)
    ours = stored(store, instance("2", finalizer=True))
    assert not events.update(created, ours)  # our write's event before its answer
    assert not events.writes.finish(INSTANCE, "2")  # it was ours: nothing to look at again
    events.writes.begin(INSTANCE)
    edited = stored(store, instance("5", finalizer=True, generation=2))
    assert not events.update(ours, edited)  # held back while our write is in flight
    assert events.writes.finish(INSTANCE, "4")  # another writer's change came in: the pass looks again


def test_the_informers_stores_are_the_store_read_through_two_scopes() -> None:
    """Two namespaces watched: each informer writes its own store, the reconcilers read both, and
    another provider's Instance (stored as None) is no Instance of ours."""
    store = InstanceStore("p", InstanceLimits(max_spec_bytes=2000), OwnedIndex())
    first, second = store.scope_store(), store.scope_store()
    first["ns/a"] = stored(store, instance("1"))
    big = bare_instance("b", "other", provider="p", uid="v")
    big["spec"]["blob"] = "x" * 4000
    second["other/b"] = stored(store, big)
    second["other/theirs"] = store.transform(bare_instance("theirs", "other", provider="q", uid="w"))
    assert second["other/theirs"] is None
    assert sorted(store.objects) == ["ns/a", "other/b"] and len(store.objects) == 2
    assert "other/theirs" not in store.objects and "ns/zz" not in store.objects
    assert store.objects["ns/a"]["metadata"]["resourceVersion"] == "1"
    store.objects["ns/a"]["metadata"]["name"] = "changed"  # a fresh copy per read
    assert store.objects["ns/a"]["metadata"]["name"] == "a"
    assert list(store.rejected) == ["other/b"] and "over this provider's limit" in store.rejected["other/b"]
    assert store.rejected.get("ns/a") is None
    del first["ns/a"]
    assert list(store.objects) == ["other/b"]
