"""The llm topology through the real runtime (Manager) against KServe's real controllers (the
`kserve` fixture): every LLMInferenceService status here is what KServe's llmisvc wrote, for the
Deployment kube-controller-manager rolled out and the pods kwok runs on its fake GPU Node.

The provider is built as `provider-kserve run` builds it (`build_provider` from the chart's
environment).
"""

from __future__ import annotations

from typing import Any

import pytest

from actors.client import KubeClient
from actors.client.known_resources import EVENTS, INSTANCES
from actors.contract import is_owned_by, ownership_labels
from actors.interface import KubeObject
from kservestack import KSERVE_NAMESPACE, LLMISVC
from kservestack.manifests import CPU_PRESET_NAME
from plane import create_or_replace
from provider.component_status import PODS_CANNOT_START
from provider.kserve import build_provider
from provider.model import kinds
from provider.model.names import PROVIDER_NAME
from provider.topologies.llm import own_conditions
from tests.support.instance_status import conditions_of, connection_secret, instance_status, wait_phase, wait_status
from tests.support.instances import llm_instance
from tests.support.kserve import DEPLOYMENTS, KServeCluster, kserve_children, wait_gone
from tests.support.llm_runtime import (
    ENV,
    LLM,
    PENDING,
    READY_TIMEOUT,
    held_for_gpus,
    hf_token_secret,
    provider_running,
)
from tests.support.runtime import running_manager
from tests.support.waiting import NotYet, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.kserve]


async def test_create_to_ready_then_scale_then_delete(kserve: KServeCluster, kserve_namespace: str) -> None:
    """Create → the LLMInferenceService with our labels and owner → Provisioning → Ready by KServe's
    word, on the chart's CPU preset, with the workload Service on port 8000 in `<name>-conn` and
    status.connection; two replicas and other resources while Ready → Updating, then Ready once KServe
    observes the new generation, and the Deployment follows; delete → everything KServe made is
    collected."""
    kube, ns, name = kserve.kube, kserve_namespace, "chat"
    await hf_token_secret(kube, ns)
    client = await KubeClient.connect(str(kserve.plane.kubeconfig))
    provider, shared = build_provider(ENV, client)
    async with running_manager(kserve.plane, provider, ns, shared=shared, client=client):
        created = await kube.create(INSTANCES, llm_instance(name, ns, on_cluster=True))

        async def llmisvc() -> KubeObject | None:
            return await kube.get(LLM, ns, name)

        applied = await wait_for(llmisvc, timeout=READY_TIMEOUT)  # the first pass, on a loaded machine
        assert is_owned_by(applied, created)
        assert ownership_labels(created, PROVIDER_NAME).items() <= applied["metadata"]["labels"].items()
        rendered = provider.render(created, catalogs=provider.catalogs())
        (want,) = [o for o in rendered if o["kind"] == "LLMInferenceService"]
        assert applied["spec"] == want["spec"]

        status = await wait_phase(kube, ns, name, "Ready", timeout=READY_TIMEOUT)
        conditions = conditions_of(status)
        for kind in ("Ready", "WorkloadsReady", "RouterReady", "MainWorkloadReady", "PresetsCombined"):
            assert (conditions[f"KServe{kind}"]["status"], conditions[f"KServe{kind}"]["reason"]) == ("True", kind)
        assert conditions["Synced"]["status"] == "True"
        assert conditions[own_conditions.HF_TOKEN]["status"] == "True"
        assert conditions[own_conditions.METRICS]["reason"] == "PodMonitorCreated"
        assert status["connectionSecretRef"] == {"name": f"{name}-conn"}
        host = f"{name}-kserve-workload-svc.{ns}.svc.cluster.local"
        assert await connection_secret(kube, ns, name) == {
            "type": "kserve",
            "provider": PROVIDER_NAME,
            "host": host,
            "port": "8000",
            "uri": f"http://{host}:8000",
        }
        assert status["connection"] == {"host": host, "port": "8000", "url": f"http://{host}:8000"}

        # computeProfile cpu: KServe merged the chart's CPU preset (from its namespace) into the pods.
        served = await llmisvc()
        assert served is not None
        applied_configs = served["status"]["appliedConfigs"]
        assert {"name": CPU_PRESET_NAME, "namespace": KSERVE_NAMESPACE, "source": "UserRef"} in applied_configs
        deployment = await kube.get(DEPLOYMENTS, ns, f"{name}-kserve")
        assert deployment is not None
        pod_spec = deployment["spec"]["template"]["spec"]
        main = next(c for c in pod_spec["containers"] if c["name"] == "main")
        assert main["image"].startswith("vllm/vllm-openai-cpu:")
        assert main["resources"]["limits"] == {"cpu": "2", "memory": "8Gi"}
        assert pod_spec["serviceAccountName"] == f"{name}-model-puller"

        # Two replicas and more CPU while Ready: Updating until KServe reports generation 2, never Provisioning.
        engine = {"replicas": 2, "resources": {"limits": {"cpu": "3", "memory": "8Gi"}}}
        await kube.patch(INSTANCES, ns, name, {"spec": {"components": {"llmEngine": engine}}})
        phases: set[str] = set()

        async def rolled_out() -> bool | NotYet:
            status = await instance_status(kube, ns, name)
            phases.add(f"{status.get('phase')}: {status.get('message')}")
            obj = await llmisvc() or {}
            deployment = await kube.get(DEPLOYMENTS, ns, f"{name}-kserve") or {}
            seen = {
                "generation": obj["metadata"]["generation"],
                "observed": (obj.get("status") or {}).get("observedGeneration"),
                "ready_replicas": (deployment.get("status") or {}).get("readyReplicas"),
                "synced": conditions_of(status)["Synced"].get("observedGeneration"),
            }
            return seen == {"generation": 2, "observed": 2, "ready_replicas": 2, "synced": 2} or NotYet(seen)

        await wait_for(rolled_out, what="two replicas rolled out", timeout=READY_TIMEOUT)
        assert {p.partition(":")[0] for p in phases} <= {"Ready", "Updating"}, phases
        await wait_phase(kube, ns, name, "Ready", "", timeout=READY_TIMEOUT)
        deployment = await kube.get(DEPLOYMENTS, ns, f"{name}-kserve")
        assert deployment is not None and deployment["spec"]["replicas"] == 2
        main = next(c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "main")
        assert main["resources"]["limits"]["cpu"] == "3"

        children = await kserve_children(kube, ns, name)
        assert f"Deployment/{name}-kserve" in children and f"Service/{name}-kserve-workload-svc" in children
        # Deletion waits on KServe's finalizer on the LLMInferenceService, then on the garbage
        # collector for what KServe made: KServe's timeout.
        await kube.delete(INSTANCES, ns, name)
        await wait_gone(kube, ns, name, timeout=READY_TIMEOUT)

        async def all_gone() -> bool | NotYet:
            left = {"llmisvc": await llmisvc(), "instance": await kube.get(INSTANCES, ns, name)}
            return all(obj is None for obj in left.values()) or NotYet([k for k, obj in left.items() if obj])

        await wait_for(all_gone, what="the Instance and its LLMInferenceService gone", timeout=READY_TIMEOUT)


async def test_pending_pods_are_provisioning_saying_why(kserve: KServeCluster, kserve_namespace: str) -> None:
    """More GPUs than the Node has: the pod stays Pending; the Instance's message names the
    component, the state and the scheduler's words (issue 38), KServe's reason stays in its
    condition, and one Warning Event says it."""
    kube, ns, name = kserve.kube, kserve_namespace, "greedy"
    async with provider_running(kserve, ns):
        engine = {"computeProfile": "gpu"}
        body = llm_instance(name, ns, on_cluster=True, engine=engine)
        body["spec"]["components"]["llmEngine"]["resources"]["limits"]["nvidia.com/gpu"] = str(kserve.stack.gpus * 2)
        await kube.create(INSTANCES, body)

        def both_say_why(status: dict[str, Any]) -> bool:
            # The pod's reason reaches the provider before KServe writes its own: wait for both.
            ready = conditions_of(status).get("KServeReady") or {}
            kserves = (ready.get("status"), ready.get("reason"), ready.get("message"))
            return held_for_gpus(status) and kserves == ("False", "MinimumReplicasUnavailable", PENDING)

        status = await wait_status(kube, ns, name, both_say_why, "the scheduler's and KServe's words", READY_TIMEOUT)
        assert [c["state"] for c in status["components"]] == ["Unschedulable"]
        assert await connection_secret(kube, ns, name) == {}

        async def warned() -> list[KubeObject] | NotYet:
            items, _ = await kube.list_all(EVENTS, ns)
            found = [e for e in items if e["regarding"]["name"] == name and e["reason"] == PODS_CANNOT_START]
            return found or NotYet(sorted({e["reason"] for e in items}))

        # One Event, saying what the message says (when it is said again is the unit tests' business:
        # only when the message is new).
        [event] = await wait_for(warned, what="a PodsCannotStart Event", timeout=60)
        assert event["note"] == status["message"] and event["type"] == "Warning"
        # No longer than needed: KServe's llmisvc makes a new certificate on every reconcile while a
        # pod has no IP.
        await kube.delete(INSTANCES, ns, name)
        await wait_gone(kube, ns, name, timeout=READY_TIMEOUT)  # through KServe's finalizer, as above


async def test_missing_base_ref_fails_then_heals(kserve: KServeCluster, kserve_namespace: str) -> None:
    """A baseRef that does not exist → Failed naming it; creating it heals the Instance without an
    edit."""
    kube, ns, name = kserve.kube, kserve_namespace, "based"
    async with provider_running(kserve, ns):
        await kube.create(INSTANCES, llm_instance(name, ns, on_cluster=True, engine={"baseRefs": ["team-defaults"]}))
        status = await wait_phase(kube, ns, name, "Failed", timeout=READY_TIMEOUT)
        assert status["message"].startswith(
            "KServe cannot combine the LLMInferenceService configuration (ConfigNotFound: "
            f'LLMInferenceServiceConfig "team-defaults" not found in namespaces [{ns} {KSERVE_NAMESPACE}]); '
            "check llmEngine.parameters.baseRefs"
        )
        combined = conditions_of(status)["KServePresetsCombined"]
        assert (combined["status"], combined["reason"]) == ("False", "ConfigNotFound")

        config = {
            "apiVersion": kinds.LLM_INFERENCE_SERVICE_CONFIG.api_version,
            "kind": kinds.LLM_INFERENCE_SERVICE_CONFIG.kind,
            "metadata": {"name": "team-defaults", "namespace": ns},
            "spec": {"template": {"containers": [{"name": "main", "env": [{"name": "TEAM", "value": "a"}]}]}},
        }
        await create_or_replace(kube, kinds.LLM_INFERENCE_SERVICE_CONFIG, config)
        await wait_phase(kube, ns, name, "Ready", timeout=READY_TIMEOUT)


async def test_llmisvc_restart_loses_nothing(kserve: KServeCluster, kserve_namespace: str) -> None:
    """KServe's llmisvc (and its webhooks) goes away while a Ready Instance is edited: the provider
    cannot apply, says so and retries; once llmisvc is back the edit lands and the Instance is Ready
    with two replicas."""
    kube, ns, name = kserve.kube, kserve_namespace, "chat"
    async with provider_running(kserve, ns):
        await kube.create(INSTANCES, llm_instance(name, ns, on_cluster=True))
        await wait_phase(kube, ns, name, "Ready", timeout=READY_TIMEOUT)
        kserve.stack.stop_controller(LLMISVC)
        try:
            await kube.patch(INSTANCES, ns, name, {"spec": {"components": {"llmEngine": {"replicas": 2}}}})

            async def refused() -> dict[str, Any] | NotYet:
                synced = conditions_of(await instance_status(kube, ns, name)).get("Synced") or {}
                return synced if synced.get("status") == "False" else NotYet(synced)

            synced = await wait_for(refused, what="the apply refused (Synced False)", timeout=60)
            assert "webhook" in synced["message"]
        finally:
            await kserve.stack.start_controller(LLMISVC)

        async def scaled() -> bool | NotYet:
            deployment = await kube.get(DEPLOYMENTS, ns, f"{name}-kserve") or {}
            ready = (deployment.get("status") or {}).get("readyReplicas")
            return ready == 2 or NotYet({"readyReplicas": ready})

        await wait_for(scaled, what="two ready replicas", timeout=READY_TIMEOUT)

        def ready_at_generation_2(status: dict[str, Any]) -> bool:
            synced = conditions_of(status).get("Synced") or {}
            ready = status.get("phase") == "Ready"
            return ready and (synced.get("status"), synced.get("observedGeneration")) == ("True", 2)

        await wait_status(kube, ns, name, ready_at_generation_2, "Ready, Synced at generation 2", timeout=READY_TIMEOUT)
