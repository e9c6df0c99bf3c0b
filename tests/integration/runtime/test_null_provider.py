"""The actor runtime against the real kube-apiserver and etcd, driven by a provider with no KServe logic."""

from __future__ import annotations

import base64
import time
from collections import Counter
from typing import Any

import anyio
import pytest

from actors.cache.informer import Informer
from actors.client import KubeClient
from actors.client.known_resources import EVENTS, INSTANCES, SECRETS
from actors.contract import FINALIZER
from actors.interface import KubeObject
from actors.manager.options import ManagerOptions
from provider.model.names import FORCE_OWNERSHIP_ANNOTATION
from tests.support.instances import null_instance
from tests.support.null_provider import CONFIGMAPS, NullProvider
from tests.support.runtime import count_reconciles, running_manager, wait_quiet
from tests.support.waiting import NotYet, wait_for

pytestmark = pytest.mark.integration

WRITE_VERBS = {"create", "update", "patch", "dryrun", "delete"}


async def test_finalizer_lifecycle_create_ready_delete(controlplane: Any, kube: KubeClient, namespace: str) -> None:
    provider = NullProvider()
    async with running_manager(controlplane, provider, namespace):
        created = await kube.create(INSTANCES, null_instance("life", namespace, size=3))

        async def ready() -> KubeObject | None:
            obj = await kube.get(INSTANCES, namespace, "life")
            return obj if obj and (obj.get("status") or {}).get("phase") == "Ready" else None

        obj = await wait_for(ready)
        assert FINALIZER in obj["metadata"]["finalizers"]
        assert obj["metadata"]["labels"]["core.openeverest.io/provider"] == "provider-kserve"
        cm = await kube.get(CONFIGMAPS, namespace, "life-cm")
        assert cm is not None and cm["data"] == {"size": "3"}
        ref = cm["metadata"]["ownerReferences"][0]
        assert (ref["kind"], ref["uid"], ref["controller"]) == ("Instance", created["metadata"]["uid"], True)
        assert cm["metadata"]["labels"] == {
            "app.kubernetes.io/managed-by": "everest",
            "app.kubernetes.io/instance": "life",
            "core.openeverest.io/provider": "provider-kserve",
        }
        secret = await kube.get(SECRETS, namespace, "life-conn")
        assert secret is not None
        assert base64.b64decode(secret["data"]["host"]).decode() == f"life.{namespace}.svc.cluster.local"
        assert obj["status"]["connectionSecretRef"] == {"name": "life-conn"}
        conditions = {c["type"]: c for c in obj["status"]["conditions"]}
        assert conditions["ConnectionDetailsReady"]["status"] == "True"
        assert conditions["Valid"]["status"] == "True"

        await kube.delete(INSTANCES, namespace, "life")

        async def gone() -> bool:
            return await kube.get(INSTANCES, namespace, "life") is None

        await wait_for(gone)
        assert provider.cleanups and set(provider.cleanups) == {"life"}  # idempotent, may run per pass
        assert await kube.get(CONFIGMAPS, namespace, "life-cm") is None
        assert await kube.get(SECRETS, namespace, "life-conn") is None


async def test_bad_input_is_failed_with_message_and_not_retried_hot(
    controlplane: Any, kube: KubeClient, namespace: str
) -> None:
    async with running_manager(controlplane, NullProvider(), namespace) as (manager, _):
        await kube.create(INSTANCES, null_instance("bad", namespace, size="big"))

        async def failed() -> KubeObject | None:
            obj = await kube.get(INSTANCES, namespace, "bad")
            return obj if obj and (obj.get("status") or {}).get("phase") == "Failed" else None

        obj = await wait_for(failed)
        assert obj["status"]["message"] == "topology.parameters.size: Input should be a valid integer"
        valid = next(c for c in obj["status"]["conditions"] if c["type"] == "Valid")
        assert (valid["status"], valid["reason"]) == ("False", "ValidationFailed")
        # No retry storm: the manager settles (the pass that wrote Failed, and its echoes, are over;
        # a storm would fail this wait), and then this Instance does not run again by itself.
        await wait_quiet(manager)
        assert manager.actors.next_run(f"{namespace}/bad") is None, "a run is scheduled without an event"
        # Fixing the input recovers.
        await kube.patch(INSTANCES, namespace, "bad", {"spec": {"topology": {"parameters": {"size": 2}}}})

        async def ready() -> bool:
            obj = await kube.get(INSTANCES, namespace, "bad")
            return bool(obj and obj["status"].get("phase") == "Ready")

        await wait_for(ready)


async def test_no_longer_desired_objects_are_pruned(controlplane: Any, kube: KubeClient, namespace: str) -> None:
    async with running_manager(controlplane, NullProvider(), namespace):
        await kube.create(INSTANCES, null_instance("prune", namespace, extra=True))

        async def extra(present: bool) -> bool:
            return (await kube.get(CONFIGMAPS, namespace, "prune-extra") is not None) == present

        await wait_for(lambda: extra(True))
        # A ConfigMap of ours for no Instance, and one without our labels, are both left alone.
        await kube.create(CONFIGMAPS, {"metadata": {"name": "foreign", "namespace": namespace}, "data": {}})
        await kube.patch(INSTANCES, namespace, "prune", {"spec": {"topology": {"parameters": {"extra": False}}}})
        await wait_for(lambda: extra(False))
        assert await kube.get(CONFIGMAPS, namespace, "prune-cm") is not None
        assert await kube.get(CONFIGMAPS, namespace, "foreign") is not None


async def test_a_first_pass_reads_its_objects_at_once_and_still_refuses_a_namesake(
    controlplane: Any, kube: KubeClient, namespace: str
) -> None:
    """The name-clash reads before a first apply do not depend on each other: they overlap in time,
    and what each found still decides its own apply."""
    client = await KubeClient.connect(str(controlplane.kubeconfig))
    reads: list[tuple[float, float]] = []  # (start, end) of each ConfigMap GET

    def record(verb: str, resource: str, code: int, seconds: float) -> None:
        if verb == "get" and resource.startswith("configmaps"):
            end = time.perf_counter()
            reads.append((end - seconds, end))

    client.observe(record)
    await kube.create(CONFIGMAPS, {"metadata": {"name": "both-extra", "namespace": namespace}, "data": {}})
    async with running_manager(controlplane, NullProvider(), namespace, client=client):
        await kube.create(INSTANCES, null_instance("both", namespace, extra=True))

        async def synced() -> dict[str, Any] | None:
            obj = await kube.get(INSTANCES, namespace, "both") or {}
            conditions = {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}
            return conditions.get("Synced")

        clash = await wait_for(synced)
        assert (clash["status"], clash["reason"]) == ("False", "NameClash"), clash
        assert clash["message"].startswith(f"ConfigMap {namespace}/both-extra already exists"), clash["message"]
    assert await kube.get(CONFIGMAPS, namespace, "both-cm") is not None  # applied before the clash
    foreign = await kube.get(CONFIGMAPS, namespace, "both-extra")
    assert foreign is not None and "ownerReferences" not in foreign["metadata"]
    (first_start, first_end), (second_start, second_end) = reads[:2]
    assert second_start < first_end and first_start < second_end, reads  # in flight together


async def test_noop_resync_of_100_converged_instances_writes_nothing(
    controlplane: Any, kube: KubeClient, namespace: str
) -> None:
    async with running_manager(controlplane, NullProvider(), namespace, max_concurrent=16) as (manager, requests):
        for i in range(100):
            await kube.create(INSTANCES, null_instance(f"r{i:03d}", namespace))

        async def converged() -> bool:
            items, _ = await kube.list_all(INSTANCES, namespace)
            return len(items) == 100 and all((o.get("status") or {}).get("phase") == "Ready" for o in items)

        await wait_for(converged, timeout=120)
        # Ready can be read before the last passes of converging are over (a status write's echo,
        # a Secret's event): baselines are taken once nothing has run for a while.
        await wait_quiet(manager)
        reconciles = count_reconciles(manager)
        before = Counter(requests)
        manager.resync()
        keys = [f"{namespace}/r{i:03d}" for i in range(100)]

        async def resynced() -> bool | NotYet:
            ran = sum(1 for key in keys if reconciles[key])
            return ran == len(keys) or NotYet(f"{ran} of {len(keys)} resynced")

        await wait_for(resynced, timeout=60)
        await wait_quiet(manager)
        delta = Counter(requests)
        delta.subtract(before)
        writes = {verb: n for verb, n in delta.items() if verb in WRITE_VERBS and n}
        assert writes == {}
        # One run each; a few to spare, as in test_our_own_applies_coming_back_do_not_reconcile_again:
        # an event the applier cannot attribute is treated as news (safe, and it writes nothing).
        assert len(keys) <= sum(reconciles.values()) <= len(keys) + 5, dict(reconciles)


async def test_a_restarted_provider_over_converged_instances_writes_nothing(
    controlplane: Any, kube: KubeClient, namespace: str
) -> None:
    """A new process (a restart, or a new leader) knows nothing of the previous one's writes: it
    tells from the applied-intent annotation and the watched objects that nothing changed. An
    object edited by hand while no provider ran is still restored."""
    names = [f"s{i:02d}" for i in range(20)]
    async with running_manager(controlplane, NullProvider(), namespace) as (manager, _):
        for name in names:
            await kube.create(INSTANCES, null_instance(name, namespace, size=1))

        async def converged() -> bool:
            items, _ = await kube.list_all(INSTANCES, namespace)
            return len(items) == len(names) and all((o.get("status") or {}).get("phase") == "Ready" for o in items)

        await wait_for(converged, timeout=120)
        await wait_quiet(manager)
    # While no provider runs, someone edits one of our values by hand (`kubectl edit`).
    await kube.patch(CONFIGMAPS, namespace, "s00-cm", {"data": {"size": "7"}}, field_manager="kubectl-edit")

    async with running_manager(controlplane, NullProvider(), namespace) as (manager, requests):

        async def restored() -> bool:
            cm = await kube.get(CONFIGMAPS, namespace, "s00-cm")
            return cm is not None and cm["data"]["size"] == "1"

        await wait_for(restored)
        # Every Instance's first pass is over, and the restoring pass with it: its Event is created
        # after the apply that restored the ConfigMap.
        await wait_quiet(manager)
        assert manager.actors.stats.runs >= len(names)
        writes = {verb: n for verb, n in requests.items() if verb in WRITE_VERBS and n}
        events = await kube.list(EVENTS, namespace)
    # The hand-edited ConfigMap only: an apply refused by the conflict with the hand edit, the
    # apply that takes the field back, and the Event that says so on its Instance.
    assert writes == {"patch": 2, "create": 1}
    taken_back = [e["regarding"]["name"] for e in events["items"] if e["reason"] == "FieldTakenBack"]
    assert taken_back == ["s00"]


async def test_our_own_applies_coming_back_do_not_reconcile_again(
    controlplane: Any, kube: KubeClient, namespace: str
) -> None:
    """The watch event of an object we just applied shows what that reconcile already observed, even
    when it overtakes the apply's response. Without that check every apply costs its Instance one
    more reconcile: 60 to converge 20 Instances instead of 40, 40 for one spec change each instead
    of 20. A few runs to spare: an event the applier cannot attribute is treated as news (safe)."""
    n = 20
    async with running_manager(controlplane, NullProvider(), namespace) as (manager, _):
        for i in range(n):
            await kube.create(INSTANCES, null_instance(f"e{i:02d}", namespace, size=1))

        async def converged() -> bool:
            items, _ = await kube.list_all(INSTANCES, namespace)
            return len(items) == n and all((o.get("status") or {}).get("phase") == "Ready" for o in items)

        await wait_for(converged, timeout=120)
        # Counted once nothing has run for a while: Ready can be read before a last run is over.
        await wait_quiet(manager)
        # One run adds the finalizer, the next applies and writes status; the echoes wake nobody.
        converge_runs = manager.actors.stats.runs
        assert converge_runs <= 2 * n + 5

        for i in range(n):
            await kube.patch(INSTANCES, namespace, f"e{i:02d}", {"spec": {"topology": {"parameters": {"size": 2}}}})

        async def applied() -> bool:
            items, _ = await kube.list_all(CONFIGMAPS, namespace)
            return len([o for o in items if o["data"] == {"size": "2"}]) == n

        await wait_for(applied)
        await wait_quiet(manager)
        change_runs = manager.actors.stats.runs - converge_runs
        print(f"reconciles for {n} Instances: {converge_runs} to converge, {change_runs} for one spec change each")
        assert change_runs <= n + 5

        # Someone else's change to a derived object is news: its owner is reconciled (that one, not
        # whichever run came next).
        reconciles = count_reconciles(manager)
        await kube.patch(CONFIGMAPS, namespace, "e00-cm", {"metadata": {"annotations": {"edited": "yes"}}})

        async def owner_ran() -> bool | NotYet:
            return reconciles[f"{namespace}/e00"] >= 1 or NotYet(dict(reconciles))

        await wait_for(owner_ran, what="e00 reconciled", interval=0.01)


async def test_forced_410_relists_and_loses_no_update(controlplane: Any, kube: KubeClient, namespace: str) -> None:
    seen: dict[str, str] = {}
    deleted: list[str] = []

    def on_change(key: str, old: KubeObject | None, new: KubeObject | None) -> None:
        if new is None:
            deleted.append(key)
            seen.pop(key, None)
        else:
            seen[key] = new["data"]["v"]

    for name in ("a", "b", "c"):
        await kube.create(CONFIGMAPS, {"metadata": {"name": name, "namespace": namespace}, "data": {"v": "1"}})
    informer: Informer[KubeObject] = Informer(
        kube,
        CONFIGMAPS,
        namespace=namespace,
        transform=lambda o: o,
        on_change=on_change,
        settings=ManagerOptions().watch_settings(),
    )
    _, stale_rv = await kube.list_all(CONFIGMAPS, namespace)
    # Changes made after the resourceVersion we will watch from, then compacted away.
    await kube.patch(CONFIGMAPS, namespace, "a", {"data": {"v": "2"}})
    await kube.delete(CONFIGMAPS, namespace, "b")
    await kube.create(CONFIGMAPS, {"metadata": {"name": "d", "namespace": namespace}, "data": {"v": "1"}})
    controlplane.compact()
    informer.store = {f"{namespace}/{n}": {"data": {"v": "1"}} for n in ("a", "b", "c")}
    informer._rv = stale_rv
    async with anyio.create_task_group() as tg:
        tg.start_soon(informer.run)

        async def relisted() -> bool:
            return informer.relists >= 1

        await wait_for(relisted, interval=0.05)
        tg.cancel_scope.cancel()
    assert informer.relists == 1
    assert seen == {f"{namespace}/a": "2", f"{namespace}/c": "1", f"{namespace}/d": "1"}
    assert deleted == [f"{namespace}/b"]


async def test_foreign_field_manager_conflict_is_named_not_fought(
    controlplane: Any, kube: KubeClient, namespace: str
) -> None:
    async with running_manager(controlplane, NullProvider(), namespace) as (manager, _):
        await kube.create(INSTANCES, null_instance("fight", namespace, size=1))

        async def cm() -> KubeObject | None:
            return await kube.get(CONFIGMAPS, namespace, "fight-cm")

        await wait_for(cm)
        # Another manager takes our field by force, then the spec asks us to change it.
        await kube.apply(
            CONFIGMAPS,
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": "fight-cm", "namespace": namespace},
                "data": {"size": "99"},
            },
            field_manager="someone-else",
            force=True,
        )
        await kube.patch(INSTANCES, namespace, "fight", {"spec": {"topology": {"parameters": {"size": 2}}}})

        async def conflict() -> dict[str, Any] | None:
            obj = await kube.get(INSTANCES, namespace, "fight")
            conds = {c["type"]: c for c in (obj or {}).get("status", {}).get("conditions", [])}
            synced = conds.get("Synced")
            return synced if synced and synced["reason"] == "ApplyConflict" else None

        synced = await wait_for(conflict)
        assert synced["status"] == "False"
        assert ".data.size" in synced["message"] and "someone-else" in synced["message"]
        # No fight: once the manager has nothing queued, running or due, nothing will write again.
        await wait_quiet(manager)
        live = await cm()
        assert live is not None and live["data"]["size"] == "99"
        # The documented opt-in takes ownership.
        await kube.patch(
            INSTANCES, namespace, "fight", {"metadata": {"annotations": {FORCE_OWNERSHIP_ANNOTATION: "true"}}}
        )

        async def taken() -> bool:
            live = await cm()
            return bool(live and live["data"]["size"] == "2")

        await wait_for(taken)
