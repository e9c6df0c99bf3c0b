"""The Helm chart on the real control plane: its RBAC grants exactly what the provider needs, and every
object it renders is accepted unchanged."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from actors.client import ApiError, KubeClient
from actors.interface import KubeObject, Resource
from plane import CRD, ControlPlane
from provider.model import rbac
from tests.support.chart import render
from tests.support.chart_rbac import (
    CLUSTER_ROLE,
    CLUSTER_ROLE_BINDING,
    RBAC_RESOURCES,
    ROLE,
    ROLE_BINDING,
    SERVICE_ACCOUNT,
    allowed,
    rendered_rbac,
    service_account_kubeconfig,
)

pytestmark = pytest.mark.integration


# -- the real control plane -------------------------------------------------------------------------


async def test_rbac_on_the_control_plane(
    controlplane: ControlPlane, kube: KubeClient, namespace: str, chart: Path, tmp_path: Path
) -> None:
    release = f"pk-{namespace}"
    objects = rendered_rbac(chart, namespace, release)
    kubeconfig = await service_account_kubeconfig(controlplane, kube, namespace, tmp_path, chart=chart, release=release)
    try:
        async with await KubeClient.connect(str(kubeconfig)) as client:
            denied = [
                str(c) for c in rbac.access_checks(namespace) if not await allowed(client, c.resource_attributes())
            ]
            assert denied == [], f"the chart's RBAC does not grant: {denied}"
            # Secrets are watched (label-selected) so a deleted `-conn` Secret is restored; they are
            # never updated, and never deleted in bulk (docs/security.md).
            must_not = [
                {"group": "", "resource": "secrets", "verb": "update"},
                {"group": "", "resource": "secrets", "verb": "deletecollection"},
                {"group": "", "resource": "secrets", "verb": "*"},
                {"group": "", "resource": "configmaps", "verb": "get"},
                # Pods are only listed and watched (status.components); the provider never manages them.
                {"group": "", "resource": "pods", "verb": "delete"},
                {"group": "", "resource": "pods", "verb": "get"},
                {"group": "", "resource": "events", "verb": "create"},
                {"group": "", "resource": "namespaces", "verb": "delete"},
                {"group": "core.openeverest.io", "resource": "instances", "verb": "create"},
                {"group": "core.openeverest.io", "resource": "instances", "verb": "delete"},
                {"group": "core.openeverest.io", "resource": "instances", "verb": "update"},
                {"group": "serving.kserve.io", "resource": "inferenceservices", "verb": "update"},
                {"group": "core.openeverest.io", "resource": "providers", "verb": "update"},
                {"group": "serving.kserve.io", "resource": "llminferenceservices", "verb": "*"},
                {"group": "serving.kserve.io", "resource": "servingruntimes", "verb": "create"},
                {"group": "coordination.k8s.io", "resource": "leases", "verb": "get", "namespace": "default"},
                {
                    "group": "coordination.k8s.io",
                    "resource": "leases",
                    "verb": "delete",
                    "namespace": namespace,
                },
                {"group": "rbac.authorization.k8s.io", "resource": "clusterroles", "verb": "escalate"},
                {"group": "*", "resource": "*", "verb": "*"},
            ]
            granted = [a for a in must_not if await allowed(client, a)]
            assert granted == [], f"the chart's RBAC grants more than the provider needs: {granted}"
            # And a real call: listing Instances works, listing ConfigMaps is forbidden.
            instances = Resource("core.openeverest.io", "v1alpha1", "instances", "Instance")
            await client.list(instances)
            with pytest.raises(ApiError) as forbidden:
                await client.list(Resource("", "v1", "configmaps", "ConfigMap"))
            assert forbidden.value.status == 403
    finally:
        for obj in objects:
            if not RBAC_RESOURCES[obj["kind"]].namespaced:
                await kube.delete(RBAC_RESOURCES[obj["kind"]], None, obj["metadata"]["name"])


def _served(crds: Sequence[KubeObject]) -> dict[tuple[str, str], Resource]:
    served: dict[tuple[str, str], Resource] = {}
    for crd in crds:
        spec = crd["spec"]
        for version in spec["versions"]:
            if version.get("served"):
                served[(f"{spec['group']}/{version['name']}", spec["names"]["kind"])] = Resource(
                    spec["group"],
                    version["name"],
                    spec["names"]["plural"],
                    spec["names"]["kind"],
                    spec["scope"] == "Namespaced",
                )
    return served


BUILTIN = {
    ("v1", "ServiceAccount"): SERVICE_ACCOUNT,
    ("v1", "Service"): Resource("", "v1", "services", "Service"),
    ("v1", "ConfigMap"): Resource("", "v1", "configmaps", "ConfigMap"),
    ("v1", "Secret"): Resource("", "v1", "secrets", "Secret"),
    ("networking.k8s.io/v1", "NetworkPolicy"): Resource("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy"),
    ("apps/v1", "Deployment"): Resource("apps", "v1", "deployments", "Deployment"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): CLUSTER_ROLE,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): CLUSTER_ROLE_BINDING,
    ("rbac.authorization.k8s.io/v1", "Role"): ROLE,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): ROLE_BINDING,
}


def _lost(sent: Any, stored: Any, path: str = "") -> list[str]:
    """Paths of `sent` that the API server dropped or changed (its schema defaults may add fields)."""
    if isinstance(sent, dict) and isinstance(stored, dict):
        return [p for key, value in sent.items() for p in _lost(value, stored.get(key, _MISSING), f"{path}.{key}")]
    if isinstance(sent, list) and isinstance(stored, list) and len(sent) == len(stored):
        return [p for i, (a, b) in enumerate(zip(sent, stored, strict=True)) for p in _lost(a, b, f"{path}[{i}]")]
    return [] if sent == stored else [path]


_MISSING = object()


async def test_rendered_objects_are_accepted_unchanged(kube: KubeClient, namespace: str, chart: Path) -> None:
    """Every object the chart renders (all toggles on) passes the real API server's validation in a
    server-side dry run (strict field validation), and nothing is pruned from the Provider CR or the
    KServe presets."""
    crds = (await kube.list(CRD))["items"]
    served = {**_served(crds), **BUILTIN}
    docs = render(
        chart,
        "aiGateway.enabled=true",
        "aiGateway.tls.enabled=true",
        "aiGateway.tls.hostname=llm.example.com",
        "aiGateway.tls.selfSigned=true",
        "metrics.grafanaDashboards.enabled=true",
        release=f"pk-{namespace}",
        namespace=namespace,
        api_versions=["monitoring.coreos.com/v1/PodMonitor"],
    )
    unserved = []
    for doc in docs:
        res = served.get((doc["apiVersion"], doc["kind"]))
        if res is None:
            unserved.append(doc["kind"])
            continue
        stored = await kube.request(
            "POST",
            res.path(doc["metadata"].get("namespace") if res.namespaced else None),
            query={"dryRun": "All", "fieldValidation": "Strict"},
            body=doc,
            resource=str(res),
        )
        if doc["kind"] in ("Provider", "LLMInferenceServiceConfig"):
            lost = _lost(doc["spec"], stored["spec"])
            assert lost == [], f"{doc['kind']} {doc['metadata']['name']}: pruned or changed {lost}"
    # Envoy Gateway's EnvoyProxy CRD is not among the shared CRDs.
    assert sorted(set(unserved)) == ["EnvoyProxy"]
