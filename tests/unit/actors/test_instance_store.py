"""The Instance store decides which informer events need a reconcile."""

from __future__ import annotations

from typing import Any

from actors.cache.instance_store import InstanceStore, StoredInstance
from actors.cache.limits import InstanceLimits
from actors.cache.owned_index import OwnedIndex
from actors.contract import FINALIZER
from tests.support.instances import bare_instance

KEY = "ns/a"


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
    store = InstanceStore("p", InstanceLimits(), OwnedIndex())
    created = stored(store, instance("1"))
    assert store.update(KEY, None, created)  # a new Instance: reconcile
    store.writes.begin(KEY)  # the reconcile adds the finalizer (resourceVersion 2) and goes on
    assert not store.writes.finish(KEY, "2")
    ours = stored(store, instance("2", finalizer=True))
    assert not store.update(KEY, created, ours)
    assert store.objects[KEY]["metadata"]["resourceVersion"] == "2"  # stored all the same
    status = stored(store, instance("3", finalizer=True, phase="Ready"))
    assert not store.update(KEY, ours, status)  # a status write changes no metadata
    edited = stored(store, instance("4", finalizer=True, generation=2, phase="Ready"))
    assert store.update(KEY, status, edited)  # a spec change


def test_an_expectation_is_settled_by_whichever_event_comes_next() -> None:
    store = InstanceStore("p", InstanceLimits(), OwnedIndex())
    created = stored(store, instance("1"))
    store.update(KEY, None, created)
    store.writes.begin(KEY)
    assert not store.writes.finish(KEY, "2")
    # Someone else's write came first: it is judged on its own, and a later event is not
    # mistaken for ours.
    edited = stored(store, instance("3", generation=2))
    assert store.update(KEY, created, edited)
    again = stored(store, instance("2", finalizer=True))
    assert store.update(KEY, edited, again)


def test_events_during_our_write_are_held_back_and_another_writers_asks_for_a_look() -> None:
    store = InstanceStore("p", InstanceLimits(), OwnedIndex())
    created = stored(store, instance("1"))
    store.update(KEY, None, created)
    store.writes.begin(KEY)
    ours = stored(store, instance("2", finalizer=True))
    assert not store.update(KEY, created, ours)  # our write's event before its answer
    assert not store.writes.finish(KEY, "2")  # it was ours: nothing to look at again
    store.writes.begin(KEY)
    edited = stored(store, instance("5", finalizer=True, generation=2))
    assert not store.update(KEY, ours, edited)  # held back while our write is in flight
    assert store.writes.finish(KEY, "4")  # another writer's change came in: the pass looks again
