"""The llm topology's external access through the real runtime against KServe's real controllers:
LoadBalancer and NodePort endpoints, switching access modes, and deletion removing everything we own.

The provider is built as `provider-kserve run` builds it (tests/support/llm_runtime.py).
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from actors.client import KubeClient
from actors.client.known_resources import INSTANCES, SECRETS
from actors.contract import inventory_selector, is_owned_by, stamp
from actors.interface import KubeObject, Resource
from kservestack.kwok import NODE_IP
from provider.kserve import build_provider
from provider.model import kinds
from provider.model.names import PROVIDER_NAME
from provider.topologies.llm import own_conditions
from tests.support.instance_status import conditions_of, connection_secret, wait_phase, wait_status, workload_url
from tests.support.instances import llm_instance
from tests.support.kserve import KServeCluster
from tests.support.llm_runtime import ENV, LLM, READY_TIMEOUT, hf_token_secret, provider_running
from tests.support.runtime import running_manager
from tests.support.waiting import NotYet, wait_for

pytestmark = [pytest.mark.integration, pytest.mark.kserve]


async def test_load_balancer_and_node_port_endpoints(kserve: KServeCluster, kserve_namespace: str) -> None:
    """LoadBalancer: Ready on the in-cluster URL with the wait explained, then the assigned address
    once the Service gets one; NodePort: the kwok Node's address and the Service's node port."""
    kube, ns = kserve.kube, kserve_namespace
    async with provider_running(kserve, ns):
        for name, mode in (("lb", "LoadBalancer"), ("np", "NodePort")):
            await kube.create(INSTANCES, llm_instance(name, ns, on_cluster=True, topology={"externalAccess": mode}))

        status = await wait_phase(kube, ns, "lb", "Ready", timeout=READY_TIMEOUT)
        access = conditions_of(status)[own_conditions.EXTERNAL_ACCESS]
        assert (access["status"], access["reason"]) == ("False", "LoadBalancerPending")
        assert (await connection_secret(kube, ns, "lb"))["uri"] == f"{workload_url('lb', ns)}:8000"

        # What a cloud's load balancer controller writes.
        ingress = {"status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}]}}}
        await kube.patch(kinds.SERVICE, ns, "lb-external", ingress, subresource="status")

        async def assigned() -> bool:
            return (await connection_secret(kube, ns, "lb")).get("uri") == "http://203.0.113.7:8000"

        await wait_for(assigned, timeout=60)
        # The pass writes the connection Secret before the status: wait for the status as well.
        await wait_status(kube, ns, "lb", lambda st: _access(st) == ("True", "Assigned"), "ExternalAccess Assigned")

        # Ready, and with the node's address: a first Ready pass may have had no node address to
        # give (its list of Nodes failed) and said NodePortPending, for the next pass to fix.
        status = await wait_status(
            kube,
            ns,
            "np",
            lambda st: st.get("phase") == "Ready" and _access(st) == ("True", "Assigned"),
            "Ready, ExternalAccess Assigned",
            timeout=READY_TIMEOUT,
        )
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
        assert conditions_of(status)[own_conditions.EXTERNAL_ACCESS]["reason"] == "Assigned"


def _access(status: dict[str, Any]) -> tuple[str, str] | None:
    access = conditions_of(status).get(own_conditions.EXTERNAL_ACCESS)
    return (access["status"], access["reason"]) if access else None


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

    async def gone(resource: Resource, obj_name: str, timeout: float = 30.0) -> None:
        async def absent() -> bool:
            return await get(resource, obj_name) is None

        await wait_for(absent, what=f"{resource.kind}/{obj_name} gone", timeout=timeout)

    async def patch_parameters(section: str, values: dict[str, Any]) -> None:
        if section == "topology":
            body: dict[str, Any] = {"spec": {"topology": {"parameters": values}}}
        else:
            body = {"spec": {"components": {"llmEngine": {"parameters": values}}}}
        await kube.patch(INSTANCES, namespace, name, body)

    async with running_manager(controlplane, provider, namespace, shared=shared, client=client):
        body = llm_instance(name, namespace, on_cluster=True, topology=topology, engine=engine)
        created = await kube.create(INSTANCES, body)

        async def all_there() -> bool | NotYet:
            wanted = (
                (service, external),
                (kinds.POD_MONITOR, metrics),
                (kinds.LLM_INFERENCE_SERVICE_CONFIG, config),
                (LLM, name),
            )
            missing = [f"{r.kind}/{n}" for r, n in wanted if await get(r, n) is None]
            return not missing or NotYet({"missing": missing})

        # The first pass, on a loaded machine: KServe's timeout.
        await wait_for(all_there, what="the objects of the first pass", timeout=READY_TIMEOUT)
        lb = await get(service, external)
        assert lb is not None and lb["spec"]["type"] == "LoadBalancer"
        assert is_owned_by(lb, created)
        llmisvc = await get(LLM, name)
        assert llmisvc is not None and {"name": config} in llmisvc["spec"]["baseRefs"]
        # Ready by KServe's word with the in-cluster URL; the load balancer's address is still pending.
        status = await wait_phase(kube, namespace, name, "Ready", timeout=READY_TIMEOUT)
        assert conditions_of(status)[own_conditions.EXTERNAL_ACCESS]["reason"] == "LoadBalancerPending"
        # Listed once Ready, not before: the connection Secret comes with KServe's Ready, which may
        # come at any moment after the first pass.
        assert await owned_objects(kube, namespace, created) == sorted(
            [
                f"LLMInferenceService/{name}",
                f"LLMInferenceServiceConfig/{config}",
                f"PodMonitor/{metrics}",
                f"Secret/{name}-conn",
                f"Service/{external}",
                f"ServiceAccount/{name}-model-puller",
            ]
        )

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
        # once KServe's status no longer lists it, and nudges KServe if it still misses that. A
        # KServe round trip (the changed LLMInferenceService reconciled, the finalizer released).
        await gone(kinds.LLM_INFERENCE_SERVICE_CONFIG, config, timeout=READY_TIMEOUT)
        llmisvc = await get(LLM, name)
        assert llmisvc is not None
        assert {"name": config} not in (llmisvc["spec"].get("baseRefs") or [])

        await wait_status(
            kube,
            namespace,
            name,
            lambda s: (
                s.get("phase") == "Ready"
                and not {own_conditions.EXTERNAL_ACCESS, own_conditions.METRICS} & set(conditions_of(s))
            ),
            "Ready without external access and metrics conditions",
            # Updating until KServe reports the generation without the config Ready.
            timeout=READY_TIMEOUT,
        )
        secret = await connection_secret(kube, namespace, name)
        assert secret["uri"] == f"{workload_url(name, namespace)}:8000"
        assert await owned_objects(kube, namespace, created) == sorted(
            [f"LLMInferenceService/{name}", f"Secret/{name}-conn", f"ServiceAccount/{name}-model-puller"]
        )

        # Deletion: the runtime deletes what it owns, the Secret, then drops its finalizer.
        await kube.delete(INSTANCES, namespace, name)

        async def everything_gone() -> bool | NotYet:
            left = await owned_objects(kube, namespace, created)
            return (await get(INSTANCES, name) is None and not left) or NotYet({"left": left})

        # Through KServe's finalizer on the LLMInferenceService: KServe's timeout.
        await wait_for(everything_gone, what="the Instance and what it owned gone", timeout=READY_TIMEOUT)


def test_owned_objects_selector_matches_what_the_runtime_stamps() -> None:
    """`owned_objects` finds objects by the labels `stamp` writes (else it would always be empty)."""
    instance = {"metadata": {"name": "x", "namespace": "ns", "uid": "u"}}
    labels = stamp({"metadata": {"name": "x-metrics"}}, copy.deepcopy(instance), PROVIDER_NAME)["metadata"]["labels"]
    selector = dict(term.split("=") for term in inventory_selector(instance, PROVIDER_NAME).split(","))
    assert selector.items() <= labels.items()
