"""The whole life of an llm Instance against KServe's real controllers (the `kserve` fixture):
Ready → Updating → Ready on a model change; Ready → Suspending → Suspended → Resuming → Ready with
`llmEngine.replicas` 0 and back; a suspension while Provisioning and the suspended Instance deleted;
KV-cache offloading accepted by KServe's CRD and webhook and rolled into its Deployment.

Every phase is recorded from a watch on the Instance (tests.support.phases), so a phase that lasts
milliseconds is seen; `pytest -s` prints each timeline with its timestamps.
"""

from __future__ import annotations

import copy
import json
from itertools import dropwhile
from typing import Any

import pytest

from actors.client import ApiError, KubeClient
from actors.client.known_resources import INSTANCES, SECRETS
from actors.interface import KubeObject, Resource
from provider.kserve import build_provider
from provider.model import kinds
from provider.topologies.llm.handler import LlmTopology
from provider.topologies.suspension import STOP_ANNOTATION
from tests.support.instance_status import conditions_of, connection_secret, instance_status, wait_status
from tests.support.instances import llm_instance
from tests.support.kserve import DEPLOYMENTS, PODS, KServeCluster, kserve_children, wait_all_gone
from tests.support.llm_runtime import ENV, LLM, READY_TIMEOUT, held_for_gpus, provider_running
from tests.support.phases import recording_phases
from tests.support.waiting import NotYet, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.kserve]

NEXT_MODEL = "hf://HuggingFaceTB/SmolLM2-360M-Instruct"


async def derived_objects(kube: KubeClient, namespace: str, name: str) -> dict[str, KubeObject]:
    """What the provider made for Instance `name`, by kind/name: every name it derives, and the
    connection Secret."""
    wanted: list[tuple[Resource, str]] = [
        *LlmTopology(build_provider(ENV)[0].settings).derived_names(name),
        (SECRETS, f"{name}-conn"),
    ]
    found: dict[str, KubeObject] = {}
    for resource, obj_name in wanted:
        try:
            obj = await kube.get(resource, namespace, obj_name)
        except ApiError as err:
            if err.status == 404:  # a kind this cluster does not serve
                continue
            raise
        if obj is not None:
            found[f"{resource.kind}/{obj_name}"] = obj
    return found


async def workload_gone(kube: KubeClient, namespace: str, name: str) -> bool | NotYet:
    """KServe deleted the model server: no Deployment, no pod left for the Instance."""
    left = [c for c in await kserve_children(kube, namespace, name) if c.split("/")[0] in ("Deployment", "Pod")]
    return True if not left else NotYet(left)


def _without_volatile(obj: KubeObject) -> KubeObject:
    out = copy.deepcopy(obj)
    for key in ("resourceVersion", "managedFields", "annotations"):
        out["metadata"].pop(key, None)
    out.pop("status", None)
    return out


async def test_model_change_is_updating_then_ready(kserve: KServeCluster, kserve_namespace: str) -> None:
    """A Ready Instance's model changes: Updating (KServe has yet to reconcile the new generation;
    the previous one serves) until KServe reports generation 2 Ready, then Ready. Never Provisioning."""
    kube, ns, name = kserve.kube, kserve_namespace, "chat"
    async with provider_running(kserve, ns), recording_phases(kube, ns, name) as phases:
        await kube.create(INSTANCES, llm_instance(name, ns, on_cluster=True))
        await phases.reached("Ready", 0, READY_TIMEOUT)
        served = await connection_secret(kube, ns, name)

        mark = phases.mark()
        patch = {"spec": {"components": {"llmEngine": {"parameters": {"modelURI": NEXT_MODEL}}}}}
        await kube.patch(INSTANCES, ns, name, patch)
        updating = await phases.reached("Updating", mark, READY_TIMEOUT)
        await phases.reached("Ready", mark, READY_TIMEOUT)
        print(phases.report(mark, "model change"))
        assert phases.since(mark) == ["Updating", "Ready"]
        assert updating.message.startswith("Waiting for KServe to reconcile the LLMInferenceService (generation 2")

        llmisvc = await kube.get(LLM, ns, name)
        assert llmisvc is not None and llmisvc["spec"]["model"]["uri"] == NEXT_MODEL
        assert llmisvc["metadata"]["generation"] == llmisvc["status"]["observedGeneration"] == 2
        deployment = await kube.get(DEPLOYMENTS, ns, f"{name}-kserve")
        assert deployment is not None and NEXT_MODEL.removeprefix("hf://") in json.dumps(deployment["spec"])
        assert await connection_secret(kube, ns, name) == served
        status = await instance_status(kube, ns, name)
        assert conditions_of(status)["KServeReady"]["status"] == "True"


async def test_suspend_and_resume(kserve: KServeCluster, kserve_namespace: str) -> None:
    """replicas 0: the stop annotation on the LLMInferenceService and nothing else changed; KServe
    deletes the Deployment and its pods; Suspending → Suspended, the connection details kept.
    replicas 1: Resuming → Ready, the pods back, the same connection details."""
    kube, ns, name = kserve.kube, kserve_namespace, "chat"
    async with provider_running(kserve, ns), recording_phases(kube, ns, name) as phases:
        created = await kube.create(INSTANCES, llm_instance(name, ns, on_cluster=True))
        await phases.reached("Ready", 0, READY_TIMEOUT)
        before = await derived_objects(kube, ns, name)
        assert {"LLMInferenceService/chat", "ServiceAccount/chat-model-puller", "Secret/chat-conn"} <= set(before)
        served_status = await instance_status(kube, ns, name)
        served_secret = await connection_secret(kube, ns, name)

        mark = phases.mark()
        await kube.patch(INSTANCES, ns, name, {"spec": {"components": {"llmEngine": {"replicas": 0}}}})
        suspended = await phases.reached("Suspended", mark, READY_TIMEOUT)
        print(phases.report(mark, "suspend"))
        assert phases.since(mark) == ["Suspending", "Suspended"]
        assert suspended.message.startswith("llmEngine replicas is 0, so KServe stopped")
        await wait_for(lambda: workload_gone(kube, ns, name), what="the model server to go", timeout=READY_TIMEOUT)

        after = await derived_objects(kube, ns, name)
        assert set(after) == set(before)
        for key, obj in before.items():
            if key == "LLMInferenceService/chat":
                continue
            # Not written at all: same resourceVersion.
            assert after[key]["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"], key
        llmisvc, was = after["LLMInferenceService/chat"], before["LLMInferenceService/chat"]
        assert llmisvc["metadata"]["annotations"][STOP_ANNOTATION] == "true"
        assert llmisvc["metadata"]["generation"] == was["metadata"]["generation"]  # the spec is untouched
        assert llmisvc["spec"] == was["spec"] and llmisvc["spec"]["replicas"] == 1
        assert _without_volatile(llmisvc) == _without_volatile(was)
        status = await instance_status(kube, ns, name)
        assert conditions_of(status)["KServeMainWorkloadReady"]["reason"] == "Stopped"
        # The connection details are kept: the address the model answers on once resumed.
        assert await connection_secret(kube, ns, name) == served_secret
        assert status["connectionSecretRef"] == served_status["connectionSecretRef"]
        assert status["connection"] == served_status["connection"]
        # What render shows for the suspended Instance.
        suspended_instance = await kube.get(INSTANCES, ns, name)
        assert suspended_instance is not None
        provider = build_provider(ENV)[0]
        objects = provider.render(suspended_instance, catalogs=provider.catalogs())
        (rendered,) = [o for o in objects if o["kind"] == LLM.kind]
        assert rendered["metadata"]["annotations"][STOP_ANNOTATION] == "true"

        mark = phases.mark()
        await kube.patch(INSTANCES, ns, name, {"spec": {"components": {"llmEngine": {"replicas": 1}}}})
        await phases.reached("Ready", mark, READY_TIMEOUT)
        print(phases.report(mark, "resume"))
        assert phases.since(mark) == ["Resuming", "Ready"]
        resumed = await kube.get(LLM, ns, name)
        assert resumed is not None and STOP_ANNOTATION not in (resumed["metadata"].get("annotations") or {})
        deployment = await kube.get(DEPLOYMENTS, ns, f"{name}-kserve")
        assert deployment is not None
        assert await connection_secret(kube, ns, name) == served_secret
        assert created["metadata"]["uid"] == (await kube.get(INSTANCES, ns, name) or {})["metadata"]["uid"]


async def test_suspension_while_provisioning_then_delete(kserve: KServeCluster, kserve_namespace: str) -> None:
    """A model whose pod cannot be scheduled (more GPUs than the Node has) is Provisioning; replicas 0
    suspends it all the same (its pending pod goes); deleting the suspended Instance removes
    everything it had."""
    kube, ns, name = kserve.kube, kserve_namespace, "greedy"
    async with provider_running(kserve, ns), recording_phases(kube, ns, name) as phases:
        body = llm_instance(name, ns, on_cluster=True, engine={"computeProfile": "gpu"})
        body["spec"]["components"]["llmEngine"]["resources"]["limits"]["nvidia.com/gpu"] = str(kserve.stack.gpus * 2)
        await kube.create(INSTANCES, body)

        await wait_status(kube, ns, name, held_for_gpus, "the pod held back", READY_TIMEOUT)
        # The GET above can be ahead of the recorder's watch: mark only once the recorder too has
        # seen Provisioning. A Provisioning may still follow the mark (the pending message still
        # in flight on the watch, or KServe writing once more before the patch lands): those, and
        # only those, may lead; what the suspension shows must be exactly Suspending, Suspended.
        await phases.reached("Provisioning", 0, READY_TIMEOUT)
        mark = phases.mark()
        await kube.patch(INSTANCES, ns, name, {"spec": {"components": {"llmEngine": {"replicas": 0}}}})
        await phases.reached("Suspended", mark, READY_TIMEOUT)
        await wait_for(lambda: workload_gone(kube, ns, name), what="the pending pod to go", timeout=READY_TIMEOUT)
        print(phases.report(mark, "suspend while provisioning"))
        assert list(dropwhile(lambda p: p == "Provisioning", phases.since(mark))) == ["Suspending", "Suspended"]

        mark = phases.mark()
        await kube.delete(INSTANCES, ns, name)

        await wait_all_gone(kube, ns, name, LLM, timeout=READY_TIMEOUT)
        # A GET's 404 can come before the watch delivers the DELETED event.
        await phases.reached("(deleted)", mark, READY_TIMEOUT)
        print(phases.report(mark, "delete while suspended"))
        assert phases.since(mark) == ["Terminating", "(deleted)"]


def _offloading_instance(name: str, namespace: str, offloading: dict[str, Any]) -> KubeObject:
    return llm_instance(name, namespace, on_cluster=True, engine={"kvCacheOffloading": offloading})


async def test_kv_cache_offloading_reaches_kserves_pods(kserve: KServeCluster, kserve_namespace: str) -> None:
    """A CPU tier and a node-local disk tier: KServe's CRD and webhook take the LLMInferenceService,
    KServe mounts the disk tier into the model server and requests its ephemeral storage, and the
    Instance is Ready. The other two disk tiers (an existing claim, a claim per pod) pass the same
    CRD and webhook (server-side dry run), which refuse a tier without a volume."""
    kube, ns, name = kserve.kube, kserve_namespace, "offload"
    tier = {"cpu": "2Gi", "evictionPolicy": "arc", "fileSystem": {"volume": "emptyDir", "size": "4Gi"}}
    async with provider_running(kserve, ns), recording_phases(kube, ns, name) as phases:
        await kube.create(INSTANCES, _offloading_instance(name, ns, tier))
        await phases.reached("Ready", 0, READY_TIMEOUT)
        llmisvc = await kube.get(LLM, ns, name)
        assert llmisvc is not None
        assert llmisvc["spec"]["kvCacheOffloading"] == {
            "cpu": "2Gi",
            "evictionPolicy": "arc",
            "secondary": [{"fileSystem": {"emptyDir": {"size": "4Gi"}}}],
        }
        deployment = await kube.get(DEPLOYMENTS, ns, f"{name}-kserve")
        assert deployment is not None
        pod = deployment["spec"]["template"]["spec"]
        volume = next(v for v in pod["volumes"] if v["name"] == "kv-cache-secondary-0")
        assert volume["emptyDir"] == {"sizeLimit": "4Gi"}
        main = next(c for c in pod["containers"] if c["name"] == "main")
        assert {"name": "kv-cache-secondary-0", "mountPath": "/mnt/kv-cache-0"} in main["volumeMounts"]
        assert main["resources"]["requests"]["ephemeral-storage"] == "4Gi"
        pods, _ = await kube.list_all(PODS, ns)
        assert any(p["metadata"]["name"].startswith(f"{name}-kserve") for p in pods)

    provider = build_provider(ENV)[0]
    for index, disk in enumerate(
        (
            {"volume": "claim", "claimName": "kv-cache", "path": "team-a"},
            {"volume": "ephemeralClaim", "size": "20Gi", "storageClassName": "standard"},
        )
    ):
        instance = _offloading_instance(f"dry-{index}", ns, {"cpu": "2Gi", "fileSystem": disk})
        instance["metadata"]["uid"] = "00000000-0000-0000-0000-000000000001"
        (obj,) = [o for o in provider.render(instance, catalogs=provider.catalogs()) if o["kind"] == LLM.kind]
        obj["metadata"]["namespace"] = ns
        accepted = await kube.apply(LLM, obj, field_manager="test", dry_run=True)
        # The CRD defaults the eviction policy.
        assert accepted["spec"]["kvCacheOffloading"] == {**obj["spec"]["kvCacheOffloading"], "evictionPolicy": "lru"}
    broken = copy.deepcopy(obj)
    broken["spec"]["kvCacheOffloading"]["secondary"] = [{"fileSystem": {}}]
    with pytest.raises(ApiError) as refused:
        await kube.apply(LLM, broken, field_manager="test", dry_run=True)
    assert "exactly one of emptyDir or pvc must be set" in str(refused.value)
    assert await kube.get(kinds.LLM_INFERENCE_SERVICE, ns, "dry-0") is None
