"""The llm topology through the real runtime (Manager) against KServe's real controllers (the
`kserve` fixture): every LLMInferenceService status here is what KServe's llmisvc wrote, for the
Deployment kube-controller-manager rolled out and the pods kwok runs on its fake GPU Node.

The provider is built as `provider-kserve run` builds it (`build_provider` from the chart's
environment).
"""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from actors.interface import KubeObject, Resource
from actors.kube import KubeClient
from actors.ownership import inventory_selector, is_owned_by, ownership_labels, stamp
from actors.resources import INSTANCES, SECRETS
from controlplane import create_or_replace
from kservestack import KSERVE_NAMESPACE, LLMISVC
from kservestack.kwok import NODE_IP
from kservestack.manifests import CPU_PRESET_NAME
from provider import kinds
from provider.kserve import build_provider
from provider.llm import status as llm_status
from provider.names import PROVIDER_NAME
from tests.support.instances import (
    conditions_of,
    connection_secret,
    instance_status,
    llm_instance,
    wait_phase,
    workload_url,
)
from tests.support.kserve import DEPLOYMENTS, KServeCluster, kserve_children, wait_gone
from tests.support.runtime import running_manager, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.kserve]

LLM = kinds.LLM_INFERENCE_SERVICE
ENV = {"HF_TOKEN_SECRET_NAME": "hf-token", "POD_MONITOR_INTERVAL": "15s"}
PENDING = "Deployment does not have minimum availability."
READY_TIMEOUT = 120.0


async def hf_token_secret(kube: KubeClient, namespace: str) -> None:
    """The Secret the chart's hfToken.secretName names, as a user creates it: KServe reads it for
    the model pods (and refuses to build them without it)."""
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": ENV["HF_TOKEN_SECRET_NAME"], "namespace": namespace},
        "stringData": {"HF_TOKEN": "hf_test"},
    }
    await kube.create(SECRETS, secret)


@asynccontextmanager
async def provider_running(kserve: KServeCluster, namespace: str) -> AsyncIterator[None]:
    """The provider as `provider-kserve run` builds it from ENV, watching `namespace`, with the
    Hugging Face token Secret in place."""
    await hf_token_secret(kserve.kube, namespace)
    client = await KubeClient.connect(str(kserve.plane.kubeconfig))
    provider, shared = build_provider(ENV, client)
    async with running_manager(kserve.plane, provider, namespace, shared=shared, client=client):
        yield


async def test_create_to_ready_then_scale_then_delete(kserve: KServeCluster, kserve_namespace: str) -> None:
    """Create → the LLMInferenceService with our labels and owner → Provisioning → Ready by KServe's
    word, on the chart's CPU preset, with the workload Service on port 8000 in `<name>-conn` and
    status.connection; two replicas and other resources while Ready → still Ready, KServe observes
    the new generation and the Deployment follows; delete → everything KServe made is collected."""
    kube, ns, name = kserve.kube, kserve_namespace, "chat"
    await hf_token_secret(kube, ns)
    client = await KubeClient.connect(str(kserve.plane.kubeconfig))
    provider, shared = build_provider(ENV, client)
    async with running_manager(kserve.plane, provider, ns, shared=shared, client=client):
        created = await kube.create(INSTANCES, llm_instance(name, ns))

        async def llmisvc() -> KubeObject | None:
            return await kube.get(LLM, ns, name)

        applied = await wait_for(llmisvc)
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
        assert conditions[llm_status.HF_TOKEN]["status"] == "True"
        assert conditions[llm_status.METRICS]["reason"] == "PodMonitorCreated"
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

        # Two replicas and more CPU while Ready: the Instance never leaves Ready.
        engine = {"replicas": 2, "resources": {"limits": {"cpu": "3", "memory": "8Gi"}}}
        await kube.patch(INSTANCES, ns, name, {"spec": {"components": {"llmEngine": engine}}})
        phases: set[str] = set()
        last: dict[str, Any] = {}

        async def rolled_out() -> bool:
            status = await instance_status(kube, ns, name)
            phases.add(f"{status.get('phase')}: {status.get('message')}")
            obj = await llmisvc() or {}
            deployment = await kube.get(DEPLOYMENTS, ns, f"{name}-kserve") or {}
            last.update(
                generation=obj["metadata"]["generation"],
                observed=(obj.get("status") or {}).get("observedGeneration"),
                ready_replicas=(deployment.get("status") or {}).get("readyReplicas"),
                synced=conditions_of(status)["Synced"].get("observedGeneration"),
            )
            return last == {"generation": 2, "observed": 2, "ready_replicas": 2, "synced": 2}

        try:
            await wait_for(rolled_out, timeout=READY_TIMEOUT)
        except TimeoutError:
            raise AssertionError(f"not rolled out: {last}") from None
        assert {p.partition(":")[0] for p in phases} == {"Ready"}, phases
        deployment = await kube.get(DEPLOYMENTS, ns, f"{name}-kserve")
        assert deployment is not None and deployment["spec"]["replicas"] == 2
        main = next(c for c in deployment["spec"]["template"]["spec"]["containers"] if c["name"] == "main")
        assert main["resources"]["limits"]["cpu"] == "3"

        children = await kserve_children(kube, ns, name)
        assert f"Deployment/{name}-kserve" in children and f"Service/{name}-kserve-workload-svc" in children
        await kube.delete(INSTANCES, ns, name)
        await wait_gone(kube, ns, name)

        async def all_gone() -> bool:
            return await llmisvc() is None and await kube.get(INSTANCES, ns, name) is None

        await wait_for(all_gone, timeout=60)


async def test_pending_pods_are_provisioning_with_kserves_reason(kserve: KServeCluster, kserve_namespace: str) -> None:
    """More GPUs than the Node has: the pod stays Pending; the Instance says what KServe says."""
    kube, ns, name = kserve.kube, kserve_namespace, "greedy"
    async with provider_running(kserve, ns):
        engine = {"computeProfile": "gpu"}
        body = llm_instance(name, ns, engine=engine)
        body["spec"]["components"]["llmEngine"]["resources"]["limits"]["nvidia.com/gpu"] = str(kserve.stack.gpus * 2)
        await kube.create(INSTANCES, body)
        status = await wait_phase(kube, ns, name, "Provisioning", PENDING, timeout=READY_TIMEOUT)
        ready = conditions_of(status)["KServeReady"]
        assert (ready["status"], ready["reason"], ready["message"]) == ("False", "MinimumReplicasUnavailable", PENDING)
        assert await connection_secret(kube, ns, name) == {}
        # No longer than needed: KServe's llmisvc makes a new certificate on every reconcile while a
        # pod has no IP.
        await kube.delete(INSTANCES, ns, name)
        await wait_gone(kube, ns, name)


async def test_missing_base_ref_fails_then_heals(kserve: KServeCluster, kserve_namespace: str) -> None:
    """A baseRef that does not exist → Failed naming it; creating it heals the Instance without an
    edit."""
    kube, ns, name = kserve.kube, kserve_namespace, "based"
    async with provider_running(kserve, ns):
        await kube.create(INSTANCES, llm_instance(name, ns, engine={"baseRefs": ["team-defaults"]}))
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


async def test_load_balancer_and_node_port_endpoints(kserve: KServeCluster, kserve_namespace: str) -> None:
    """LoadBalancer: Ready on the in-cluster URL with the wait explained, then the assigned address
    once the Service gets one; NodePort: the kwok Node's address and the Service's node port."""
    kube, ns = kserve.kube, kserve_namespace
    async with provider_running(kserve, ns):
        await kube.create(INSTANCES, llm_instance("lb", ns, {"externalAccess": "LoadBalancer"}))
        await kube.create(INSTANCES, llm_instance("np", ns, {"externalAccess": "NodePort"}))

        status = await wait_phase(kube, ns, "lb", "Ready", timeout=READY_TIMEOUT)
        access = conditions_of(status)[llm_status.EXTERNAL_ACCESS]
        assert (access["status"], access["reason"]) == ("False", "LoadBalancerPending")
        assert (await connection_secret(kube, ns, "lb"))["uri"] == f"{workload_url('lb', ns)}:8000"

        # What a cloud's load balancer controller writes.
        ingress = {"status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}]}}}
        await kube.patch(kinds.SERVICE, ns, "lb-external", ingress, subresource="status")

        async def assigned() -> bool:
            return (await connection_secret(kube, ns, "lb")).get("uri") == "http://203.0.113.7:8000"

        await wait_for(assigned, timeout=60)
        access = conditions_of(await instance_status(kube, ns, "lb"))[llm_status.EXTERNAL_ACCESS]
        assert (access["status"], access["reason"]) == ("True", "Assigned")

        status = await wait_phase(kube, ns, "np", "Ready", timeout=READY_TIMEOUT)
        service = await kube.get(kinds.SERVICE, ns, "np-external")
        assert service is not None
        node_port = service["spec"]["ports"][0]["nodePort"]
        assert await connection_secret(kube, ns, "np") == {
            "type": "kserve",
            "provider": PROVIDER_NAME,
            "host": NODE_IP,
            "port": str(node_port),
            "uri": f"http://{NODE_IP}:{node_port}",
        }
        assert conditions_of(status)[llm_status.EXTERNAL_ACCESS]["reason"] == "Assigned"


async def test_llmisvc_restart_loses_nothing(kserve: KServeCluster, kserve_namespace: str) -> None:
    """KServe's llmisvc (and its webhooks) goes away while a Ready Instance is edited: the provider
    cannot apply, says so and retries; once llmisvc is back the edit lands and the Instance is Ready
    with two replicas."""
    kube, ns, name = kserve.kube, kserve_namespace, "chat"
    async with provider_running(kserve, ns):
        await kube.create(INSTANCES, llm_instance(name, ns))
        await wait_phase(kube, ns, name, "Ready", timeout=READY_TIMEOUT)
        kserve.stack.stop_controller(LLMISVC)
        try:
            await kube.patch(INSTANCES, ns, name, {"spec": {"components": {"llmEngine": {"replicas": 2}}}})

            async def refused() -> dict[str, Any] | None:
                synced = conditions_of(await instance_status(kube, ns, name)).get("Synced") or {}
                return synced if synced.get("status") == "False" else None

            synced = await wait_for(refused, timeout=60)
            assert "webhook" in synced["message"]
        finally:
            await kserve.stack.start_controller(LLMISVC)

        async def scaled() -> bool:
            deployment = await kube.get(DEPLOYMENTS, ns, f"{name}-kserve") or {}
            status = await instance_status(kube, ns, name)
            return (deployment.get("status") or {}).get("readyReplicas") == 2 and status.get("phase") == "Ready"

        await wait_for(scaled, timeout=READY_TIMEOUT)
        synced = conditions_of(await instance_status(kube, ns, name))["Synced"]
        assert (synced["status"], synced["observedGeneration"]) == ("True", 2)


async def owned_objects(kube: KubeClient, namespace: str, instance: KubeObject) -> list[str]:
    """Every object carrying our ownership labels for `instance`, as kind/name."""
    selector = inventory_selector(instance, PROVIDER_NAME)
    found: list[str] = []
    for resource in (*kinds.OWNED, SECRETS):
        items, _ = await kube.list_all(resource, namespace, label_selector=selector)
        found.extend(f"{resource.kind}/{item['metadata']['name']}" for item in items)
    return sorted(found)


async def test_switching_access_modes_cleans_up_and_deletion_removes_everything(
    kserve: KServeCluster, kserve_namespace: str
) -> None:
    """LoadBalancer → `<name>-external`; NodePort → the same Service retyped; ClusterIP → gone;
    enableMetrics false → PodMonitor gone; config removed → `<name>-config` gone and out of
    baseRefs. Deleting the Instance removes every object with our labels, then the Instance."""
    name, kube, namespace, controlplane = "sw", kserve.kube, kserve_namespace, kserve.plane
    await hf_token_secret(kube, namespace)
    client = await KubeClient.connect(str(controlplane.kubeconfig))
    provider, shared = build_provider(ENV, client)
    topology = {"externalAccess": "LoadBalancer"}
    engine = {"config": "template:\n  containers:\n    - name: main\n      args: [--max-model-len=2048]\n"}
    service = kinds.SERVICE
    external, metrics, config = f"{name}-external", f"{name}-metrics", f"{name}-config"

    async def get(resource: Resource, obj_name: str) -> KubeObject | None:
        return await kube.get(resource, namespace, obj_name)

    async def gone(resource: Resource, obj_name: str) -> None:
        async def absent() -> bool:
            return await get(resource, obj_name) is None

        await wait_for(absent)

    async def patch_parameters(section: str, values: dict[str, Any]) -> None:
        if section == "topology":
            body: dict[str, Any] = {"spec": {"topology": {"parameters": values}}}
        else:
            body = {"spec": {"components": {"llmEngine": {"parameters": values}}}}
        await kube.patch(INSTANCES, namespace, name, body)

    async with running_manager(controlplane, provider, namespace, shared=shared, client=client):
        created = await kube.create(INSTANCES, llm_instance(name, namespace, topology, engine))

        async def all_there() -> bool:
            objs = [
                await get(r, n)
                for r, n in (
                    (service, external),
                    (kinds.POD_MONITOR, metrics),
                    (kinds.LLM_INFERENCE_SERVICE_CONFIG, config),
                    (LLM, name),
                )
            ]
            return all(o is not None for o in objs)

        await wait_for(all_there)
        lb = await get(service, external)
        assert lb is not None and lb["spec"]["type"] == "LoadBalancer"
        assert is_owned_by(lb, created)
        llmisvc = await get(LLM, name)
        assert llmisvc is not None and {"name": config} in llmisvc["spec"]["baseRefs"]
        assert await owned_objects(kube, namespace, created) == sorted(
            [
                f"LLMInferenceService/{name}",
                f"LLMInferenceServiceConfig/{config}",
                f"PodMonitor/{metrics}",
                f"Service/{external}",
                f"ServiceAccount/{name}-model-puller",
            ]
        )
        # Ready by KServe's word with the in-cluster URL; the load balancer's address is still pending.
        status = await wait_phase(kube, namespace, name, "Ready", timeout=READY_TIMEOUT)
        assert conditions_of(status)[llm_status.EXTERNAL_ACCESS]["reason"] == "LoadBalancerPending"

        # LoadBalancer → NodePort: the same Service, retyped in place.
        await patch_parameters("topology", {"externalAccess": "NodePort"})

        async def retyped() -> KubeObject | None:
            svc = await get(service, external)
            return svc if svc is not None and svc["spec"]["type"] == "NodePort" else None

        node_port = await wait_for(retyped)
        assert node_port["metadata"]["uid"] == lb["metadata"]["uid"]

        # → ClusterIP: KServe's own workload Service is enough, ours is deleted.
        await patch_parameters("topology", {"externalAccess": "ClusterIP"})
        await gone(service, external)

        await patch_parameters("topology", {"enableMetrics": False})
        await gone(kinds.POD_MONITOR, metrics)

        await patch_parameters("engine", {"config": None})
        # KServe's finalizer holds a config while a service uses it: the provider deletes it only
        # once KServe's status no longer lists it, and nudges KServe if it still misses that.
        await gone(kinds.LLM_INFERENCE_SERVICE_CONFIG, config)
        llmisvc = await get(LLM, name)
        assert llmisvc is not None
        assert {"name": config} not in (llmisvc["spec"].get("baseRefs") or [])

        status = await wait_phase(kube, namespace, name, "Ready")
        assert llm_status.EXTERNAL_ACCESS not in conditions_of(status)
        assert llm_status.METRICS not in conditions_of(status)
        secret = await connection_secret(kube, namespace, name)
        assert secret["uri"] == f"{workload_url(name, namespace)}:8000"
        assert await owned_objects(kube, namespace, created) == sorted(
            [f"LLMInferenceService/{name}", f"Secret/{name}-conn", f"ServiceAccount/{name}-model-puller"]
        )

        # Deletion: the runtime deletes what it owns, the Secret, then drops its finalizer.
        await kube.delete(INSTANCES, namespace, name)

        async def everything_gone() -> bool:
            return await get(INSTANCES, name) is None and not await owned_objects(kube, namespace, created)

        try:
            await wait_for(everything_gone)
        except TimeoutError:
            left = await owned_objects(kube, namespace, created)
            raise AssertionError(f"left after deleting the Instance: {left}") from None


def test_owned_objects_selector_matches_what_the_runtime_stamps() -> None:
    """`owned_objects` finds objects by the labels `stamp` writes (else it would always be empty)."""
    instance = {"metadata": {"name": "x", "namespace": "ns", "uid": "u"}}
    labels = stamp({"metadata": {"name": "x-metrics"}}, copy.deepcopy(instance), PROVIDER_NAME)["metadata"]["labels"]
    selector = dict(term.split("=") for term in inventory_selector(instance, PROVIDER_NAME).split(","))
    assert selector.items() <= labels.items()
