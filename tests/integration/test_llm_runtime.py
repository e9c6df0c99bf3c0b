"""The llm topology through the real runtime (Manager) on a real API server with the real CRDs.

The provider is built as `provider-kserve run` builds it (`build_provider` from the chart's
environment). No KServe controller runs: the tests play KServe by writing the LLMInferenceService
status through its status subresource, in the shape KServe 0.20 writes it.
"""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest

from actors.interface import KubeObject, Resource
from actors.kube import KubeClient
from actors.ownership import inventory_selector, is_owned_by, ownership_labels, stamp
from actors.resources import INSTANCES, SECRETS
from provider import kinds
from provider.kserve import build_provider
from provider.llm import status as llm_status
from provider.names import PROVIDER_NAME
from tests.support.runtime import running_manager, wait_for

pytestmark = pytest.mark.integration

NOW = "2026-01-01T00:00:00Z"
LLM = kinds.LLM_INFERENCE_SERVICE
ENV = {"HF_TOKEN_SECRET_NAME": "hf-token", "POD_MONITOR_INTERVAL": "15s"}


def llm_instance(
    name: str, namespace: str, topology: dict[str, Any] | None = None, engine: dict[str, Any] | None = None
) -> KubeObject:
    # No spec.version: no Provider CR is installed here, so there is no bundle to check against.
    return {
        "apiVersion": INSTANCES.api_version,
        "kind": INSTANCES.kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "providerRef": {"name": PROVIDER_NAME},
            "topology": {"type": "llm", "parameters": topology or {}},
            "components": {
                "llmEngine": {
                    "type": "vllm",
                    "replicas": 1,
                    "resources": {"limits": {"cpu": "2", "memory": "8Gi"}},
                    "parameters": {
                        "modelURI": "hf://HuggingFaceTB/SmolLM2-135M-Instruct",
                        "computeProfile": "cpu",
                        **(engine or {}),
                    },
                }
            },
        },
    }


def workload_url(name: str, namespace: str) -> str:
    return f"http://{name}-kserve-workload-svc.{namespace}.svc.cluster.local"


def ready_status(name: str, namespace: str) -> dict[str, Any]:
    """What KServe 0.20 writes once the model serves (no gateway routing: no status.url)."""
    return {
        "conditions": [
            {"type": kind, "status": "True", "lastTransitionTime": NOW}
            for kind in ("MainWorkloadReady", "WorkloadsReady", "RouterReady", "PresetsCombined", "Ready")
        ],
        "addresses": [{"url": workload_url(name, namespace)}],
    }


async def write_status(kube: KubeClient, namespace: str, name: str, status: dict[str, Any]) -> KubeObject:
    return await kube.patch(LLM, namespace, name, {"status": status}, subresource="status")


async def instance_status(kube: KubeClient, namespace: str, name: str) -> dict[str, Any]:
    obj = await kube.get(INSTANCES, namespace, name) or {}
    status: dict[str, Any] = obj.get("status") or {}
    return status


def conditions_of(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in status.get("conditions") or []}


async def wait_phase(
    kube: KubeClient, namespace: str, name: str, phase: str, message: str | None = None
) -> dict[str, Any]:
    async def reached() -> dict[str, Any] | None:
        status = await instance_status(kube, namespace, name)
        if status.get("phase") != phase or (message is not None and status.get("message") != message):
            return None
        return status

    try:
        found: dict[str, Any] = await wait_for(reached)
    except TimeoutError:
        last = await instance_status(kube, namespace, name)
        raise AssertionError(f"{name} never reached {phase} {message!r}; last status: {last}") from None
    return found


async def connection_secret(kube: KubeClient, namespace: str, name: str) -> dict[str, str]:
    secret = await kube.get(SECRETS, namespace, f"{name}-conn")
    if secret is None:
        return {}
    return {k: base64.b64decode(v).decode() for k, v in (secret.get("data") or {}).items()}


async def test_status_maps_kserve_conditions_onto_the_instance(
    controlplane: Any, kube: KubeClient, namespace: str
) -> None:
    """Create → the LLMInferenceService with our labels and owner; KServe Ready → Ready with the
    workload Service on port 8000 in `<name>-conn`; Ready=False → Provisioning with KServe's words;
    a missing preset (PresetsCombined=False ConfigNotFound) → Failed saying what to check."""
    name = "chat"
    client = await KubeClient.connect(str(controlplane.kubeconfig))
    provider, shared = build_provider(ENV, client)
    async with running_manager(controlplane, provider, namespace, shared=shared, client=client):
        created = await kube.create(INSTANCES, llm_instance(name, namespace))

        async def llmisvc() -> KubeObject | None:
            return await kube.get(LLM, namespace, name)

        applied = await wait_for(llmisvc)
        assert is_owned_by(applied, created)
        assert ownership_labels(created, PROVIDER_NAME).items() <= applied["metadata"]["labels"].items()
        rendered = provider.render(created, catalogs=provider.catalogs())
        (want,) = [o for o in rendered if o["kind"] == "LLMInferenceService"]
        assert applied["spec"] == want["spec"]

        status = await wait_phase(kube, namespace, name, "Provisioning", llm_status.CREATING)
        assert conditions_of(status)["Synced"]["status"] == "True"

        # KServe: Ready.
        await write_status(kube, namespace, name, ready_status(name, namespace))
        status = await wait_phase(kube, namespace, name, "Ready")
        conditions = conditions_of(status)
        for kind in ("KServeReady", "KServeWorkloadsReady", "KServeRouterReady", "KServeMainWorkloadReady"):
            assert conditions[kind]["status"] == "True", kind
        assert conditions[llm_status.HF_TOKEN]["status"] == "True"
        assert conditions[llm_status.METRICS]["reason"] == "PodMonitorCreated"
        assert status["connectionSecretRef"] == {"name": f"{name}-conn"}
        host = f"{name}-kserve-workload-svc.{namespace}.svc.cluster.local"
        assert await connection_secret(kube, namespace, name) == {
            "type": "kserve",
            "provider": PROVIDER_NAME,
            "host": host,
            "port": "8000",
            "uri": f"http://{host}:8000",
        }

        # KServe: the workload lost its replicas.
        message = "Deployment does not have minimum availability."
        await write_status(
            kube,
            namespace,
            name,
            {
                "conditions": [
                    {"type": "PresetsCombined", "status": "True", "lastTransitionTime": NOW},
                    {
                        "type": "WorkloadsReady",
                        "status": "False",
                        "reason": "MinimumReplicasUnavailable",
                        "message": message,
                        "lastTransitionTime": NOW,
                    },
                    {
                        "type": "Ready",
                        "status": "False",
                        "reason": "MinimumReplicasUnavailable",
                        "message": message,
                        "lastTransitionTime": NOW,
                    },
                ],
            },
        )
        status = await wait_phase(kube, namespace, name, "Provisioning", message)
        kserve_ready = conditions_of(status)["KServeReady"]
        assert (kserve_ready["status"], kserve_ready["reason"], kserve_ready["message"]) == (
            "False",
            "MinimumReplicasUnavailable",
            message,
        )
        assert "KServeRouterReady" not in conditions_of(status)  # KServe's conditions, not remembered ones

        # KServe: a preset named in baseRefs does not exist.
        missing = 'LLMInferenceServiceConfig "kserve-config-llm-cpu" not found'
        await write_status(
            kube,
            namespace,
            name,
            {
                "conditions": [
                    {
                        "type": "PresetsCombined",
                        "status": "False",
                        "reason": "ConfigNotFound",
                        "message": missing,
                        "lastTransitionTime": NOW,
                    },
                ],
            },
        )
        status = await wait_phase(kube, namespace, name, "Failed")
        assert status["message"].startswith(
            f"KServe cannot combine the LLMInferenceService configuration (ConfigNotFound: {missing}); "
        )
        assert "cpuProfile.enabled" in status["message"]
        combined = conditions_of(status)["KServePresetsCombined"]
        assert (combined["status"], combined["reason"]) == ("False", "ConfigNotFound")
        # The connection details of the last Ready pass are kept with the Instance.
        assert (await connection_secret(kube, namespace, name))["port"] == "8000"


async def owned_objects(kube: KubeClient, namespace: str, instance: KubeObject) -> list[str]:
    """Every object carrying our ownership labels for `instance`, as kind/name."""
    selector = inventory_selector(instance, PROVIDER_NAME)
    found: list[str] = []
    for resource in (*kinds.OWNED, SECRETS):
        items, _ = await kube.list_all(resource, namespace, label_selector=selector)
        found.extend(f"{resource.kind}/{item['metadata']['name']}" for item in items)
    return sorted(found)


async def test_switching_access_modes_cleans_up_and_deletion_removes_everything(
    controlplane: Any, kube: KubeClient, namespace: str
) -> None:
    """LoadBalancer → `<name>-external`; NodePort → the same Service retyped; ClusterIP → gone;
    enableMetrics false → PodMonitor gone; config removed → `<name>-config` gone and out of
    baseRefs. Deleting the Instance removes every object with our labels, then the Instance."""
    name = "sw"
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
        await write_status(kube, namespace, name, ready_status(name, namespace))
        # Ready at once with the in-cluster URL; the load balancer's address is still pending.
        status = await wait_phase(kube, namespace, name, "Ready")
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
