"""The chart's RBAC is exactly what the provider uses (issue 14, item 8).

The provider runs with the chart's environment and only the chart's RBAC (a token of its
ServiceAccount), against KServe's real controllers, through everything it does: leader election,
every derived kind created, pruned and deleted, the connection Secrets, NodePort addresses, the
AI Gateway, Pod Security levels, `doctor`, and a protected /metrics scrape. Every request is
recorded and turned into the RBAC verbs it needed (a server-side apply that creates needs `create`
as well as `patch`); the set must equal what the rules grant, with no 403 on the way. The one
grant no request uses is `update` on `instances/finalizers`, which the
OwnerReferencesPermissionEnforcement admission plugin checks when an object names its owner with
blockOwnerDeletion.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from actors.client import KubeClient
from actors.client.known_resources import INSTANCES, PROVIDERS, SECRETS
from actors.interface import KubeObject
from actors.serve.endpoints import Endpoints
from plane import create_or_replace, free_port
from provider.doctor.cluster_checks import diagnose
from provider.kserve import build_provider
from provider.model import kinds as llm_kinds, rbac
from provider.model.kinds import INFERENCE_SERVICE
from tests.support.chart import ROOT, container, one, render
from tests.support.chart_rbac import RBAC_RESOURCES, rendered_rbac, service_account_kubeconfig
from tests.support.events import events_about
from tests.support.http import fetch
from tests.support.kserve import KServeCluster
from tests.support.runtime import running_manager
from tests.support.waiting import NotYet, wait_for

pytestmark = pytest.mark.integration

# Granted for an admission plugin, not for a request the provider makes (see the module doc).
ADMISSION_ONLY = {("core.openeverest.io", "instances", "finalizers", "update")}
Used = tuple[str, str, str, str]  # group, resource, subresource, verb


def deployment_env(docs: Sequence[KubeObject], namespace: str) -> dict[str, str]:
    """The provider's environment as the rendered Deployment sets it (fieldRefs resolved)."""
    out: dict[str, str] = {}
    for entry in container(docs)["env"]:
        if "value" in entry:
            out[entry["name"]] = str(entry["value"])
        elif entry.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "metadata.namespace":
            out[entry["name"]] = namespace
    return out


def example(name: str, namespace: str, **topology_parameters: Any) -> KubeObject:
    (doc,) = [d for d in yaml.safe_load_all((ROOT / "examples" / name).read_text()) if d]
    doc["metadata"]["namespace"] = namespace
    if topology_parameters:
        doc["spec"]["topology"].setdefault("parameters", {}).update(topology_parameters)
    assert isinstance(doc, dict)
    return doc


def rbac_verbs(verb: str, label: str, code: int) -> Iterable[Used]:
    """What one recorded request needed: `label` is `plural.group/version[/subresource]`."""
    if label in ("discovery", "version"):
        return []
    head, _, rest = label.partition("/")
    plural, _, group = head.partition(".")
    group = "" if group == "core" else group
    subresource = rest.partition("/")[2]
    needed = {"dryrun": "patch"}.get(verb, verb)
    out = [(group, plural, subresource, needed)]
    if needed == "patch" and code == 201:  # an apply that created the object
        out.append((group, plural, subresource, "create"))
    return out


async def test_every_granted_verb_is_used_and_nothing_else(
    kserve: KServeCluster, kserve_namespace: str, chart: Path, tmp_path: Path
) -> None:
    controlplane, kube, namespace = kserve.plane, kserve.kube, kserve_namespace
    # The Secret huggingface.tokenSecretName names, as users create it: KServe reads it for the pods.
    token = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "hf-token", "namespace": namespace},
             "stringData": {"HF_TOKEN": "hf_test"}}  # fmt: skip
    await kube.create(SECRETS, token)
    release = f"pk-{namespace}"
    docs = render(
        chart,
        "huggingface.tokenSecretName=hf-token",
        "aiGateway.enabled=true",
        "aiGateway.rateLimitRedisURL=redis:6379",
        release=release,
        namespace=namespace,
    )
    provider_cr = one(docs, "Provider")
    existing_provider = await kube.get(PROVIDERS, None, provider_cr["metadata"]["name"])
    await create_or_replace(kube, PROVIDERS, provider_cr)
    kubeconfig = await service_account_kubeconfig(controlplane, kube, namespace, tmp_path, chart=chart, release=release)
    responses: list[tuple[str, str, int]] = []
    client = await KubeClient.connect(str(kubeconfig))
    client.observe(lambda verb, resource, code, seconds: responses.append((verb, resource, code)))
    provider, shared = build_provider(deployment_env(docs, namespace), client)
    metrics = free_port()
    endpoints = Endpoints(
        bind_host="127.0.0.1", metrics_port=metrics, health_port=None, validation_port=None, metrics_auth=True
    )

    llm = example("instance-llm-cpu.yaml", namespace, externalAccess="NodePort")
    gateway = example("instance-llm.yaml", namespace, externalAccess="EnvoyAIGateway", tokenLimitPerHour=5000)
    gateway["metadata"]["name"] = "via-gateway"
    predictor = example("instance-predictor.yaml", namespace)
    instances = (llm, gateway, predictor)
    try:
        async with running_manager(
            controlplane,
            provider,
            namespace,
            shared=shared,
            client=client,
            endpoints=endpoints,
            leader_elect=True,
            lease_namespace=namespace,
            lease_name="provider-kserve-leader",
        ):
            for body in instances:
                await kube.create(INSTANCES, body)
            await wait_for(lambda: _derived(kube, namespace, llm, predictor), timeout=90)
            # KServe runs both workloads: Ready, so the provider writes the connection Secrets.
            await wait_for(lambda: _connected(kube, namespace, (llm, predictor)), timeout=180)
            # A change that prunes: NodePort → ClusterIP drops the `-external` Service.
            name = llm["metadata"]["name"]
            await kube.patch(
                INSTANCES, namespace, name, {"spec": {"topology": {"parameters": {"externalAccess": "ClusterIP"}}}}
            )
            await wait_for(lambda: _absent(kube, llm_kinds.SERVICE, namespace, f"{name}-external"), timeout=60)
            # A hand edit taken back twice: the second take-back's Event continues the first's
            # series (a patch of that Event), which nothing else here is sure to repeat.
            for hand in (3, 4):
                edit = {"spec": {"replicas": hand}}
                await kube.patch(llm_kinds.LLM_INFERENCE_SERVICE, namespace, name, edit, field_manager="kubectl-edit")
                await wait_for(lambda: _replicas(kube, namespace, name, 1), timeout=60)
            await wait_for(lambda: _series_of(kube, namespace, name, "FieldTakenBack"), timeout=60)
            # /metrics with a token: a TokenReview and a SubjectAccessReview, under the chart's RBAC.
            assert (await fetch(f"https://127.0.0.1:{metrics}/metrics", controlplane.admin_token, insecure=True))[
                0
            ] == 200
            rows = await diagnose(client, owned=provider.owned_resources(), own_namespace=namespace)
            assert rows and all(not row.failed for row in rows), [r for r in rows if r.failed]
            for body in instances:
                await kube.delete(INSTANCES, namespace, body["metadata"]["name"])
            await wait_for(lambda: _all_gone(kube, namespace, instances), timeout=90)
    finally:
        await _clean_up(kube, namespace, instances, chart, release, provider_cr, existing_provider)
    forbidden = sorted({(verb, resource) for verb, resource, code in responses if code == 403})
    assert forbidden == [], f"403 under the chart's RBAC: {forbidden}"
    used = {need for verb, label, code in responses for need in rbac_verbs(verb, label, code)}
    granted = {(c.group, c.resource, c.subresource, c.verb) for c in rbac.access_checks(namespace)}
    assert used - granted == set(), "used but not granted"
    assert granted - used == ADMISSION_ONLY, "granted but never used"


async def _derived(kube: KubeClient, namespace: str, llm: KubeObject, predictor: KubeObject) -> bool:
    name = llm["metadata"]["name"]
    wanted = [
        (llm_kinds.LLM_INFERENCE_SERVICE, name),
        (llm_kinds.LLM_INFERENCE_SERVICE_CONFIG, f"{name}-config"),
        (llm_kinds.SERVICE_ACCOUNT, f"{name}-model-puller"),
        (llm_kinds.POD_MONITOR, f"{name}-metrics"),
        (llm_kinds.SERVICE, f"{name}-external"),
        (llm_kinds.AI_GATEWAY_ROUTE, "via-gateway-ai-gateway"),
        (llm_kinds.BACKEND_TRAFFIC_POLICY, "via-gateway-token-limit"),
        (INFERENCE_SERVICE, predictor["metadata"]["name"]),
    ]
    return all([await kube.get(res, namespace, n) for res, n in wanted])


async def _connected(kube: KubeClient, namespace: str, bodies: Iterable[KubeObject]) -> bool:
    for body in bodies:
        status = ((await kube.get(INSTANCES, namespace, body["metadata"]["name"])) or {}).get("status") or {}
        if status.get("phase") != "Ready" or not status.get("connectionSecretRef"):
            return False
    return True


async def _replicas(kube: KubeClient, namespace: str, name: str, replicas: int) -> bool | NotYet:
    llmisvc = await kube.get(llm_kinds.LLM_INFERENCE_SERVICE, namespace, name) or {}
    seen = (llmisvc.get("spec") or {}).get("replicas")
    return seen == replicas or NotYet(f"replicas {seen}")


async def _series_of(kube: KubeClient, namespace: str, name: str, reason: str) -> bool | NotYet:
    events = await events_about(kube, namespace, name)
    counts = [(e.get("series") or {}).get("count", 1) for e in events if e["reason"] == reason]
    return max(counts, default=0) >= 2 or NotYet(f"{reason} Events of {name}: counts {counts}")


async def _absent(kube: KubeClient, resource: Any, namespace: str, name: str) -> bool:
    return await kube.get(resource, namespace, name) is None


async def _all_gone(kube: KubeClient, namespace: str, bodies: Iterable[KubeObject]) -> bool:
    return not [b for b in bodies if await kube.get(INSTANCES, namespace, b["metadata"]["name"])]


async def _clean_up(
    kube: KubeClient,
    namespace: str,
    bodies: Iterable[KubeObject],
    chart: Path,
    release: str,
    provider_cr: KubeObject,
    existing_provider: KubeObject | None,
) -> None:
    for body in bodies:
        got = await kube.get(INSTANCES, namespace, body["metadata"]["name"])
        if got and got["metadata"].get("finalizers"):
            await kube.patch(INSTANCES, namespace, body["metadata"]["name"], {"metadata": {"finalizers": None}})
    if existing_provider is None:
        await kube.delete(PROVIDERS, None, provider_cr["metadata"]["name"])
    for obj in rendered_rbac(chart, namespace, release):
        if not RBAC_RESOURCES[obj["kind"]].namespaced:
            await kube.delete(RBAC_RESOURCES[obj["kind"]], None, obj["metadata"]["name"])
