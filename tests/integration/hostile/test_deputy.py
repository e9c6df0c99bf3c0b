"""Issue 14, confused deputy: the provider never does for a tenant what the tenant could not.

4. a Secret `<instance>-conn` it never created is neither written over nor deleted;
5. a Service that happens to carry a derived name is not adopted, forced or deleted;
6. pod settings passed through the inline config are held to the namespace's Pod Security level;
7. /metrics and /validate need a token allowed to use them (TokenReview + SubjectAccessReview).
(8, RBAC that grants exactly what is used, is chart/test_rbac_used.py.)
"""

from __future__ import annotations

import gzip
from typing import Any

import aiohttp
import anyio
import pytest

from actors.client import KubeClient
from actors.client.known_resources import INSTANCES, SECRETS
from actors.serve.endpoints import Endpoints
from plane import NAMESPACE, free_port, service_account_token
from provider.kserve import build_provider
from provider.model.kinds import LLM_INFERENCE_SERVICE, SERVICE
from tests.support.convergence import condition, kserve_provider, wait_converged
from tests.support.http import fetch, http_get
from tests.support.instance_status import secret_text
from tests.support.instances import llm_instance
from tests.support.kserve import KServeCluster
from tests.support.runtime import record_requests, running_manager
from tests.support.waiting import wait_for

pytestmark = pytest.mark.integration


async def status_of(kube: KubeClient, namespace: str, name: str) -> dict[str, Any]:
    instance = await kube.get(INSTANCES, namespace, name) or {}
    return instance.get("status") or {}


async def test_a_foreign_conn_secret_is_never_written_or_deleted(kserve: KServeCluster, kserve_namespace: str) -> None:
    kube, namespace = kserve.kube, kserve_namespace
    foreign = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "postgres-conn", "namespace": namespace},
        "stringData": {"password": "the database's own"},
    }
    created = await kube.create(SECRETS, foreign)
    async with running_manager(kserve.plane, kserve_provider(), namespace):
        await kube.create(INSTANCES, llm_instance("postgres", namespace, on_cluster=True))
        # KServe serves it, so the provider has connection details to write.

        async def clash_reported() -> dict[str, Any] | None:
            status = await status_of(kube, namespace, "postgres")
            cond = condition({"status": status}, "ConnectionDetailsReady")
            return cond if cond and cond["reason"] == "NameClash" else None

        cond = await wait_for(clash_reported, timeout=180)
        assert cond["status"] == "False"
        assert cond["message"].startswith(f"Secret {namespace}/postgres-conn already exists and was not created")
        assert "connectionSecretRef" not in await status_of(kube, namespace, "postgres")
        await kube.delete(INSTANCES, namespace, "postgres")
        # KServe's controllers run here: the LLMInferenceService goes once KServe's own finalizer
        # has cleaned up after it, which takes them a while on a busy machine.
        await wait_for(lambda: _gone(kube, namespace, "postgres"), timeout=120, what="postgres deleted")
    secret = await kube.get(SECRETS, namespace, "postgres-conn")
    assert secret is not None
    assert secret["metadata"]["uid"] == created["metadata"]["uid"]
    assert secret["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert secret_text(secret, "password") == "the database's own"


async def test_a_service_with_a_derived_name_is_not_adopted(
    controlplane: Any, kube: KubeClient, namespace: str
) -> None:
    # What `kubectl create service clusterip web-external --tcp=80` writes (as manager kubectl-create).
    mine = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "web-external", "namespace": namespace, "labels": {"app": "web"}},
        "spec": {"type": "ClusterIP", "selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 80}]},
    }
    created = await kube.request(
        "POST", SERVICE.path(namespace), query={"fieldManager": "kubectl-create"}, body=mine, resource="services"
    )
    async with running_manager(controlplane, kserve_provider(), namespace) as (manager, _):
        requests = record_requests(manager)
        await kube.create(
            INSTANCES, llm_instance("web", namespace, on_cluster=True, topology={"externalAccess": "LoadBalancer"})
        )

        async def clash() -> dict[str, Any] | None:
            status = await status_of(kube, namespace, "web")
            return status if status.get("phase") == "Failed" else None

        status = await wait_for(clash)
        assert status["message"] == (
            f"Service {namespace}/web-external already exists and was not created for this Instance; the provider "
            "does not adopt or change objects it did not create: delete or rename it, or rename the Instance"
        )
        assert condition({"status": status}, "Synced")["reason"] == "NameClash"  # type: ignore[index]
        # Everything else of the Instance is there; the Service is exactly as it was.
        assert await kube.get(LLM_INFERENCE_SERVICE, namespace, "web") is not None
        await kube.delete(INSTANCES, namespace, "web")
        await wait_for(lambda: _gone(kube, namespace, "web"))
    service = await kube.get(SERVICE, namespace, "web-external")
    assert service is not None
    assert service["metadata"]["uid"] == created["metadata"]["uid"]
    assert service["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    assert service["spec"]["type"] == "ClusterIP" and "ownerReferences" not in service["metadata"]
    # The provider read the Service (that is how it found the clash), and never wrote to it: no
    # apply, dry run, update or delete, through the clash or the Instance's deletion.
    services = [(verb, code) for verb, resource, code in requests if resource == str(SERVICE)]
    assert ("get", 200) in services, requests
    assert [verb for verb, _ in services if verb not in ("get", "list", "watch")] == [], services


PRIVILEGED_CONFIG = (
    "template:\n"
    "  hostPID: true\n"
    "  containers:\n"
    "  - name: main\n"
    "    securityContext: {privileged: true}\n"
    "  volumes: [{name: root, hostPath: {path: /}}]\n"
)


async def test_pass_through_pod_settings_follow_the_namespace_pod_security_level(
    controlplane: Any, kube: KubeClient, namespace: str
) -> None:
    client = await KubeClient.connect(str(controlplane.kubeconfig))
    provider, shared = build_provider({}, client)
    async with running_manager(controlplane, provider, namespace, shared=shared, client=client) as (manager, _):
        body = llm_instance("root", namespace, on_cluster=True)
        body["spec"]["components"]["llmEngine"]["parameters"]["config"] = PRIVILEGED_CONFIG
        await kube.create(INSTANCES, body)

        async def phase_message() -> tuple[str, str]:
            status = await status_of(kube, namespace, "root")
            return status.get("phase", ""), status.get("message", "")

        # No label: the chart's default, restricted.
        failed = await wait_for(lambda: _when(phase_message(), lambda p: p[0] == "Failed"))
        assert failed[1] == (
            "llmEngine.parameters.config.template.hostPID: hostPID: true is not allowed by the Pod Security "
            "Standard 'restricted' of this namespace"
        )
        assert await kube.get(LLM_INFERENCE_SERVICE, namespace, "root") is None
        # The validation endpoint says the same, through the same checks.
        assert await manager.validate(body) == failed[1]
        # A namespace labelled privileged may run privileged pods, so its Instances may ask for them.
        await _label(kube, namespace, "privileged")
        # (Rendered for the check as the provider now does for this namespace: at level privileged.)
        await wait_converged(kube, namespace, ["root"], provider=kserve_provider(pod_security_default="privileged"))
        # Tightened: the Instance is revalidated without an edit of its own.
        await _label(kube, namespace, "baseline")
        failed = await wait_for(lambda: _when(phase_message(), lambda p: p[0] == "Failed"))
        assert "Pod Security Standard 'baseline'" in failed[1]


async def test_metrics_and_validation_need_an_allowed_token_over_tls(
    controlplane: Any, kube: KubeClient, namespace: str
) -> None:
    metrics, validation, health = free_port(), free_port(), free_port()
    served = Endpoints(
        bind_host="127.0.0.1",
        metrics_port=metrics,
        validation_port=validation,
        health_port=health,
        metrics_auth=True,
        validation_auth=True,
    )
    stranger = await service_account_token(kube, namespace, "stranger")
    async with running_manager(controlplane, kserve_provider(), namespace, endpoints=served):
        assert (await fetch(f"http://127.0.0.1:{health}/healthz"))[0] == 200  # probes stay open
        url = f"https://127.0.0.1:{metrics}/metrics"
        assert (await fetch(url, insecure=True))[0] == 401
        assert (await fetch(url, stranger, insecure=True))[0] == 403
        status, body = await fetch(url, controlplane.admin_token, insecure=True)
        assert status == 200 and "provider_reconciles_total" in body
        # Behind the same check, prometheus-client's handler answers a scraper's negotiation.
        async with aiohttp.ClientSession(auto_decompress=False) as session:
            headers = {
                "Authorization": f"Bearer {controlplane.admin_token}",
                "Accept": "application/openmetrics-text; version=1.0.0",
                "Accept-Encoding": "gzip",
            }
            async with session.get(url, headers=headers, ssl=False) as r:
                assert r.status == 200
                assert r.headers["Content-Type"].startswith("application/openmetrics-text")
                assert r.headers["Content-Encoding"] == "gzip"
                assert gzip.decompress(await r.read()).endswith(b"# EOF\n")
        # Never plain HTTP where a token is expected.
        assert await anyio.to_thread.run_sync(_plain_http_status, url.replace("https", "http")) != 200
        async with aiohttp.ClientSession() as session:
            target = f"https://127.0.0.1:{validation}/validate"
            for token, expected in ((None, 401), (stranger, 403), (controlplane.admin_token, 200)):
                headers = {"Authorization": f"Bearer {token}"} if token else {}
                async with session.post(
                    target, json={"object": llm_instance("x", namespace, on_cluster=True)}, headers=headers, ssl=False
                ) as r:
                    assert r.status == expected, (token is None, await r.text())


def _plain_http_status(url: str) -> int:
    try:
        return http_get(url)[0]
    except OSError:  # the TLS server drops a plain-HTTP request
        return 0


async def _label(kube: KubeClient, namespace: str, level: str) -> None:
    patch = {"metadata": {"labels": {"pod-security.kubernetes.io/enforce": level}}}
    await kube.patch(NAMESPACE, None, namespace, patch)


async def _when(value: Any, test: Any) -> Any:
    got = await value
    return got if test(got) else None


async def _gone(kube: KubeClient, namespace: str, name: str) -> bool:
    return await kube.get(INSTANCES, namespace, name) is None
