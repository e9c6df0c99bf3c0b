"""One run: a fresh provider process for one (topology, N), taken through the phases in order."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from bench.scaling import phases
from bench.scaling.process import ProviderProcess
from bench.scaling.workloads import WORKLOADS

from actors.client import KubeClient
from plane import NAMESPACE, ControlPlane


async def run_one(
    plane: ControlPlane,
    kube: KubeClient,
    checkout: Path,
    topology: str,
    n: int,
    *,
    steady: bool,
    idle_seconds: float,
    churn: bool = True,
    extra: tuple[str, ...] = (),
) -> dict[str, Any]:
    """Converge N; at the steady-state size also resync, latency, churn, restart and idle; then
    delete them all (the restarted process does, at the steady-state size)."""
    workload = WORKLOADS[topology]
    namespace = f"scale-{topology}-{n}"
    await kube.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    process = ProviderProcess(plane.kubeconfig, namespace, topology, checkout, workload.derived, extra)
    process.start()
    result: dict[str, Any] = {"topology": topology, "n": n}
    try:
        await process.wait_metrics()
        await anyio.sleep(1)
        result.update(await phases.converge(kube, process, workload, n, probe=steady))
        if steady:
            result.update(await phases.steady(kube, process, workload, n))
            if churn:
                result.update(await phases.churn(kube, process, workload, n))
            process.stop()
            process = ProviderProcess(plane.kubeconfig, namespace, topology, checkout, workload.derived, extra)
            result.update(await phases.restart_and_idle(process, n, idle_seconds))
        result.update(await phases.delete_all(kube, process, n))
    finally:
        process.stop()
    return result
