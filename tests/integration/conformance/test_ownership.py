"""Conformance 4, 5 and 6: who owns what, on the real LLMInferenceService.

4. Another field manager takes a field we set (server-side apply, forced): the Instance shows
   `Synced=False ApplyConflict` naming the field and the manager, the provider retries with backoff
   using dry runs only (no write to the object, no change of the condition), `inspect` shows the
   other manager holding the field, and the documented annotation takes the field back.
5. Drift by hand: a derived object deleted is recreated; a field we own edited with `kubectl edit`
   (a plain update) is restored; a field we own removed by hand is restored; a field we do not
   set, edited by hand, is left alone.
6. The Instance is deleted while its LLMInferenceService is held by a foreign finalizer: cleanup
   deletes everything else, keeps retrying with backoff without re-deleting, keeps the Instance's
   finalizer until the held object is gone, and then lets the Instance go with nothing left.
"""

from __future__ import annotations

import asyncio
import math
import time
from typing import Any

import pytest
import yaml

from actors.client import MERGE_PATCH, KubeClient
from actors.client.known_resources import INSTANCES, SECRETS
from actors.contract import FINALIZER, LABEL_PROVIDER
from actors.interface import KubeObject
from provider.inspect.inventory import gather, owners_of
from provider.model.catalog import Catalogs
from provider.model.kinds import LLM_INFERENCE_SERVICE, POD_MONITOR
from provider.model.names import FORCE_OWNERSHIP_ANNOTATION, PROVIDER_NAME
from tests.support.convergence import condition, inventory, kinds_of, kserve_provider, wait_converged
from tests.support.instances import llm_instance
from tests.support.provider_process import PROVIDER_BIN
from tests.support.runtime import record_requests, running_manager
from tests.support.waiting import wait_for

pytestmark = pytest.mark.integration

LLM = LLM_INFERENCE_SERVICE
LLM_RESOURCE = str(LLM)


async def hand_edit(kube: KubeClient, namespace: str, name: str, patch: dict[str, Any]) -> KubeObject:
    """What `kubectl edit` sends: a plain update (not an apply) under the field manager kubectl-edit."""
    result: KubeObject = await kube.request(
        "PATCH",
        LLM.path(namespace, name),
        query={"fieldManager": "kubectl-edit"},
        body=patch,
        content_type=MERGE_PATCH,
        resource=LLM_RESOURCE,
        name=name,
    )
    return result


def verbs(requests: list[tuple[str, str, int]], resource: str) -> list[str]:
    return [verb for verb, res, _ in requests if res == resource]


async def inspect_cli(controlplane: Any, *args: str) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        str(PROVIDER_BIN),
        "inspect",
        "--kubeconfig",
        str(controlplane.kubeconfig),
        *args,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, _ = await process.communicate()
    return process.returncode or 0, out.decode()


def owned_fields(obj: KubeObject, manager: str) -> set[str]:
    return {f for owner in owners_of(obj) if owner.manager == manager for f in owner.fields}


async def synced_reason(kube: KubeClient, namespace: str, name: str, reason: str) -> dict[str, Any] | None:
    cond = condition(await kube.get(INSTANCES, namespace, name), "Synced")
    return cond if cond and cond["reason"] == reason else None


async def test_foreign_field_manager_conflict_is_visible_and_not_fought(
    controlplane: Any, kube: KubeClient, namespace: str
) -> None:
    provider = kserve_provider()
    async with running_manager(controlplane, provider, namespace) as (manager, _):
        await kube.create(INSTANCES, llm_instance("owned", namespace, on_cluster=True))
        await wait_converged(kube, namespace, ["owned"])
        taken = await kube.apply(
            LLM,
            {
                "apiVersion": LLM.api_version,
                "kind": LLM.kind,
                "metadata": {"name": "owned", "namespace": namespace},
                "spec": {"replicas": 3},
            },
            field_manager="gitops-controller",
            force=True,
        )
        conflict = await wait_for(lambda: synced_reason(kube, namespace, "owned", "ApplyConflict"))
        assert conflict["status"] == "False"
        assert ".spec.replicas" in conflict["message"] and "gitops-controller" in conflict["message"]

        # The provider keeps retrying (with backoff), each time an apply the API server refuses
        # (409, nothing written): five more.
        requests = record_requests(manager)
        failures = manager.actors.stats.failures

        async def retried() -> bool:
            return manager.actors.stats.failures >= failures + 5

        await wait_for(retried)
        live = await kube.get(LLM, namespace, "owned")
        assert live is not None
        assert live["metadata"]["resourceVersion"] == taken["metadata"]["resourceVersion"]  # not written
        assert live["spec"]["replicas"] == 3
        attempts = [code for verb, res, code in requests if res == LLM_RESOURCE and verb == "patch"]
        assert attempts and set(attempts) == {409}  # every write attempt refused: none went through
        assert condition(await kube.get(INSTANCES, namespace, "owned"), "Synced") == conflict  # no flapping

        # `inspect` shows who holds the field, in its table and as YAML.
        report = await gather(kube, provider, namespace, "owned", Catalogs())
        assert report is not None
        row = next(o for o in report.objects if o.kind == LLM.kind)
        assert {o.manager for o in row.owners if ".spec.replicas" in o.fields} == {"gitops-controller"}
        code, table = await inspect_cli(controlplane, "owned", "-n", namespace)
        assert code == 0, table
        line = next(line for line in table.splitlines() if line.startswith("LLMInferenceService "))
        assert line.split()[2] == "ok" and "gitops-controller (Apply): .spec.replicas" in line
        assert "ApplyConflict" in table
        code, text = await inspect_cli(controlplane, "owned", "-n", namespace, "-o", "yaml")
        document = yaml.safe_load(text)
        llm = next(o for o in document["objects"] if o["kind"] == LLM.kind)
        gitops = next(m for m in llm["managedFields"] if m["manager"] == "gitops-controller")
        assert (gitops["operation"], gitops["fields"]) == ("Apply", [".spec.replicas"])
        assert (await inspect_cli(controlplane, "no-such", "-n", namespace))[0] == 1

        # The one documented opt-in takes the field.
        await kube.patch(
            INSTANCES, namespace, "owned", {"metadata": {"annotations": {FORCE_OWNERSHIP_ANNOTATION: "true"}}}
        )
        await wait_converged(kube, namespace, ["owned"])
        live = await kube.get(LLM, namespace, "owned")
        assert live is not None and live["spec"]["replicas"] == 1
        assert ".spec.replicas" in owned_fields(live, PROVIDER_NAME)
        assert ".spec.replicas" not in owned_fields(live, "gitops-controller")


async def test_derived_object_deleted_by_hand_is_recreated(controlplane: Any, kube: KubeClient, namespace: str) -> None:
    async with running_manager(controlplane, kserve_provider(), namespace):
        await kube.create(INSTANCES, llm_instance("lost", namespace, on_cluster=True))
        await wait_converged(kube, namespace, ["lost"])
        before = await kube.get(LLM, namespace, "lost")
        assert before is not None
        await kube.delete(LLM, namespace, "lost")

        async def recreated() -> KubeObject | None:
            obj = await kube.get(LLM, namespace, "lost")
            return obj if obj and obj["metadata"]["uid"] != before["metadata"]["uid"] else None

        await wait_for(recreated)
        await wait_converged(kube, namespace, ["lost"])
        assert kinds_of(await inventory(kube, namespace), "lost") == {"LLMInferenceService": 1, "PodMonitor": 1}


async def test_fields_we_own_removed_by_hand_are_restored_and_others_left_alone(
    controlplane: Any, kube: KubeClient, namespace: str
) -> None:
    async with running_manager(controlplane, kserve_provider(), namespace):
        await kube.create(INSTANCES, llm_instance("drift", namespace, on_cluster=True))
        await wait_converged(kube, namespace, ["drift"])
        # Our provider label removed: the object drops out of our label-selected informer, too.
        await hand_edit(kube, namespace, "drift", {"metadata": {"labels": {LABEL_PROVIDER: None}}})
        # A field we set removed, and an annotation we never set added.
        await hand_edit(
            kube,
            namespace,
            "drift",
            {"spec": {"replicas": None}, "metadata": {"annotations": {"team.example.com/note": "hands on"}}},
        )

        async def restored() -> KubeObject | None:
            obj = await kube.get(LLM, namespace, "drift")
            labels = (obj or {}).get("metadata", {}).get("labels") or {}
            ok = obj and labels.get(LABEL_PROVIDER) == PROVIDER_NAME and obj["spec"].get("replicas") == 1
            return obj if ok else None

        live = await wait_for(restored)
        assert live["metadata"]["annotations"]["team.example.com/note"] == "hands on"
        await wait_converged(kube, namespace, ["drift"])
        assert condition(await kube.get(INSTANCES, namespace, "drift"), "Synced")["status"] == "True"  # type: ignore[index]


async def test_field_we_own_changed_by_kubectl_edit_is_restored(
    controlplane: Any, kube: KubeClient, namespace: str
) -> None:
    async with running_manager(controlplane, kserve_provider(), namespace):
        await kube.create(INSTANCES, llm_instance("edited", namespace, on_cluster=True))
        await wait_converged(kube, namespace, ["edited"])
        await hand_edit(kube, namespace, "edited", {"spec": {"replicas": 5}})

        async def restored_or_conflict() -> str | None:
            obj = await kube.get(LLM, namespace, "edited")
            if obj and obj["spec"].get("replicas") == 1:
                return "restored"
            if await synced_reason(kube, namespace, "edited", "ApplyConflict"):
                return "conflict"
            return None

        assert await wait_for(restored_or_conflict) == "restored"
        await wait_converged(kube, namespace, ["edited"])
        live = await kube.get(LLM, namespace, "edited")
        assert live is not None and ".spec.replicas" in owned_fields(live, PROVIDER_NAME)


async def test_instance_deleted_while_kserve_object_held_by_foreign_finalizer(
    controlplane: Any, kube: KubeClient, namespace: str
) -> None:
    hold = "example.com/hold"
    async with running_manager(controlplane, kserve_provider(), namespace) as (manager, _):
        await kube.create(INSTANCES, llm_instance("held", namespace, on_cluster=True))
        await wait_converged(kube, namespace, ["held"])
        await hand_edit(kube, namespace, "held", {"metadata": {"finalizers": [hold]}})
        requests = record_requests(manager)
        failures = manager.actors.stats.failures
        await kube.delete(INSTANCES, namespace, "held")
        deleted_at = time.monotonic()

        async def held_and_retried() -> bool:
            llmisvc = await kube.get(LLM, namespace, "held")
            deleting = bool(llmisvc and llmisvc["metadata"].get("deletionTimestamp"))
            return deleting and manager.actors.stats.failures >= failures + 6

        await wait_for(held_and_retried)
        elapsed = time.monotonic() - deleted_at
        retries = manager.actors.stats.failures - failures
        instance = await kube.get(INSTANCES, namespace, "held")
        assert instance is not None and FINALIZER in instance["metadata"]["finalizers"]
        assert instance["status"]["phase"] == "Terminating"
        assert await kube.get(POD_MONITOR, namespace, "held-metrics") is None  # the rest went at once
        # Deleted once, then waited for: never re-deleted while it is going. (The DELETE's answer
        # marks it going in the owned index, so a retry before its watch event does not send
        # another: tests/unit/actors/test_lingering_delete.py.)
        assert verbs(requests, LLM_RESOURCE).count("delete") == 1, requests
        # Backoff, not a hot loop: doubling from 5 ms allows at most log2(elapsed / 5 ms) + 1 retries
        # in `elapsed` (a few more for the deletion events that wake the actor). A slower machine
        # only makes the count smaller.
        assert retries <= math.log2(elapsed / 0.005) + 1 + 4, (retries, elapsed)

        await hand_edit(kube, namespace, "held", {"metadata": {"finalizers": None}})

        async def all_gone() -> bool:
            return await kube.get(INSTANCES, namespace, "held") is None

        # The event of the object going waits for the Instance's backoff, which has doubled for as
        # long as the object was held (`elapsed`): its next retry comes up to that much later.
        await wait_for(all_gone, timeout=60 + 2 * elapsed)
    assert await inventory(kube, namespace) == []
    # The Instance never had a connection Secret, so none was deleted: deletes go only to objects the
    # provider watched carry its labels and this Instance's controller reference (no delete by name).
    assert not [r for r in requests if r[0] == "delete" and r[1] == str(SECRETS)]
    print(f"held for {elapsed:.2f} s: {retries} cleanup retries")
