"""The cluster running KServe's real controllers (the `kserve` fixture) and what tests do with it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from actors.client import KubeClient
from actors.client.known_resources import INSTANCES
from actors.interface import KubeObject, Resource
from kservestack import KServeStack
from plane import CRD, ControlPlane
from tests.support.waiting import NotYet, wait_for

DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment")
SERVICES = Resource("", "v1", "services", "Service")
HPAS = Resource("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler")
PODS = Resource("", "v1", "pods", "Pod")
NODES = Resource("", "v1", "nodes", "Node", False)
# What KServe creates for an InferenceService or LLMInferenceService (kube-controller-manager and
# kwok add the ReplicaSets' pods).
KSERVE_CREATED = (DEPLOYMENTS, SERVICES, HPAS, PODS)


@dataclass
class KServeCluster:
    """A control plane running KServe's controllers, kube-scheduler and kwok (dev/kservestack)."""

    plane: ControlPlane
    stack: KServeStack
    kube: KubeClient


# The newer core's Instance: non-secret connection details on status (the provider writes them
# only when the installed CRD declares the field).
STATUS_CONNECTION: dict[str, Any] = {
    "type": "object",
    "properties": {"host": {"type": "string"}, "port": {"type": "string"}, "url": {"type": "string"}},
}


async def add_status_connection(kube: KubeClient) -> None:
    crd = await kube.get(CRD, None, "instances.core.openeverest.io")
    assert crd is not None
    for index, version in enumerate(crd["spec"]["versions"]):
        if version["name"] == "v1alpha1":
            path = f"/spec/versions/{index}/schema/openAPIV3Schema/properties/status/properties/connection"
            await kube.patch(
                CRD,
                None,
                crd["metadata"]["name"],
                [{"op": "add", "path": path, "value": STATUS_CONNECTION}],
                content_type="application/json-patch+json",
            )


async def kserve_children(kube: KubeClient, namespace: str, owner_name: str) -> list[str]:
    """Kind/name of what KServe made for `owner_name` (by its name prefix), pods included."""
    found: list[str] = []
    for resource in KSERVE_CREATED:
        items, _ = await kube.list_all(resource, namespace)
        found.extend(f"{resource.kind}/{o['metadata']['name']}" for o in items if _made_for(o, owner_name))
    return sorted(found)


def _made_for(obj: KubeObject, owner_name: str) -> bool:
    name = str(obj["metadata"]["name"])
    return name.startswith(f"{owner_name}-predictor") or name.startswith(f"{owner_name}-kserve")


async def wait_gone(kube: KubeClient, namespace: str, owner_name: str, timeout: float = 60.0) -> None:
    async def none_left() -> bool | NotYet:
        left = await kserve_children(kube, namespace, owner_name)
        return True if not left else NotYet(left)

    await wait_for(none_left, what=f"what KServe made for {owner_name} to go", timeout=timeout)


async def wait_all_gone(kube: KubeClient, namespace: str, name: str, owner: Resource, timeout: float = 60.0) -> None:
    """The Instance `name`, its KServe object (of kind `owner`) and all KServe made for it, gone."""

    async def none_left() -> bool | NotYet:
        left = await kserve_children(kube, namespace, name)
        for resource in (owner, INSTANCES):
            if await kube.get(resource, namespace, name) is not None:
                left.append(resource.kind)
        return True if not left else NotYet(left)

    await wait_for(none_left, what=f"the Instance {name} and all it had to go", timeout=timeout)
