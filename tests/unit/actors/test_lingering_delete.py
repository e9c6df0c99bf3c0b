"""A derived object that lingers after its DELETE (a foreign finalizer holds it) is deleted once.

The DELETE's answer already carries the object's deletionTimestamp, so the applier marks its owned
index entry as going at once, as the watch event will later. The cleanup pass that found it still
there fails and is retried with backoff from 5 ms; before, a retry that came before the watch event
saw the entry not yet going and sent the DELETE again. Here no watch event is fed at all, so every
retry is such a retry (in-process: tests.support.fake_kube).
"""

from __future__ import annotations

from typing import cast

from actors.apply.applier import Applier
from actors.apply.write_ledger import WriteLedger
from actors.cache.owned_index import OwnedIndex, OwnedRef, owned_ref
from actors.client import KubeClient
from actors.client.known_resources import INSTANCES, SECRETS
from actors.contract import FINALIZER, LABEL_PROVIDER, stamp
from actors.interface import KubeObject
from actors.observe.metrics import RuntimeMetrics
from actors.queue.actor_system import Action
from actors.reconcile.reconciler import InstanceReconciler, RuntimeConfig
from actors.status.writer import StatusWriter
from tests.support.fake_kube import FakeKube
from tests.support.instances import null_instance
from tests.support.null_provider import CONFIGMAPS, NullProvider

NAMESPACE = "ns"
KEY = f"{NAMESPACE}/a"
HOLD = "example.com/hold"
PROVIDER = NullProvider()
INTENT = f"{PROVIDER.annotation_domain}/applied-intent"


def watched(obj: KubeObject) -> OwnedRef:
    """The index entry the owned informer's watch event of `obj` makes."""
    ref = owned_ref(CONFIGMAPS, obj, intent_annotation=INTENT, max_bytes=1 << 20)
    assert ref is not None
    return ref


def applier_over(kube: FakeKube, index: OwnedIndex) -> Applier:
    return Applier(
        cast(KubeClient, kube),
        index,
        WriteLedger(),
        field_manager=PROVIDER.name,
        provider_name=PROVIDER.name,
        intent_annotation=INTENT,
        resources=[CONFIGMAPS, SECRETS],
        unpruned=frozenset({SECRETS}),
    )


def held_config_map(kube: FakeKube, instance: KubeObject) -> KubeObject:
    """Instance a's ConfigMap, ours, held by someone else's finalizer."""
    body = stamp({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a-cm"}}, instance, PROVIDER.name)
    body["metadata"]["finalizers"] = [HOLD]
    return kube.put(CONFIGMAPS, body)


async def test_a_lingering_delete_shows_the_object_going_in_the_index_at_once() -> None:
    kube, index = FakeKube(), OwnedIndex()
    instance = kube.put(INSTANCES, null_instance("a", NAMESPACE))
    before = watched(held_config_map(kube, instance))
    index.update(None, before)

    assert await applier_over(kube, index).delete(before) is False  # it lingers
    going = index.get(KEY, CONFIGMAPS, "a-cm")
    assert going is not None and going.deleting
    assert going.uid == before.uid and going.owner_uid == before.owner_uid

    # The watch event that says the same comes later, replacing the informer's copy from before
    # the delete: one entry, going; then the DELETED event once the finalizer is off.
    stored = kube.stored(CONFIGMAPS, NAMESPACE, "a-cm")
    assert stored is not None and stored["metadata"].get("deletionTimestamp")
    event = watched(stored)
    index.update(before, event)
    assert index.owned_by(KEY, before.owner_uid) == [event]
    index.update(event, None)
    assert index.owned_by(KEY, before.owner_uid) == []


async def test_a_delete_answered_at_once_leaves_the_entry_for_its_deleted_event() -> None:
    kube, index = FakeKube(), OwnedIndex()
    instance = kube.put(INSTANCES, null_instance("a", NAMESPACE))
    body = stamp({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a-cm"}}, instance, PROVIDER.name)
    ref = watched(kube.put(CONFIGMAPS, body))
    index.update(None, ref)
    assert await applier_over(kube, index).delete(ref) is True
    assert index.get(KEY, CONFIGMAPS, "a-cm") == ref  # unchanged: gone, not going


async def test_the_cleanup_retried_before_the_watch_event_does_not_delete_again() -> None:
    kube, index = FakeKube(), OwnedIndex()
    provider = NullProvider()
    instance = null_instance("a", NAMESPACE)
    instance["metadata"].update({"finalizers": [FINALIZER], "labels": {LABEL_PROVIDER: PROVIDER.name}})
    instance = kube.put(INSTANCES, instance)
    index.update(None, watched(held_config_map(kube, instance)))
    client = cast(KubeClient, kube)
    reconciler = InstanceReconciler(
        client=client,
        provider=provider,
        config=RuntimeConfig(
            provider_name=PROVIDER.name,
            field_manager=PROVIDER.name,
            force_annotation=f"{PROVIDER.annotation_domain}/force-ownership",
        ),
        instances=kube.view(INSTANCES),
        providers={},
        index=index,
        applier=applier_over(kube, index),
        status=StatusWriter(client, field_manager=PROVIDER.name),
        available=lambda: frozenset({CONFIGMAPS, SECRETS}),
        metrics=RuntimeMetrics(),
    )
    await kube.delete(INSTANCES, NAMESPACE, "a")  # our finalizer holds it: deletionTimestamp set

    for _ in range(3):  # the first pass, and retries that come before any watch event
        assert await reconciler(KEY) == Action(failed=True)  # held: our finalizer stays
    assert len(kube.writes("delete", CONFIGMAPS)) == 1
    stored = kube.stored(INSTANCES, NAMESPACE, "a")
    assert stored is not None and FINALIZER in stored["metadata"]["finalizers"]
    assert stored["status"]["phase"] == "Terminating"
