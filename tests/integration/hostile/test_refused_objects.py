"""Issue 29, finding 6: what the API server would refuse is Failed with why, not retried forever.

1. LoRA adapters beyond what the AI Gateway route takes: 200 adapters (201 route matches, over the
   CRD's 128), or an adapter name of 5000 characters (a header value over 4096). Before, /validate
   allowed them, the route's apply got 422 on every retry and the Instance stayed Provisioning
   with a message ending in `<nil>: Invalid value: null`. Now validation refuses them, with the
   limit, in the reconciler and /validate alike, and nothing is applied.
2. In general, a derived object the API server refuses (422; here a ValidatingAdmissionPolicy of
   the cluster's, which the provider cannot know) turns the Instance Failed with the API server's
   own message, and is not retried until the Instance changes.
"""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import aiohttp
import anyio
import pytest

from actors.client import ApiError, KubeClient
from actors.client.known_resources import INSTANCES
from actors.interface import Resource
from plane import free_port
from provider.model.kinds import AI_GATEWAY_ROUTE, LLM_INFERENCE_SERVICE
from tests.support.convergence import wait_converged
from tests.support.http import scraped_total
from tests.support.instances import llm_instance
from tests.support.provider_process import ProviderProcess, write_kubeconfig
from tests.support.waiting import NotYet, wait_for

pytestmark = pytest.mark.integration

POLICIES = Resource(
    "admissionregistration.k8s.io", "v1", "validatingadmissionpolicies", "ValidatingAdmissionPolicy", namespaced=False
)
BINDINGS = Resource(
    "admissionregistration.k8s.io",
    "v1",
    "validatingadmissionpolicybindings",
    "ValidatingAdmissionPolicyBinding",
    namespaced=False,
)


async def status_of(kube: KubeClient, namespace: str, name: str) -> dict[str, Any]:
    return ((await kube.get(INSTANCES, namespace, name)) or {}).get("status") or {}


async def failed(kube: KubeClient, namespace: str, name: str) -> dict[str, Any] | None:
    status = await status_of(kube, namespace, name)
    return status if status.get("phase") == "Failed" else None


async def serving(port: int) -> bool:
    try:
        stream = await anyio.connect_tcp("127.0.0.1", port)
    except OSError:
        return False
    await stream.aclose()
    return True


def gateway_instance(name: str, namespace: str, adapters: list[dict[str, str]]) -> dict[str, Any]:
    return llm_instance(
        name,
        namespace,
        on_cluster=True,
        engine={"lora": {"adapters": adapters}},
        topology={"externalAccess": "EnvoyAIGateway"},
    )


async def test_adapters_beyond_the_gateway_routes_limits_are_refused_by_validation(
    controlplane: Any, kube: KubeClient, namespace: str, tmp_path: Path
) -> None:
    validation = free_port()
    env = {"AI_GATEWAY_ENABLED": "true", "AI_GATEWAY_NAME": "gw", "AI_GATEWAY_NAMESPACE": namespace}
    kubeconfig = write_kubeconfig(controlplane, tmp_path / "kubeconfig")
    args = ["--validation-port", str(validation)]
    provider = ProviderProcess(kubeconfig, namespace, tmp_path / "provider.log", env=env, args=args)
    many = gateway_instance("many", namespace, [{"name": f"a{i}", "uri": f"hf://o/a{i}"} for i in range(200)])
    long_name = gateway_instance("long", namespace, [{"name": "a" * 5000, "uri": "hf://o/long"}])
    expected = {
        "many": "externalAccess EnvoyAIGateway routes at most 128 models (the base model and 127 LoRA adapters); "
        "this Instance serves 201",
        "long": "is 5000 characters long; the AI Gateway route matches names of at most 4096",
    }
    try:
        await provider.start()
        # A cold start of the process (imports, informers) on a busy machine.
        await wait_for(lambda: serving(validation), timeout=120, what="/validate")
        async with aiohttp.ClientSession() as session:
            for body in (many, long_name):
                name = body["metadata"]["name"]
                async with session.post(f"http://127.0.0.1:{validation}/validate", json={"object": body}) as answer:
                    verdict = json.loads(await answer.text())
                assert verdict["allowed"] is False and expected[name] in verdict["message"], verdict
                await kube.create(INSTANCES, body)
                status = await wait_for(partial(failed, kube, namespace, name), timeout=60, what=f"{name} Failed")
                assert expected[name] in status["message"]
                assert await kube.get(AI_GATEWAY_ROUTE, namespace, f"{name}-ai-gateway") is None
                assert await kube.get(LLM_INFERENCE_SERVICE, namespace, name) is None
    finally:
        await provider.stop()


async def test_an_object_the_api_server_refuses_is_failed_with_its_message_and_not_retried(
    controlplane: Any, kube: KubeClient, namespace: str, tmp_path: Path
) -> None:
    # The cluster's own rule, which the provider cannot know: at most 4 replicas in this namespace.
    policy = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": f"replicas-{namespace}"},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {
                "resourceRules": [
                    {
                        "apiGroups": ["serving.kserve.io"],
                        "apiVersions": ["*"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["llminferenceservices"],
                    }
                ]
            },
            "validations": [
                {
                    "expression": "!has(object.spec.replicas) || object.spec.replicas <= 4",
                    "message": "at most 4 replicas",
                }
            ],
        },
    }
    binding = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": f"replicas-{namespace}"},
        "spec": {
            "policyName": f"replicas-{namespace}",
            "validationActions": ["Deny"],
            "matchResources": {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}}},
        },
    }
    await kube.create(POLICIES, policy)
    await kube.create(BINDINGS, binding)
    kubeconfig = write_kubeconfig(controlplane, tmp_path / "kubeconfig")
    metrics = free_port()
    provider = ProviderProcess(kubeconfig, namespace, tmp_path / "provider.log", args=["--metrics-port", str(metrics)])
    try:
        await policy_in_force(kube, namespace)
        await kube.create(INSTANCES, llm_instance("big", namespace, on_cluster=True, component={"replicas": 6}))
        await provider.start()
        # The first wait after a cold start of the process.
        status = await wait_for(lambda: failed(kube, namespace, "big"), timeout=120, what="big Failed")
        assert status["message"].startswith("LLMInferenceService big was refused by the API server: ")
        assert "at most 4 replicas" in status["message"]
        synced = next(c for c in status["conditions"] if c["type"] == "Synced")
        assert (synced["status"], synced["reason"]) == ("False", "Invalid")
        # The pass that wrote Failed has ended (counted) and scheduled no retry: nothing will apply
        # the refused object again until the Instance changes.
        await wait_for(partial(pass_counted, metrics), timeout=30, what="the failed pass counted")
        assert scraped_total(metrics, "provider_retries_total") == 0, "a retry of the refused apply was scheduled"
        assert refused_applies(metrics) >= 1
        await kube.patch(INSTANCES, namespace, "big", {"spec": {"components": {"llmEngine": {"replicas": 2}}}})
        await wait_converged(kube, namespace, ["big"])
    finally:
        await provider.stop()
        await kube.delete(BINDINGS, None, f"replicas-{namespace}")
        await kube.delete(POLICIES, None, f"replicas-{namespace}")


async def policy_in_force(kube: KubeClient, namespace: str) -> None:
    """Wait until the API server refuses what the policy forbids: it takes effect only once the API
    server has read the policy and its binding from its informers and compiled it, a moment after
    the writes (longer on a busy machine). A server-side dry run stores nothing."""
    probe = {
        "apiVersion": LLM_INFERENCE_SERVICE.api_version,
        "kind": LLM_INFERENCE_SERVICE.kind,
        "metadata": {"name": "policy-probe", "namespace": namespace},
        "spec": {"model": {"uri": "hf://a/b"}, "replicas": 6},
    }

    async def refused() -> bool | NotYet:
        try:
            await kube.apply(LLM_INFERENCE_SERVICE, probe, field_manager="probe", dry_run=True)
        except ApiError as err:
            return "at most 4 replicas" in str(err) or NotYet(err)
        return NotYet("the dry run of 6 replicas was admitted")

    await wait_for(refused, timeout=60, what="the ValidatingAdmissionPolicy in force")


async def pass_counted(port: int) -> bool:
    return scraped_total(port, "provider_reconciles_total", result="error") >= 1


def refused_applies(port: int) -> float:
    """The provider's applies the API server refused as invalid so far."""
    return scraped_total(port, "provider_api_requests_total", code="422", verb="patch")
