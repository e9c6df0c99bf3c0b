"""Conformance 2 and 3: the API server goes away, the watch history goes away.

2. kube-apiserver is stopped for 20 s while the provider is half-way through a backlog of 30
   Instances, then started again: the informers reconnect, the backlog drains, an Instance created
   and one edited right after the restart are both picked up, and no Instance is missed.
3. The provider is cut off from the API server (a TCP proxy between them drops every connection)
   while Instances are edited, created and deleted and a derived object is deleted by hand; etcd is
   then compacted past everything the provider saw. On reconnection every watch gets 410 Gone, the
   informers relist and diff, and every one of those changes is applied.

The provider is the real KServe provider inside the real runtime (`running_manager`). Case 2 holds
its `desired()` at a gate after the first ten, so that the API server is stopped at a known point of
the backlog rather than by luck; nothing else about the provider changes.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from actors.client import KubeClient
from actors.client.known_resources import INSTANCES
from actors.interface import KubeObject, ReconcileContext, Release, Resource, StatusReport
from provider.kserve import Checked, KServeProvider
from provider.model.kinds import POD_MONITOR, SERVICE
from tests.support.convergence import census, inventory, kinds_of, kserve_provider, wait_converged
from tests.support.instances import llm_instance
from tests.support.provider_process import write_kubeconfig
from tests.support.runtime import running_manager
from tests.support.tcp_proxy import TcpProxy
from tests.support.waiting import NotYet, wait_for

pytestmark = pytest.mark.integration

OUTAGE_SECONDS = 20.0


@dataclass
class GatedProvider:
    """The KServe provider, except that `desired()` waits at `gate` once `pass_first` calls went by."""

    inner: KServeProvider
    pass_first: int
    gate: anyio.Event = field(default_factory=anyio.Event)
    arrived: int = 0

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def annotation_domain(self) -> str:
        return self.inner.annotation_domain

    def owned_resources(self) -> Sequence[Resource]:
        return self.inner.owned_resources()

    def derives(self, instance_name: str, resource: Resource, name: str) -> bool:
        return self.inner.derives(instance_name, resource, name)

    async def validate(self, ctx: ReconcileContext) -> Checked:
        return await self.inner.validate(ctx)

    async def desired(self, ctx: ReconcileContext, valid: Checked) -> list[KubeObject]:
        self.arrived += 1
        if self.arrived > self.pass_first:
            await self.gate.wait()
        return await self.inner.desired(ctx, valid)

    async def status(self, ctx: ReconcileContext, valid: Checked) -> StatusReport:
        return await self.inner.status(ctx, valid)

    def releases(self, ctx: ReconcileContext) -> Sequence[Release]:
        return self.inner.releases(ctx)

    async def cleanup(self, ctx: ReconcileContext) -> None:
        await self.inner.cleanup(ctx)


async def test_apiserver_down_20s_mid_backlog_then_back_misses_no_instance(
    controlplane: Any, kube: KubeClient, namespace: str
) -> None:
    names = [f"backlog-{i:02d}" for i in range(30)]
    for name in names:
        await kube.create(INSTANCES, llm_instance(name, namespace, on_cluster=True))
    provider = GatedProvider(kserve_provider(), pass_first=10)
    stopped_at = 0.0
    try:
        async with running_manager(controlplane, provider, namespace, max_concurrent=4) as (manager, requests):

            async def held() -> bool | NotYet:
                # Ten through, four held at the gate (every slot), sixteen waiting for a slot.
                if provider.arrived >= 14:
                    return True
                # Seen once in a CI rehearsal and not reproduced since (with CPU hogs, a benchmark
                # beside it, the tests before it): what the runtime was doing says which it was.
                actors = manager.actors
                return NotYet(
                    f"{provider.arrived} reconciles reached desired() (14 expected); actors: "
                    f"{actors.busy} running, {actors.depth} waiting, {actors.live} live, {actors.parked} "
                    f"parked, {actors.stats}; requests by verb: {dict(requests)}"
                )

            await wait_for(held, what="14 reconciles at the gate", timeout=60)
            controlplane.stop_apiserver()
            stopped_at = time.monotonic()
            provider.gate.set()  # the held reconciles now meet a dead API server
            await anyio.sleep(OUTAGE_SECONDS)
            controlplane.start_apiserver()
            down = time.monotonic() - stopped_at
            # The informer has to be watching again to see these two.
            await kube.create(INSTANCES, llm_instance("after-restart", namespace, on_cluster=True))
            await kube.patch(INSTANCES, namespace, names[0], {"spec": {"components": {"llmEngine": {"replicas": 2}}}})
            drained = await wait_converged(kube, namespace, [*names, "after-restart"], timeout=180)
            relists = [i.relists for i in manager.instance_informers]
    finally:
        controlplane.start_apiserver()  # a no-op when it runs; the control plane is shared

    objects = await inventory(kube, namespace)
    assert max(census(objects).values()) == 1
    for name in [*names, "after-restart"]:
        assert kinds_of(objects, name) == {"LLMInferenceService": 1, "PodMonitor": 1}, name
    edited = await kube.get(INSTANCES, namespace, names[0])
    assert edited is not None and edited["metadata"]["generation"] == 2
    assert down >= OUTAGE_SECONDS
    print(f"apiserver down {down:.1f} s; backlog drained {drained:.1f} s after it was back; relists {relists}")


async def test_partition_with_compaction_relists_and_loses_no_change(
    controlplane: Any, kube: KubeClient, namespace: str, tmp_path: Path
) -> None:
    proxy = TcpProxy(controlplane.apiserver_port)
    await proxy.start()
    kubeconfig = write_kubeconfig(controlplane, tmp_path / "kubeconfig", server=f"https://127.0.0.1:{proxy.port}")
    for name in ("edit", "gone", "keep", "repair"):
        await kube.create(INSTANCES, llm_instance(name, namespace, on_cluster=True))
    try:
        async with running_manager(SimpleNamespace(kubeconfig=kubeconfig), kserve_provider(), namespace) as (
            manager,
            _,
        ):
            await wait_converged(kube, namespace, ["edit", "gone", "keep", "repair"])
            (informer,) = manager.instance_informers
            relists_before = informer.relists
            proxy.cut()
            # Every change below happens where the provider cannot see it.
            await kube.patch(
                INSTANCES, namespace, "edit", {"spec": {"topology": {"parameters": {"externalAccess": "NodePort"}}}}
            )
            await kube.delete(INSTANCES, namespace, "gone")
            await kube.create(INSTANCES, llm_instance("new", namespace, on_cluster=True))
            await kube.delete(POD_MONITOR, namespace, "repair-metrics")
            revision = controlplane.compact()
            proxy.heal()

            await wait_converged(kube, namespace, ["edit", "keep", "repair", "new"], timeout=90)

            async def gone() -> bool:
                return await kube.get(INSTANCES, namespace, "gone") is None

            await wait_for(gone, timeout=60)
            relists = informer.relists - relists_before
    finally:
        await proxy.close()

    assert relists >= 1  # the stale watch got 410 Gone and the informer listed afresh
    objects = await inventory(kube, namespace)
    assert max(census(objects).values()) == 1
    assert kinds_of(objects, "gone") == {}
    assert kinds_of(objects, "edit")["Service"] == 1
    service = await kube.get(SERVICE, namespace, "edit-external")
    assert service is not None and service["spec"]["type"] == "NodePort"
    repaired = await kube.get(POD_MONITOR, namespace, "repair-metrics")
    assert repaired is not None
    assert int(repaired["metadata"]["resourceVersion"]) > revision  # recreated after the compaction
    print(f"compacted at {revision}; instance informer relists during the partition: {relists}")
