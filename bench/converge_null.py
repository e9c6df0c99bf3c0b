"""Converge N Instances with the null provider (one ConfigMap each): the runtime's own cost.

    .venv/bin/python bench/converge_null.py 100 1000

Starts its own control plane (dev/plane) and runs the real Manager in-process. Reports
Instances/s until every Instance is Ready, p50/p99 latency from the Instance's create response to
the start of its first reconcile (event → reconcile), API requests per Instance by verb, and the
process RSS (which includes the load generator's client; a few MiB).
"""

from __future__ import annotations

import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "dev"), str(ROOT / "src")]

from actors.client import KubeClient  # noqa: E402
from actors.client.known_resources import INSTANCES  # noqa: E402
from actors.interface import KubeObject, ReconcileContext  # noqa: E402
from plane import NAMESPACE, ControlPlane  # noqa: E402
from tests.support.instances import null_instance  # noqa: E402
from tests.support.null_provider import NullProvider  # noqa: E402
from tests.support.runtime import running_manager  # noqa: E402


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class TimedNullProvider(NullProvider):
    def __init__(self) -> None:
        super().__init__()
        self.first_reconcile: dict[str, float] = {}

    async def desired(self, ctx: ReconcileContext, valid: None) -> list[KubeObject]:
        self.first_reconcile.setdefault(ctx.key.name, time.perf_counter())
        return await super().desired(ctx, valid)


async def converge(plane: ControlPlane, kube: KubeClient, n: int) -> dict[str, Any]:
    namespace = f"bench-{n}"
    await kube.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    provider = TimedNullProvider()
    rss_start = rss_mib()
    async with running_manager(plane, provider, namespace, max_concurrent=16, idle_timeout=30) as (
        manager,
        requests,
    ):
        created: dict[str, float] = {}
        cpu_start = time.process_time()
        started = time.perf_counter()
        limiter = anyio.CapacityLimiter(32)

        async def create(i: int) -> None:
            async with limiter:
                name = f"i{i:05d}"
                await kube.create(INSTANCES, null_instance(name, namespace))
                created[name] = time.perf_counter()

        async with anyio.create_task_group() as tg:
            for i in range(n):
                tg.start_soon(create, i)
        while True:
            items, _ = await kube.list_all(INSTANCES, namespace)
            ready = sum(1 for o in items if (o.get("status") or {}).get("phase") == "Ready")
            if ready == n:
                break
            await anyio.sleep(0.2)
        elapsed = time.perf_counter() - started
        cpu = time.process_time() - cpu_start
        latencies = sorted(provider.first_reconcile[k] - created[k] for k in created)
        rss_end = rss_mib()
        per_verb = {verb: count / n for verb, count in sorted(Counter(requests).items())}
        live = manager.actors.live
    return {
        "n": n,
        "seconds": elapsed,
        "per_second": n / elapsed,
        "p50_ms": 1000 * statistics.median(latencies),
        "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
        "rss_start": rss_start,
        "rss_end": rss_end,
        "requests_per_instance": per_verb,
        "live_actors": live,
        "cpu_seconds": cpu,
    }


async def main(sizes: list[int]) -> None:
    plane = ControlPlane()
    await plane.start_with_crds(groups=["openeverest"])
    try:
        async with await KubeClient.connect(str(plane.kubeconfig)) as kube:
            results = [await converge(plane, kube, n) for n in sizes]
    finally:
        plane.stop()
    print(f"{'N':>6} {'s':>8} {'cpu s':>7} {'inst/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'RSS MiB':>8}  requests/Instance")
    for r in results:
        verbs = " ".join(f"{k}={v:.2f}" for k, v in r["requests_per_instance"].items())
        print(
            f"{r['n']:>6} {r['seconds']:>8.1f} {r['cpu_seconds']:>7.1f} {r['per_second']:>8.1f}"
            f" {r['p50_ms']:>8.0f} {r['p99_ms']:>8.0f} {r['rss_end']:>8.1f}  {verbs}"
        )


if __name__ == "__main__":
    anyio.run(main, [int(a) for a in sys.argv[1:]] or [100, 1000])
