"""`provider-kserve doctor` against the real control plane, under different identities.

- admin: every check ok, exit 0;
- a ServiceAccount with no permissions: every permission missing (except the SelfSubjectAccessReview
  every user may create), the CRDs still found through discovery, exit 1;
- a ServiceAccount bound to exactly the chart's rules (`provider.model.rbac.policy_rules`, which the
  chart's ClusterRole and Role are generated from): every check ok, so the chart's RBAC is enough
  and doctor checks nothing the chart does not grant;
- the same rules granted in one namespace only, or with one rule left out: exactly those checks
  missing;
- an API server that does not answer: one failed row, exit 1.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml

from actors.client import KubeClient
from actors.interface import KubeObject, Resource
from plane import free_port, service_account_token
from provider.doctor.cluster_checks import Row, Status, diagnose, exit_code
from provider.model.rbac import RULES, policy_rules
from tests.support.convergence import OWNED
from tests.support.provider_process import PROVIDER_BIN
from tests.support.waiting import wait_for

pytestmark = pytest.mark.integration

RBAC = "rbac.authorization.k8s.io"
CLUSTER_ROLES = Resource(RBAC, "v1", "clusterroles", "ClusterRole", namespaced=False)
CLUSTER_ROLE_BINDINGS = Resource(RBAC, "v1", "clusterrolebindings", "ClusterRoleBinding", namespaced=False)
ROLES = Resource(RBAC, "v1", "roles", "Role")
ROLE_BINDINGS = Resource(RBAC, "v1", "rolebindings", "RoleBinding")


async def doctor_cli(*args: str) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        str(PROVIDER_BIN), "doctor", *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    out, _ = await process.communicate()
    return process.returncode or 0, out.decode()


def table_rows(output: str) -> list[list[str]]:
    lines = output.splitlines()
    return [line.split(maxsplit=4) for line in lines[1 : lines.index("")]]


async def identity(controlplane: Any, kube: KubeClient, namespace: str, name: str, tmp_path: Path) -> Path:
    """A kubeconfig for ServiceAccount namespace/name (created, with no permissions yet)."""
    token = await service_account_token(kube, namespace, name)
    path: Path = controlplane.write_kubeconfig(tmp_path / f"{name}.kubeconfig", token, user=name)
    return path


def subject(namespace: str, name: str) -> list[dict[str, str]]:
    return [{"kind": "ServiceAccount", "name": name, "namespace": namespace}]


async def grant_cluster(
    kube: KubeClient, name: str, rules: list[dict[str, Any]], subjects: list[dict[str, str]]
) -> None:
    await kube.create(
        CLUSTER_ROLES, {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole", "metadata": {"name": name}, "rules": rules}
    )
    await kube.create(
        CLUSTER_ROLE_BINDINGS,
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": name},
            "subjects": subjects,
        },
    )


async def grant_namespace(
    kube: KubeClient, namespace: str, name: str, role: KubeObject, subjects: list[dict[str, str]]
) -> None:
    """Bind `role` ({"kind": "Role"|"ClusterRole", "name": ...}) in `namespace` only."""
    await kube.create(
        ROLE_BINDINGS,
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "RoleBinding",
            "metadata": {"name": name, "namespace": namespace},
            "roleRef": {"apiGroup": RBAC, **role},
            "subjects": subjects,
        },
    )


async def revoke_cluster(kube: KubeClient, name: str) -> None:
    await kube.delete(CLUSTER_ROLE_BINDINGS, None, name)
    await kube.delete(CLUSTER_ROLES, None, name)


async def doctor_as(kubeconfig: Path, namespaces: tuple[str, ...] = (), lease_namespace: str = "default") -> list[Row]:
    async with await KubeClient.connect(str(kubeconfig)) as client:
        return await diagnose(client, owned=OWNED, own_namespace=lease_namespace, namespaces=namespaces)


async def test_admin_passes_every_check(controlplane: Any) -> None:
    code, output = await doctor_cli("--kubeconfig", str(controlplane.kubeconfig))
    rows = table_rows(output)
    assert code == 0, output
    assert {row[1] for row in rows} <= {"ok", "present"}
    assert sum(1 for row in rows if row[0] == "permission") == sum(
        len(rule.resources) * len(rule.verbs) for rule in RULES
    )
    assert output.rstrip().splitlines()[-1].startswith("all ") and "required checks ok" in output


async def test_service_account_without_permissions_misses_every_permission(
    controlplane: Any, kube: KubeClient, namespace: str, tmp_path: Path
) -> None:
    kubeconfig = await identity(controlplane, kube, namespace, "nobody", tmp_path)
    code, output = await doctor_cli("--kubeconfig", str(kubeconfig))
    assert code == 1, output
    rows = table_rows(output)
    crds = {row[3]: row[1] for row in rows if row[0] == "crd"}
    assert crds == {"instances.core.openeverest.io/v1alpha1": "ok", "providers.core.openeverest.io/v1alpha1": "ok"}
    permissions = {(row[2], row[3]): row[1] for row in rows if row[0] == "permission"}
    granted = {k for k, status in permissions.items() if status == "ok"}
    assert granted == {("create", "selfsubjectaccessreviews.authorization.k8s.io")}  # every user may
    assert permissions[("watch", "instances.core.openeverest.io")] == "missing"
    assert permissions[("update", "instances/status.core.openeverest.io")] == "missing"
    missing = next(row for row in rows if row[2:4] == ["create", "llminferenceservices.serving.kserve.io"])
    assert "all namespaces" in missing[4] and "LLMInferenceService" in missing[4]


async def test_the_charts_rules_are_exactly_enough(
    controlplane: Any, kube: KubeClient, namespace: str, tmp_path: Path
) -> None:
    kubeconfig = await identity(controlplane, kube, namespace, "provider", tmp_path)
    role = f"doctor-{namespace}"
    await grant_cluster(kube, role, policy_rules("cluster"), subject(namespace, "provider"))
    await kube.create(
        ROLES,
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "Role",
            "metadata": {"name": "lease", "namespace": namespace},
            "rules": policy_rules("namespace"),
        },
    )
    await grant_namespace(kube, namespace, "lease", {"kind": "Role", "name": "lease"}, subject(namespace, "provider"))
    try:

        async def all_granted() -> list[Row] | None:
            rows = await doctor_as(kubeconfig, lease_namespace=namespace)
            return rows if exit_code(rows) == 0 else None

        rows = await wait_for(all_granted)  # RBAC reaches the authorizer's cache within moments
        assert all(row.status in (Status.OK, Status.PRESENT) for row in rows), [r for r in rows if r.failed]

        # The same cluster rules without one: exactly its verbs go missing.
        await revoke_cluster(kube, role)
        dropped = next(rule for rule in RULES if "podmonitors" in rule.resources)
        kept = [rule.policy_rule() for rule in RULES if rule.scope == "cluster" and rule is not dropped]
        await grant_cluster(kube, role, kept, subject(namespace, "provider"))

        async def one_rule_short() -> list[Row] | None:
            rows = await doctor_as(kubeconfig, lease_namespace=namespace)
            return rows if {r.resource for r in rows if r.failed} == {"podmonitors.monitoring.coreos.com"} else None

        rows = await wait_for(one_rule_short)
        assert sorted(r.verb for r in rows if r.failed) == sorted(dropped.verbs)
    finally:
        await revoke_cluster(kube, role)


async def test_rules_granted_in_one_namespace_cover_that_namespace_only(
    controlplane: Any, kube: KubeClient, namespace: str, tmp_path: Path
) -> None:
    kubeconfig = await identity(controlplane, kube, namespace, "scoped", tmp_path)
    role = f"doctor-scoped-{namespace}"
    await kube.create(
        CLUSTER_ROLES,
        {
            "apiVersion": f"{RBAC}/v1",
            "kind": "ClusterRole",
            "metadata": {"name": role},
            "rules": policy_rules("cluster") + policy_rules("namespace"),
        },
    )
    await grant_namespace(
        kube, namespace, "scoped", {"kind": "ClusterRole", "name": role}, subject(namespace, "scoped")
    )
    try:

        async def namespaced_granted() -> list[Row] | None:
            rows = await doctor_as(kubeconfig, (namespace,), lease_namespace=namespace)
            return rows if not any(r.failed for r in rows if "namespace " in r.detail) else None

        rows = await wait_for(namespaced_granted)
        failed = {r.resource for r in rows if r.failed}
        # A RoleBinding cannot grant cluster-scoped resources, and doctor says so.
        assert failed == {
            "providers.core.openeverest.io",
            "nodes",
            "namespaces",
            "customresourcedefinitions.apiextensions.k8s.io",
            "tokenreviews.authentication.k8s.io",
            "subjectaccessreviews.authorization.k8s.io",
        }
        assert all(r.detail.startswith("cluster-scoped") for r in rows if r.failed)
        assert exit_code(rows) == 1
        # Without --namespace the provider would watch everywhere, where it may do nothing.
        everywhere = await doctor_as(kubeconfig, lease_namespace=namespace)
        assert any(r.failed and r.resource == "instances.core.openeverest.io" for r in everywhere)
    finally:
        await kube.delete(CLUSTER_ROLES, None, role)


async def test_unreachable_api_server_is_one_failed_row(controlplane: Any, tmp_path: Path) -> None:
    kubeconfig = controlplane.write_kubeconfig(tmp_path / "nowhere.kubeconfig", controlplane.admin_token)
    config = yaml.safe_load(kubeconfig.read_text())
    config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{free_port()}"
    kubeconfig.write_text(yaml.safe_dump(config))
    code, output = await doctor_cli("--kubeconfig", str(kubeconfig))
    assert code == 1
    (row,) = table_rows(output)
    assert row[:2] == ["api-server", "error"] and "unreachable" in row[4]
