"""Issue 29, finding 4: a tenant's own objects are never deleted by the provider.

Labels, owner references and annotations can all be copied by whoever may write in a namespace.
Before, objects a tenant labelled as the provider's, with a controller reference to their Instance,
under names the provider never derives, were pruned on the next pass: the provider deleted what it
had not created. Now only objects under a name the provider derives for the Instance are its own
(docs/ownership.md): the tenant's stay, and they do not hold the Instance's deletion back.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from actors.client import KubeClient
from actors.client.known_resources import INSTANCES
from actors.contract import controller_reference, ownership_labels
from actors.interface import KubeObject
from plane import free_port
from provider.model.kinds import LLM_INFERENCE_SERVICE, SERVICE
from provider.model.names import PROVIDER_NAME
from tests.support.convergence import wait_converged
from tests.support.http import scraped_total
from tests.support.instances import llm_instance
from tests.support.provider_process import ProviderProcess, write_kubeconfig
from tests.support.waiting import NotYet, wait_for

pytestmark = pytest.mark.integration


def tenants_own(owner: KubeObject) -> list[tuple[Any, KubeObject]]:
    """An LLMInferenceService and a Service carrying every mark of the provider's ownership."""
    namespace = owner["metadata"]["namespace"]

    def meta(name: str) -> dict[str, Any]:
        return {
            "name": name,
            "namespace": namespace,
            "labels": ownership_labels(owner, PROVIDER_NAME),
            "ownerReferences": [controller_reference(owner)],
        }

    llmisvc = {
        "apiVersion": LLM_INFERENCE_SERVICE.api_version,
        "kind": LLM_INFERENCE_SERVICE.kind,
        "metadata": meta("tenants-own-model"),
        "spec": {"model": {"uri": "hf://tenant/model"}},
    }
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": meta("tenants-own-service"),
        "spec": {"ports": [{"port": 80}], "selector": {"app": "tenant"}},
    }
    return [(LLM_INFERENCE_SERVICE, llmisvc), (SERVICE, service)]


async def test_objects_labelled_as_ours_under_other_names_are_left_alone(
    controlplane: Any, kube: KubeClient, namespace: str, tmp_path: Path
) -> None:
    kubeconfig = write_kubeconfig(controlplane, tmp_path / "kubeconfig")
    metrics = free_port()
    provider = ProviderProcess(kubeconfig, namespace, tmp_path / "provider.log", args=["--metrics-port", str(metrics)])
    await kube.create(INSTANCES, llm_instance("owner", namespace, on_cluster=True))
    try:
        await provider.start()
        # The first wait after a cold start of the process (`provider-kserve run`) on a busy machine.
        await wait_converged(kube, namespace, ["owner"], timeout=120)
        owner = await kube.get(INSTANCES, namespace, "owner")
        assert owner is not None
        passes = scraped_total(metrics, "provider_reconciles_total")
        created = {body["metadata"]["name"]: await kube.create(resource, body) for resource, body in tenants_own(owner)}
        # A spec change runs the owner's reconcile again: a pass that prunes whatever is the
        # provider's and no longer desired, counted (so ended) before looking.
        await kube.patch(
            INSTANCES, namespace, "owner", {"spec": {"topology": {"parameters": {"externalAccess": "NodePort"}}}}
        )
        await wait_converged(kube, namespace, ["owner"])
        await passes_after(metrics, passes)
        assert scraped_total(metrics, "provider_api_requests_total", verb="delete") == 0
        for resource, body in tenants_own(owner):
            name = body["metadata"]["name"]
            live = await kube.get(resource, namespace, name)
            assert live is not None, f"{body['kind']} {name} was deleted"
            assert live["metadata"]["uid"] == created[name]["metadata"]["uid"]
            assert not live["metadata"].get("deletionTimestamp")
        # Deleting the Instance: the provider deletes its own objects and lets go at once (the
        # tenant's are Kubernetes' garbage collector's business, through their owner reference).
        await kube.delete(INSTANCES, namespace, "owner")

        async def gone() -> bool:
            return await kube.get(INSTANCES, namespace, "owner") is None

        await wait_for(gone, timeout=60, what="the Instance's deletion")
        assert "Traceback" not in (tmp_path / "provider.log").read_text()
    finally:
        await provider.stop()


async def passes_after(metrics: int, passes: float) -> float:
    """Waits until the provider has ended a reconcile pass after the `passes` it had counted, and
    returns its new count."""

    async def counted() -> float | NotYet:
        now = scraped_total(metrics, "provider_reconciles_total")
        return now if now > passes else NotYet(f"{now:g} passes counted")

    return await wait_for(counted, timeout=60, what=f"a reconcile pass after the {passes:g} counted")
