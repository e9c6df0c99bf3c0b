"""The local control plane itself: CRDs installed and served, objects round-trip, the garbage
collector runs, and an apiserver restart keeps the data."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from actors.client import ApiError, KubeClient
from actors.client.known_resources import INSTANCES
from actors.interface import KubeObject, Resource
from plane import (
    CRD,
    NAMESPACE,
    ControlPlane,
    create_or_replace,
    delete_crd,
    kept_identity,
    load_crds,
    service_account_token,
    wait_established,
    wait_served,
)
from provider.model import kinds
from tests.support.null_provider import CONFIGMAPS
from tests.support.waiting import NotYet, wait_for

pytestmark = pytest.mark.integration

LLM_ISVCS = kinds.LLM_INFERENCE_SERVICE
LLM_ISVC_CONFIGS = kinds.LLM_INFERENCE_SERVICE_CONFIG

# Spelled out so that a CRD silently dropped from the install (or from shared/crds) fails here.
EXPECTED_CRDS = sorted(
    [
        "backupclasses.backup.openeverest.io",
        "backups.backup.openeverest.io",
        "backupstorages.backup.openeverest.io",
        "restores.backup.openeverest.io",
        "instancepresets.core.openeverest.io",
        "instances.core.openeverest.io",
        "namespacedefaults.core.openeverest.io",
        "providers.core.openeverest.io",
        "installedextensions.extensions.openeverest.io",
        "plugins.extensions.openeverest.io",
        "monitoringconfigs.monitoring.openeverest.io",
        "clusterservingruntimes.serving.kserve.io",
        "clusterstoragecontainers.serving.kserve.io",
        "inferencegraphs.serving.kserve.io",
        "inferenceservices.serving.kserve.io",
        "llminferenceserviceconfigs.serving.kserve.io",
        "llminferenceservices.serving.kserve.io",
        "servingruntimes.serving.kserve.io",
        "trainedmodels.serving.kserve.io",
        "aigatewayroutes.aigateway.envoyproxy.io",
        "aiservicebackends.aigateway.envoyproxy.io",
        "backendsecuritypolicies.aigateway.envoyproxy.io",
        "backendtrafficpolicies.gateway.envoyproxy.io",
        "gatewayclasses.gateway.networking.k8s.io",
        "gateways.gateway.networking.k8s.io",
        "httproutes.gateway.networking.k8s.io",
        "referencegrants.gateway.networking.k8s.io",
        "inferencepools.inference.networking.k8s.io",
        "inferencepools.inference.networking.x-k8s.io",
        "podmonitors.monitoring.coreos.com",
        "servicemonitors.monitoring.coreos.com",
        "certificates.cert-manager.io",
        "clusterissuers.cert-manager.io",
        "issuers.cert-manager.io",
    ]
)


def _condition(obj: KubeObject, kind: str) -> str | None:
    for cond in (obj.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            return str(cond.get("status"))
    return None


async def test_every_installed_crd_is_established(controlplane: ControlPlane, kube: KubeClient) -> None:
    assert sorted(c["metadata"]["name"] for c in load_crds()) == EXPECTED_CRDS
    items, _ = await kube.list_all(CRD)
    established = sorted(c["metadata"]["name"] for c in items if _condition(c, "Established") == "True")
    assert [n for n in EXPECTED_CRDS if n not in established] == []
    # No conversion webhook runs here, so none may be configured.
    by_name = {c["metadata"]["name"]: c for c in items}
    assert {n: by_name[n]["spec"]["conversion"]["strategy"] for n in EXPECTED_CRDS} == dict.fromkeys(
        EXPECTED_CRDS, "None"
    )
    labels = by_name["certificates.cert-manager.io"]["metadata"]["labels"]
    assert labels["app.kubernetes.io/instance"] == "cert-manager"


async def test_instance_and_llminferenceservice_round_trip(kube: KubeClient, namespace: str) -> None:
    instance_spec: dict[str, Any] = {
        "providerRef": {"name": "provider-kserve"},
        "topology": {"type": "llm", "parameters": {"replicas": 1}},
    }
    llm_spec: dict[str, Any] = {
        "model": {"uri": "hf://Qwen/Qwen2.5-0.5B-Instruct", "name": "Qwen/Qwen2.5-0.5B-Instruct"},
        "replicas": 1,
    }
    await kube.create(
        INSTANCES,
        {
            "apiVersion": INSTANCES.api_version,
            "kind": INSTANCES.kind,
            "metadata": {"name": "chat", "namespace": namespace},
            "spec": copy.deepcopy(instance_spec),
        },
    )
    await kube.create(
        LLM_ISVCS,
        {
            "apiVersion": LLM_ISVCS.api_version,
            "kind": LLM_ISVCS.kind,
            "metadata": {"name": "chat", "namespace": namespace},
            "spec": copy.deepcopy(llm_spec),
        },
    )
    instance = await kube.get(INSTANCES, namespace, "chat")
    llm = await kube.get(LLM_ISVCS, namespace, "chat")
    assert instance is not None and llm is not None
    # Everything we sent comes back unchanged; the only addition is the CRD's schema default.
    assert instance["spec"] == {**instance_spec, "deletionPolicy": "Cascade"}
    assert llm["spec"] == llm_spec


async def _owner_deletion_collects_its_dependent(kube: KubeClient, namespace: str, timeout: float = 60) -> None:
    owner = await kube.create(CONFIGMAPS, {"metadata": {"name": "owner", "namespace": namespace}})
    ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "owner",
        "uid": owner["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    await kube.create(CONFIGMAPS, {"metadata": {"name": "dependent", "namespace": namespace, "ownerReferences": [ref]}})
    assert await kube.delete(CONFIGMAPS, namespace, "owner", propagation="Background")

    async def collected() -> bool:
        return await kube.get(CONFIGMAPS, namespace, "dependent") is None

    await wait_for(collected, timeout=timeout, what="the dependent collected")


async def test_garbage_collector_deletes_dependents(kube: KubeClient, namespace: str) -> None:
    await _owner_deletion_collects_its_dependent(kube, namespace)


def _garbage_collector_starts(controlplane: ControlPlane) -> int:
    log = (controlplane.workdir / "kube-controller-manager.log").read_text()
    return log.count('"Started controller" controller="garbage-collector-controller"')


async def test_apiserver_restart_keeps_data(controlplane: ControlPlane, kube: KubeClient, namespace: str) -> None:
    await kube.create(CONFIGMAPS, {"metadata": {"name": "survivor", "namespace": namespace}, "data": {"k": "v"}})
    starts = _garbage_collector_starts(controlplane)
    port = controlplane.apiserver_port
    controlplane.stop_apiserver()
    with pytest.raises(Exception):  # noqa: B017 - whatever a refused connection raises
        await kube.get(CONFIGMAPS, namespace, "survivor")
    controlplane.start_apiserver()
    assert controlplane.apiserver_port == port
    stored = await kube.get(CONFIGMAPS, namespace, "survivor")
    assert stored is not None
    assert stored["data"] == {"k": "v"}
    # The controller manager was restarted with it (instead of sitting out its informers' backoff)
    # and collects garbage. Its /healthz answers before it logs the controllers it started.

    async def restarted() -> bool | NotYet:
        seen = _garbage_collector_starts(controlplane)
        return seen == starts + 1 or NotYet(f"garbage collector started {seen - starts} times since")

    # A process started afresh, which syncs an informer per served resource (dozens of CRDs)
    # before it starts its controllers: slow on a busy 2-core machine.
    await wait_for(restarted, timeout=120, what="kube-controller-manager restarted")
    # Its garbage collector builds its graph from those informers before it collects anything.
    await _owner_deletion_collects_its_dependent(kube, namespace, timeout=120)


async def test_llm_presets_install_into_a_namespace(controlplane: ControlPlane, namespace: str) -> None:
    names = await controlplane.install_llm_presets(namespace)
    assert "kserve-config-llm-template" in names
    async with controlplane.client() as client:
        items, _ = await client.list_all(LLM_ISVC_CONFIGS, namespace)
    assert sorted(i["metadata"]["name"] for i in items) == names


async def test_service_account_token_is_subject_to_rbac(
    controlplane: ControlPlane, kube: KubeClient, namespace: str, tmp_path: Path
) -> None:
    token = await service_account_token(kube, namespace, "limited")
    kubeconfig = controlplane.write_kubeconfig(tmp_path / "limited.kubeconfig", token, user="limited")
    async with await KubeClient.connect(str(kubeconfig)) as limited:
        with pytest.raises(ApiError) as denied:
            await limited.list(CONFIGMAPS, namespace)
        assert denied.value.status == 403
        rbac = "rbac.authorization.k8s.io"
        await kube.create(
            Resource(rbac, "v1", "roles", "Role"),
            {
                "metadata": {"name": "read-cm", "namespace": namespace},
                "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}],
            },
        )
        await kube.create(
            Resource(rbac, "v1", "rolebindings", "RoleBinding"),
            {
                "metadata": {"name": "read-cm", "namespace": namespace},
                "roleRef": {"apiGroup": rbac, "kind": "Role", "name": "read-cm"},
                "subjects": [{"kind": "ServiceAccount", "name": "limited", "namespace": namespace}],
            },
        )

        async def allowed() -> bool | NotYet:
            try:
                await limited.list(CONFIGMAPS, namespace)
            except ApiError as err:
                assert err.status == 403
                return NotYet(err)
            return True

        # The RBAC authorizer reads bindings from an informer: a moment after the write, longer on
        # a busy machine.
        await wait_for(allowed, what="the RoleBinding in force", timeout=60)


async def test_install_and_delete_a_crd(kube: KubeClient) -> None:
    crd: KubeObject = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.test.provider-kserve.invalid"},
        "spec": {
            "group": "test.provider-kserve.invalid",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                }
            ],
        },
    }
    await create_or_replace(kube, CRD, crd)
    await wait_established(kube, [crd["metadata"]["name"]])
    await wait_served(kube, [crd])
    assert await kube.discover("test.provider-kserve.invalid/v1") == {"widgets"}
    assert await delete_crd(kube, crd["metadata"]["name"])
    assert await kube.get(CRD, None, crd["metadata"]["name"]) is None


async def test_kept_identity_serves_one_kubeconfig_across_starts(tmp_path: Path) -> None:
    """The kubeconfig of a kept identity, made before anything runs, is valid for each control
    plane started from it: how Tilt, which reads its kubeconfig once, reaches the node-mode cluster
    it starts itself (dev/cluster/background.py)."""
    identity = tmp_path / "identity"
    kubeconfig = kept_identity(identity, "127.0.0.1").kubeconfig
    made = kubeconfig.read_text()
    for _ in range(2):
        plane = ControlPlane(controller_manager=False, identity_dir=identity)
        plane.start()
        try:
            async with await KubeClient.connect(str(kubeconfig)) as kube:
                assert await kube.get(NAMESPACE, None, "default") is not None
        finally:
            plane.stop()
    assert kubeconfig.read_text() == made
