"""Issue 29, finding 1: what tenants store and label does not set the provider's memory.

A tenant, with only the rights a namespace's users have, stores 200 Secrets of 700 KiB carrying the
provider's label, 50 more with every ownership label and a controller reference to their Instance,
and ServiceAccounts and Services with 250 KiB of annotations labelled the same way: about 210 MB in
all. Before, the provider held every page of a list at once and packed what it kept whole: 614 MiB at
every start and relist, over the chart's 512 Mi limit. Now a list is read a page of about 4 MiB at
a time and transformed as it comes, objects under names it does not derive are not kept, and what
it keeps of a Secret is digests: the peak at start and at a relist stays within a margin of the
peak without the attack, whatever the attack's size.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

import pytest

from actors.client import KubeClient
from actors.client.known_resources import INSTANCES, SECRETS
from actors.contract import LABEL_PROVIDER, controller_reference, ownership_labels
from actors.interface import KubeObject, Resource
from provider.model.kinds import SERVICE, SERVICE_ACCOUNT
from provider.model.names import PROVIDER_NAME
from tests.support.convergence import wait_converged
from tests.support.instances import llm_instance
from tests.support.provider_process import ProviderProcess, vm_hwm_mib, write_kubeconfig
from tests.support.tcp_proxy import TcpProxy
from tests.support.waiting import wait_for

pytestmark = pytest.mark.integration

# What the peak may exceed the same provider's peak without the attack by: far below the attack's
# ~210 MB, and independent of it.
MARGIN_MIB = 48


def labelled(name: str, namespace: str, *, owner: KubeObject | None) -> dict[str, Any]:
    """Metadata a tenant can write: the provider's label, or all its ownership metadata."""
    if owner is None:
        return {"name": name, "namespace": namespace, "labels": {LABEL_PROVIDER: PROVIDER_NAME}}
    return {
        "name": name,
        "namespace": namespace,
        "labels": ownership_labels(owner, PROVIDER_NAME),
        "ownerReferences": [controller_reference(owner)],
    }


async def attack(kube: KubeClient, namespace: str, owner: KubeObject) -> int:
    """Stores the tenant's objects; their bytes."""
    stored = 0

    async def create(resource: Resource, body: KubeObject, size: int) -> None:
        nonlocal stored
        await kube.create(resource, body)
        stored += size

    for i in range(250):
        data = secrets.token_urlsafe(540_000)  # 700 KiB once base64-encoded by the API server
        body = {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": labelled(f"bulk-{i}", namespace, owner=owner if i >= 200 else None),
            "stringData": {"payload": data},
        }
        await create(SECRETS, body, 4 * len(data) // 3)
    padding = {"tenant.example/padding": secrets.token_urlsafe(190_000)}  # 250 KiB
    for i in range(60):
        meta = {**labelled(f"padded-{i}", namespace, owner=owner if i % 2 else None), "annotations": padding}
        await create(SERVICE_ACCOUNT, {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta}, 256_000)
        service = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": meta,
            "spec": {"ports": [{"port": 80}], "selector": {"app": "none"}},
        }
        await create(SERVICE, service, 256_000)
    return stored


async def peak_after_start(provider: ProviderProcess, kube: KubeClient, namespace: str) -> float:
    await provider.start()
    # The first wait after a cold start of the process on a busy machine (the second start lists
    # the tenant's 210 MB first).
    await wait_converged(kube, namespace, ["victim"], timeout=120)
    assert provider.process is not None
    return vm_hwm_mib(provider.process.pid)


async def test_a_tenants_bulk_does_not_raise_the_peak_at_start_or_relist(
    controlplane: Any, kube: KubeClient, namespace: str, tmp_path: Path
) -> None:
    # Through a proxy, so that the provider alone can be cut off while etcd compacts its history.
    proxy = TcpProxy(controlplane.apiserver_port)
    await proxy.start()
    kubeconfig = write_kubeconfig(controlplane, tmp_path / "kubeconfig", server=f"https://127.0.0.1:{proxy.port}")
    provider = ProviderProcess(kubeconfig, namespace, tmp_path / "provider.log")
    await kube.create(INSTANCES, llm_instance("victim", namespace, on_cluster=True))
    try:
        baseline = await peak_after_start(provider, kube, namespace)
        await provider.stop()
        victim = await kube.get(INSTANCES, namespace, "victim")
        assert victim is not None
        stored = await attack(kube, namespace, victim)
        at_start = await peak_after_start(provider, kube, namespace)
        # Cut off while the history its watches resume from is compacted away: on reconnection
        # every watch gets 410 Gone, and every informer lists again, the tenant's objects included.
        log = tmp_path / "provider.log"
        relists_before = log.read_text().count("watch expired, relisting")
        proxy.cut()
        # Two writes: a watch resumes from the revision after its last one, which a compaction at
        # the current revision keeps when only one write came since (then nothing expires).
        marker = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "after-cut", "namespace": namespace}}
        await kube.create(SECRETS, marker)
        await kube.delete(SECRETS, namespace, "after-cut")
        controlplane.compact()
        proxy.heal()

        async def relisted() -> bool:
            return log.read_text().count("watch expired, relisting") >= relists_before + 3

        await wait_for(relisted, timeout=400, what="the informers relisting after a compaction")
        # Each probe lists every object labelled as ours in the namespace, the tenant's 210 MB
        # included, while the provider lists them again: under a CPU hog on both cores one probe
        # took over 60 s (a full .ci/run beside a hog, 2026-12-08).
        await wait_converged(kube, namespace, ["victim"], timeout=300)
        assert provider.process is not None
        after_relist = vm_hwm_mib(provider.process.pid)
        print(
            f"tenant bytes {stored / 2**20:.0f} MiB; peak RSS without them {baseline:.0f} MiB, "
            f"with them at start {at_start:.0f} MiB, after a relist {after_relist:.0f} MiB"
        )
        assert at_start < baseline + MARGIN_MIB, (baseline, at_start)
        assert after_relist < baseline + MARGIN_MIB, (baseline, after_relist)
        assert "Traceback" not in log.read_text()
    finally:
        await provider.stop()
        await proxy.close()
