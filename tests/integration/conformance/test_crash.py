"""Conformance 1: the provider SIGKILLed between two applies, then restarted.

The real `provider-kserve run` runs as a child process with the chart's HF token setting, so an
`llm` Instance with a LoadBalancer and an inline config derives five objects, applied in order:
ServiceAccount, LLMInferenceServiceConfig, LLMInferenceService, PodMonitor, Service.

- Deterministic: a ResourceQuota admits no LLMInferenceService, so the provider applies the first
  two objects and keeps failing on the third; it is killed there, the quota lifted, and a new
  process started.
- Racy on purpose: six Instances wait for a fresh process, which is killed the moment the first
  derived object appears, wherever the other reconciles happen to be.

Both end converged, with exactly one of each object, and the objects from before the crash are the
same objects (same uid: adopted, not deleted and recreated), with the provider as their only
field manager: names and ownership derive from the Instance alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from actors.client import KubeClient
from actors.client.known_resources import INSTANCES
from actors.interface import KubeObject, Resource
from provider.model.kinds import LLM_INFERENCE_SERVICE, SERVICE_ACCOUNT
from provider.model.names import PROVIDER_NAME
from tests.support.convergence import (
    SELECTOR,
    census,
    condition,
    convergence,
    inventory,
    kinds_of,
    kserve_provider,
    wait_converged,
)
from tests.support.instances import INLINE_CONFIG, llm_instance
from tests.support.provider_process import ProviderProcess, write_kubeconfig
from tests.support.waiting import NotYet, wait_for

pytestmark = pytest.mark.integration

# The chart setting that adds the model-puller ServiceAccount: one more object per Instance; and
# what a process started with it renders.
HF_ENV = {"HF_TOKEN_SECRET_NAME": "hf-token"}
HF_PROVIDER = kserve_provider(hf_token_secret_name="hf-token")

QUOTAS = Resource("", "v1", "resourcequotas", "ResourceQuota")
GATED = "count/llminferenceservices.serving.kserve.io"
FIVE = {"ServiceAccount": 1, "LLMInferenceServiceConfig": 1, "LLMInferenceService": 1, "PodMonitor": 1, "Service": 1}


async def gate_llm_inference_services(kube: KubeClient, namespace: str) -> None:
    """A quota of zero LLMInferenceServices, in force: its status is what admission checks, and
    no quota controller runs here to fill it."""
    hard = {GATED: "0"}
    quota = await kube.create(
        QUOTAS,
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "gate", "namespace": namespace},
            "spec": {"hard": hard},
        },
    )
    quota["status"] = {"hard": hard, "used": {GATED: "0"}}
    await kube.replace(QUOTAS, quota, subresource="status")
    probe = {
        "apiVersion": LLM_INFERENCE_SERVICE.api_version,
        "kind": LLM_INFERENCE_SERVICE.kind,
        "metadata": {"name": "probe", "namespace": namespace},
        "spec": {"model": {"uri": "hf://a/b"}},
    }

    async def in_force() -> bool | NotYet:
        try:
            await kube.apply(LLM_INFERENCE_SERVICE, probe, field_manager="probe", dry_run=True)
        except Exception as err:  # the admission plugin's quota cache has caught up
            return "exceeded quota" in str(err) or NotYet(err)
        return NotYet("the dry run was admitted")

    # The quota admission plugin reads quotas from an informer: a moment after the write, longer on
    # a busy machine.
    await wait_for(in_force, timeout=60, what="the quota in force")


def uids(objects: list[KubeObject]) -> dict[tuple[str, str], str]:
    return {(o["kind"], o["metadata"]["name"]): o["metadata"]["uid"] for o in objects}


def only_our_manager(obj: KubeObject) -> bool:
    managers = {(m["manager"], m["operation"]) for m in obj["metadata"].get("managedFields") or []}
    return managers == {(PROVIDER_NAME, "Apply")}


async def test_killed_between_two_applies_restarts_and_converges_without_duplicates(
    controlplane: Any, kube: KubeClient, namespace: str, tmp_path: Path
) -> None:
    await gate_llm_inference_services(kube, namespace)
    kubeconfig = write_kubeconfig(controlplane, tmp_path / "kubeconfig")
    provider = ProviderProcess(kubeconfig, namespace, tmp_path / "provider.log", env=HF_ENV)
    await kube.create(
        INSTANCES,
        llm_instance(
            "crash",
            namespace,
            on_cluster=True,
            topology={"externalAccess": "LoadBalancer"},
            engine={"config": INLINE_CONFIG},
        ),
    )
    try:
        await provider.start()

        async def stuck_on_the_third_apply() -> bool:
            instance = await kube.get(INSTANCES, namespace, "crash")
            synced = condition(instance, "Synced")
            return bool(synced and synced["reason"] == "ApplyFailed" and "exceeded quota" in synced["message"])

        # The first wait after a cold start of the process on a busy machine.
        await wait_for(stuck_on_the_third_apply, timeout=120)
        assert await provider.kill() == -9
        before = await inventory(kube, namespace)
        assert kinds_of(before, "crash") == {"ServiceAccount": 1, "LLMInferenceServiceConfig": 1}

        await kube.delete(QUOTAS, namespace, "gate")
        await provider.start()
        # A cold start again.
        await wait_converged(kube, namespace, ["crash"], timeout=120, provider=HF_PROVIDER)
    finally:
        await provider.stop()

    after = await inventory(kube, namespace)
    assert kinds_of(after, "crash") == FIVE
    assert max(census(after).values()) == 1
    # The objects from before the crash were found again, not replaced.
    assert uids(before).items() <= uids(after).items()
    assert all(only_our_manager(o) for o in after), [o["metadata"].get("managedFields") for o in after]
    assert provider.starts == 2


async def test_killed_at_the_first_object_of_a_backlog_restarts_and_converges(
    controlplane: Any, kube: KubeClient, namespace: str, tmp_path: Path
) -> None:
    names = [f"burst-{i}" for i in range(6)]
    for name in names:
        await kube.create(
            INSTANCES,
            llm_instance(
                name,
                namespace,
                on_cluster=True,
                topology={"externalAccess": "LoadBalancer"},
                engine={"config": INLINE_CONFIG},
            ),
        )
    kubeconfig = write_kubeconfig(controlplane, tmp_path / "kubeconfig")
    provider = ProviderProcess(kubeconfig, namespace, tmp_path / "provider.log", env=HF_ENV)
    _, rv = await kube.list_all(SERVICE_ACCOUNT, namespace, label_selector=SELECTOR)
    try:
        await provider.start()
        with anyio.fail_after(120):  # a cold start of the process on a busy machine
            async for event in kube.watch(SERVICE_ACCOUNT, namespace, rv, label_selector=SELECTOR):
                if event["type"] == "ADDED":
                    break
        assert await provider.kill() == -9
        before = await inventory(kube, namespace)
        at_kill = {name: sum(kinds_of(before, name).values()) for name in names}
        assert 1 <= sum(at_kill.values()) < 5 * len(names), at_kill  # killed mid-way, not after

        await provider.start()
        # A cold start again, then six Instances of five objects each.
        await wait_converged(kube, namespace, names, timeout=150, provider=HF_PROVIDER)
    finally:
        await provider.stop()

    after = await inventory(kube, namespace)
    assert {name: kinds_of(after, name) for name in names} == {name: FIVE for name in names}
    assert max(census(after).values()) == 1
    assert uids(before).items() <= uids(after).items()
    for name in names:
        assert await convergence(kube, namespace, name, HF_PROVIDER), name
    print(f"objects per Instance when killed: {at_kill}")
