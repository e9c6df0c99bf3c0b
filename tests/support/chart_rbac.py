"""The chart's ServiceAccount and RBAC on the real control plane.

`service_account_kubeconfig` is the helper for running the provider under the chart's
ServiceAccount: it applies the rendered ServiceAccount and RBAC to the control plane and returns a
kubeconfig holding a token of that ServiceAccount (TokenRequest).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path

from actors.client import KubeClient
from actors.interface import KubeObject, Resource
from plane import ControlPlane, create_or_replace, service_account_token
from provider.model import rbac
from tests.support.chart import prepare_chart, render
from tests.support.waiting import NotYet, wait_for

SERVICE_ACCOUNT = Resource("", "v1", "serviceaccounts", "ServiceAccount")
CLUSTER_ROLE = Resource("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", namespaced=False)
CLUSTER_ROLE_BINDING = Resource(
    "rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", namespaced=False
)
ROLE = Resource("rbac.authorization.k8s.io", "v1", "roles", "Role")
ROLE_BINDING = Resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding")
SSAR = Resource("authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", namespaced=False)
RBAC_RESOURCES = {
    "ServiceAccount": SERVICE_ACCOUNT,
    "ClusterRole": CLUSTER_ROLE,
    "ClusterRoleBinding": CLUSTER_ROLE_BINDING,
    "Role": ROLE,
    "RoleBinding": ROLE_BINDING,
}


def rendered_rbac(chart: Path, namespace: str, release: str) -> list[KubeObject]:
    """The ServiceAccount, ClusterRole/Binding and Role/Binding the chart renders for `release`."""
    return [d for d in render(chart, release=release, namespace=namespace) if d["kind"] in RBAC_RESOURCES]


async def apply_rbac(kube: KubeClient, objects: Sequence[KubeObject]) -> str:
    """Create or replace the rendered RBAC objects; return the ServiceAccount name."""
    for obj in objects:
        await create_or_replace(kube, RBAC_RESOURCES[obj["kind"]], obj)
    (sa,) = [o for o in objects if o["kind"] == "ServiceAccount"]
    name: str = sa["metadata"]["name"]
    return name


async def service_account_kubeconfig(
    controlplane: ControlPlane,
    kube: KubeClient,
    namespace: str,
    directory: Path,
    *,
    chart: Path | None = None,
    release: str | None = None,
) -> Path:
    """Apply the chart's ServiceAccount and RBAC (release namespace `namespace`) and return a
    kubeconfig that authenticates as that ServiceAccount, to run the provider exactly as deployed."""
    if chart is None:
        chart = prepare_chart(directory / f"chart-{uuid.uuid4().hex[:6]}")
    release = release or f"pk-{namespace}"
    sa = await apply_rbac(kube, rendered_rbac(chart, namespace, release))
    token = await service_account_token(kube, namespace, sa)
    kubeconfig = controlplane.write_kubeconfig(directory / f"{release}.kubeconfig", token, user=sa)
    await _wait_in_force(kubeconfig, namespace)
    return kubeconfig


async def _wait_in_force(kubeconfig: Path, namespace: str) -> None:
    """The RBAC authorizer reads roles and bindings from an informer's cache: a token used the
    moment they are created can be refused until that cache has them (a 403 the RBAC tests then
    counted against the chart). Wait until every access the provider needs is allowed; a chart that
    does not grant one fails here, naming it."""
    async with await KubeClient.connect(str(kubeconfig)) as client:

        async def granted() -> bool | NotYet:
            checks = rbac.access_checks(namespace)
            denied = [str(c) for c in checks if not await allowed(client, c.resource_attributes())]
            return not denied or NotYet(denied)

        await wait_for(granted, what="the chart's RBAC in force for its ServiceAccount", timeout=60, interval=0.5)


async def allowed(client: KubeClient, attributes: dict[str, str]) -> bool:
    review = await client.create(
        SSAR,
        {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "metadata": {},
            "spec": {"resourceAttributes": attributes},
        },
    )
    return bool(review["status"].get("allowed"))
