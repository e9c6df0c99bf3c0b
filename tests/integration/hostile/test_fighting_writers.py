"""Issue 29, finding 5: a writer fighting the provider does not set its pace.

Five writers change `spec.replicas` of five derived LLMInferenceServices every 50 ms: three apply
it as another field manager (`gitops`, forcing: the provider's apply then conflicts), two edit it by
hand (`kubectl-edit`: the provider takes the field back). Before, every foreign write's event ran
the reconcile at once and cleared its backoff: ≈ 14.5 requests a second per writer, one status
write per foreign write. Now the events of a derived object wait for its Instance's backoff, and a
take-back backs off as a failure does: each fought Instance costs a few passes whose spacing
doubles (5 ms, 10 ms, ... up to 1000 s), about log2(T / 5 ms) passes in T seconds and at most three
writes each (the refused or forced apply and a status), and an Instance nobody fights is changed
as promptly as without the fight.
"""

from __future__ import annotations

import math
import statistics
import time
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest

from actors.client import ApiError, KubeClient
from actors.client.known_resources import INSTANCES
from plane import free_port
from provider.model.kinds import LLM_INFERENCE_SERVICE
from tests.support.convergence import wait_converged
from tests.support.http import scrape
from tests.support.instances import llm_instance
from tests.support.provider_process import ProviderProcess, write_kubeconfig
from tests.support.waiting import wait_for

pytestmark = pytest.mark.integration

FIGHT_SECONDS = 30.0
FOUGHT = [f"fought-{i}" for i in range(5)]
WRITE_VERBS = ("create", "update", "patch", "delete")
# Passes of a fought Instance in the fight: its backoff doubles from 5 ms (and one more pass per
# writer whose event met a pass under way), three writes each at most.
PASSES = math.log2(FIGHT_SECONDS / 0.005) + 3
WRITES_PER_FOUGHT = 3 * PASSES
# Latencies of the bystander's change, compared by their medians: one sample is one scheduling
# hiccup away from anything on a starved machine.
SAMPLES = 3
# What the bystander's change may take during the fight, whatever it took calm: on a loaded 2-core
# machine a calm change takes up to a few seconds (more in a scheduling hiccup, which the median
# leaves out); a provider whose pace the fight sets keeps an unrelated change waiting for longer.
LATENCY_FLOOR = 10.0


def writes(port: int) -> Counter[str]:
    """The provider's writes so far by verb, resource and code, from its own /metrics."""
    counts: Counter[str] = Counter()
    for labels, value in scrape(port, "provider_api_requests_total"):
        if labels.get("verb") in WRITE_VERBS:
            counts[",".join(f"{k}={v}" for k, v in sorted(labels.items()))] += int(value)
    return counts


async def gitops(kube: KubeClient, namespace: str, name: str, until: float) -> int:
    """Applies replicas: 3 as field manager `gitops`, forcing, every 50 ms."""
    body = {
        "apiVersion": LLM_INFERENCE_SERVICE.api_version,
        "kind": LLM_INFERENCE_SERVICE.kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"replicas": 3},
    }
    count = 0
    while time.monotonic() < until:
        await kube.apply(LLM_INFERENCE_SERVICE, body, field_manager="gitops", force=True)
        count += 1
        await anyio.sleep(0.05)
    return count


async def kubectl_edit(kube: KubeClient, namespace: str, name: str, until: float) -> int:
    """Sets replicas: 4 by hand (a read and an update, as `kubectl edit` does) every 50 ms."""
    count = 0
    while time.monotonic() < until:
        live = await kube.get(LLM_INFERENCE_SERVICE, namespace, name)
        assert live is not None
        live["spec"]["replicas"] = 4
        try:
            await kube.replace(LLM_INFERENCE_SERVICE, live, field_manager="kubectl-edit")
            count += 1
        except ApiError as err:
            if not err.conflict:
                raise
        await anyio.sleep(0.05)
    return count


async def change_latency(kube: KubeClient, namespace: str, replicas: int) -> float:
    """Seconds from a change of the bystander Instance to its LLMInferenceService carrying it."""
    started = time.monotonic()
    await kube.patch(INSTANCES, namespace, "bystander", {"spec": {"components": {"llmEngine": {"replicas": replicas}}}})

    async def applied() -> bool:
        live = await kube.get(LLM_INFERENCE_SERVICE, namespace, "bystander")
        return bool((live or {}).get("spec", {}).get("replicas") == replicas)

    await wait_for(applied, timeout=60, interval=0.02, what="the bystander's change applied")
    return time.monotonic() - started


async def change_latencies(kube: KubeClient, namespace: str, replicas: range) -> list[float]:
    """`change_latency` once per value of `replicas` (each a change from the one before)."""
    return [await change_latency(kube, namespace, n) for n in replicas]


async def test_five_fighting_writers_cost_a_bounded_number_of_requests(
    controlplane: Any, kube: KubeClient, namespace: str, tmp_path: Path
) -> None:
    metrics = free_port()
    kubeconfig = write_kubeconfig(controlplane, tmp_path / "kubeconfig")
    args = ["--metrics-port", str(metrics)]
    provider = ProviderProcess(kubeconfig, namespace, tmp_path / "provider.log", args=args)
    for name in [*FOUGHT, "bystander"]:
        await kube.create(INSTANCES, llm_instance(name, namespace, on_cluster=True))
    try:
        await provider.start()
        # The first wait after a cold start of the process.
        await wait_converged(kube, namespace, [*FOUGHT, "bystander"], timeout=120)
        calm = await change_latencies(kube, namespace, range(2, 2 + SAMPLES))
        before = writes(metrics)
        until = time.monotonic() + FIGHT_SECONDS
        foreign = {}
        async with anyio.create_task_group() as tg:

            async def fight(name: str, writer: Any) -> None:
                foreign[name] = await writer(kube, namespace, name, until)

            for i, name in enumerate(FOUGHT):
                tg.start_soon(fight, name, gitops if i < 3 else kubectl_edit)
            # A third of the way in: the fought Instances' backoffs have grown, and the samples
            # have the rest of the fight to be taken in.
            await anyio.sleep(FIGHT_SECONDS / 3)
            sampled_from = FIGHT_SECONDS - (until - time.monotonic())
            fought = await change_latencies(kube, namespace, range(2 + SAMPLES, 2 + 2 * SAMPLES))
            sampled_to = FIGHT_SECONDS - (until - time.monotonic())
        by_request = writes(metrics) - before
        ours = sum(by_request.values())
        rate = ours / FIGHT_SECONDS
        print(
            f"{sum(foreign.values())} foreign writes in {FIGHT_SECONDS:.0f} s; the provider's writes: "
            f"{ours:.0f} ({rate:.1f}/s, {ours / len(FOUGHT):.0f} per fought Instance, bound "
            f"{WRITES_PER_FOUGHT:.0f}); the bystander's change applied in {ms(calm)} ms calm, {ms(fought)} ms "
            f"during the fight (sampled from {sampled_from:.1f} s to {sampled_to:.1f} s of "
            f"{FIGHT_SECONDS:.0f}); {dict(by_request)}"
        )
        assert ours <= WRITES_PER_FOUGHT * len(FOUGHT) + 4 * SAMPLES  # the bystander's passes, one a change
        # Fighting writers do not stall the provider: a change nobody fights goes through about as
        # fast as it does calm.
        assert statistics.median(fought) < max(3 * statistics.median(calm), LATENCY_FLOOR), (calm, fought)
        assert provider.alive()
    finally:
        await provider.stop()


def ms(latencies: list[float]) -> str:
    return "/".join(f"{seconds * 1000:.0f}" for seconds in latencies)
