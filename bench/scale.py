"""The real provider at scale, measured the way users load it.

    .venv/bin/python bench/scale.py [--sizes 100 1000 5000] [--topologies llm predictor]

Starts its own control plane (dev/controlplane.py), installs the CRDs and the Provider resource,
and for each (topology, N) runs a fresh `provider-kserve run` process watching its own namespace:

- converge: N Instances created at once; time until each has our finalizer, its KServe object and a
  status written; Instances/s; API requests per Instance by verb (from the provider's /metrics);
- memory: provider RSS after start and after converging N;
- steady state (N = 1000 or the largest size below it): a forced resync (SIGHUP) issues zero writes;
  p50/p99 from an Instance spec change to the updated KServe object, 1000 others idle;
- churn (same N): every Instance updated 10 times in a burst; KServe-object applies per Instance.

Each figure is printed beside the null provider's floor (`bench/converge_null.py`) when given
`--floor`. Nothing here is a test: it prints tables.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "dev"), str(ROOT / "src")]

from actors.interface import KubeObject, Resource  # noqa: E402
from actors.kube import KubeClient  # noqa: E402
from actors.ownership import FINALIZER  # noqa: E402
from actors.resources import INSTANCES, PROVIDERS  # noqa: E402
from controlplane import NAMESPACE, ControlPlane, free_port  # noqa: E402

LLMISVC = Resource("serving.kserve.io", "v1alpha2", "llminferenceservices", "LLMInferenceService")
ISVC = Resource("serving.kserve.io", "v1beta1", "inferenceservices", "InferenceService")
KSERVE_OBJECT = {"llm": LLMISVC, "predictor": ISVC}
WRITES = ("create", "update", "patch", "dryrun", "delete")


def instance(topology: str, name: str, namespace: str, replicas: int = 1) -> KubeObject:
    if topology == "llm":
        component = "llmEngine"
        spec: dict[str, Any] = {
            "type": "vllm",
            "replicas": replicas,
            "resources": {"limits": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"}},
            "parameters": {"modelURI": "hf://Qwen/Qwen2.5-0.5B-Instruct", "modelName": "qwen"},
        }
    else:
        component = "predictor"
        spec = {
            "type": "modelServer",
            "replicas": replicas,
            "resources": {"limits": {"cpu": "1", "memory": "2Gi"}},
            "parameters": {"modelFormat": "sklearn", "storageURI": "gs://kfserving-examples/models/sklearn/1.0/model"},
        }
    return {
        "apiVersion": "core.openeverest.io/v1alpha1",
        "kind": "Instance",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"providerRef": {"name": "provider-kserve"}, "topology": {"type": topology},
                 "components": {component: spec}},
    }


def scrape(port: int) -> tuple[Counter[str], Counter[str], float]:
    """(requests by verb, requests by verb for KServe objects, reconciles) from /metrics."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    verbs: Counter[str] = Counter()
    kserve: Counter[str] = Counter()
    reconciles = 0.0
    for line in text.splitlines():
        if line.startswith("provider_api_requests_total{"):
            labels, value = line.rsplit(" ", 1)
            parts = dict(p.split("=", 1) for p in labels[labels.index("{") + 1 : -1].split(","))
            verb = parts["verb"].strip('"')
            verbs[verb] += int(float(value))
            if "serving.kserve.io" in parts["resource"]:
                kserve[verb] += int(float(value))
        elif line.startswith("provider_reconciles_total{"):
            reconciles += float(line.rsplit(" ", 1)[1])
    return verbs, kserve, reconciles


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


@dataclass
class Provider:
    kubeconfig: Path
    namespace: str
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
        log = (Path(tempfile.gettempdir()) / f"provider-kserve-bench-{self.namespace}.log").open("wb")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "provider.cli", "run", "--kubeconfig", str(self.kubeconfig),
             "--namespace", self.namespace, "--no-leader-elect", "--metrics-port", str(self.port),
             "--health-port", "0", "--validation-port", "0", "--log-level", "warning"],
            env=env, stdout=log, stderr=subprocess.STDOUT,
        )
        # BENCH_PROFILE=FILE samples the provider with py-spy for its first 120 s (collapsed stacks).
        if profile := os.environ.get("BENCH_PROFILE"):
            subprocess.Popen(
                ["py-spy", "record", "--pid", str(self.proc.pid), "--duration", "120", "--rate", "50",
                 "--format", "raw", "-o", profile, "--nonblocking"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid


async def wait_metrics(provider: Provider) -> None:
    with anyio.fail_after(60):
        while True:
            try:
                scrape(provider.port)
                return
            except OSError:
                await anyio.sleep(0.2)


async def create_all(kube: KubeClient, objects: list[KubeObject]) -> None:
    limiter = anyio.CapacityLimiter(32)

    async def create(obj: KubeObject) -> None:
        async with limiter:
            await kube.create(INSTANCES, obj)

    async with anyio.create_task_group() as tg:
        for obj in objects:
            tg.start_soon(create, obj)


async def converged(kube: KubeClient, topology: str, namespace: str, n: int) -> bool:
    items, _ = await kube.list_all(INSTANCES, namespace)
    done = sum(
        1 for o in items
        if FINALIZER in (o["metadata"].get("finalizers") or []) and (o.get("status") or {}).get("phase")
    )
    if done < n:
        return False
    derived, _ = await kube.list_all(KSERVE_OBJECT[topology], namespace)
    return len(derived) >= n


async def quiet(port: int, settle: float = 3.0) -> None:
    """Wait until the provider's reconcile counter stops moving."""
    _, _, last = scrape(port)
    while True:
        await anyio.sleep(settle)
        _, _, now = scrape(port)
        if now == last:
            return
        last = now


async def spec_change_latency(kube: KubeClient, topology: str, namespace: str, samples: int) -> list[float]:
    resource = KSERVE_OBJECT[topology]
    latencies = []
    for i in range(samples):
        name = f"i{i:05d}"
        replicas = 2 + i % 3
        body: dict[str, Any]
        if topology == "llm":
            body = {"spec": {"components": {"llmEngine": {"replicas": replicas}}}}
        else:
            body = {"spec": {"components": {"predictor": {"replicas": replicas}}}}
        started = time.perf_counter()
        await kube.patch(INSTANCES, namespace, name, body)
        with anyio.fail_after(60):
            while True:
                obj = await kube.get(resource, namespace, name) or {}
                spec = obj.get("spec") or {}
                predictor = spec.get("predictor") or {}
                current = spec.get("replicas") if topology == "llm" else predictor.get("minReplicas")
                if current == replicas:
                    break
                await anyio.sleep(0.005)
        latencies.append(time.perf_counter() - started)
    return latencies


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def run_one(plane: ControlPlane, kube: KubeClient, topology: str, n: int, steady: bool) -> dict[str, Any]:
    namespace = f"scale-{topology}-{n}"
    await kube.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    provider = Provider(plane.kubeconfig, namespace)
    provider.start()
    result: dict[str, Any] = {"topology": topology, "n": n}
    try:
        await wait_metrics(provider)
        await anyio.sleep(1)
        result["rss_start"] = rss_mib(provider.pid)
        objects = [instance(topology, f"i{i:05d}", namespace) for i in range(n)]
        started = time.perf_counter()
        await create_all(kube, objects)
        with anyio.fail_after(1800):
            while not await converged(kube, topology, namespace, n):
                await anyio.sleep(0.5)
        elapsed = time.perf_counter() - started
        result["seconds"] = elapsed
        result["per_second"] = n / elapsed
        await quiet(provider.port)
        verbs, _, reconciles = scrape(provider.port)
        result["requests"] = {v: c / n for v, c in sorted(verbs.items())}
        result["reconciles_per_instance"] = reconciles / n
        result["rss"] = rss_mib(provider.pid)
        if steady:
            before_verbs, before_kserve, before_rec = scrape(provider.port)
            assert provider.proc is not None
            provider.proc.send_signal(signal.SIGHUP)
            with anyio.fail_after(600):
                while scrape(provider.port)[2] < before_rec + n:
                    await anyio.sleep(0.5)
            await quiet(provider.port)
            after_verbs, _, after_rec = scrape(provider.port)
            result["resync_writes"] = sum(after_verbs[v] - before_verbs[v] for v in WRITES)
            result["resync_reads"] = sum(after_verbs[v] - before_verbs[v] for v in ("get", "list"))
            result["resync_reconciles"] = after_rec - before_rec
            latencies = await spec_change_latency(kube, topology, namespace, 50)
            result["change_p50_ms"] = 1000 * statistics.median(latencies)
            result["change_p99_ms"] = 1000 * pct(latencies, 0.99)
            await quiet(provider.port)
            _, before_kserve, _ = scrape(provider.port)
            component = "llmEngine" if topology == "llm" else "predictor"

            async def burst(i: int) -> None:
                for k in range(10):
                    body = {"spec": {"components": {component: {"replicas": 10 + k}}}}
                    await kube.patch(INSTANCES, namespace, f"i{i:05d}", body)

            churn_started = time.perf_counter()
            limiter = anyio.CapacityLimiter(32)

            async def limited(i: int) -> None:
                async with limiter:
                    await burst(i)

            async with anyio.create_task_group() as tg:
                for i in range(n):
                    tg.start_soon(limited, i)
            await quiet(provider.port)
            result["churn_seconds"] = time.perf_counter() - churn_started
            _, after_kserve, _ = scrape(provider.port)
            result["churn_applies_per_instance"] = (after_kserve["patch"] - before_kserve["patch"]) / n
    finally:
        provider.stop()
    return result


async def main(args: argparse.Namespace) -> None:
    plane = ControlPlane()
    await plane.start_with_crds(groups=["openeverest", "kserve", "prometheus-operator"])
    results = []
    try:
        async with await KubeClient.connect(str(plane.kubeconfig)) as kube:
            generated = yaml.safe_load((ROOT / "charts/provider-kserve/generated/provider-spec.yaml").read_text())
            await kube.create(PROVIDERS, {"apiVersion": "core.openeverest.io/v1alpha1", "kind": "Provider",
                                          "metadata": {"name": "provider-kserve"}, "spec": generated["spec"]})
            steady_n = max((n for n in args.sizes if n <= 1000), default=min(args.sizes))
            for topology in args.topologies:
                for n in args.sizes:
                    r = await run_one(plane, kube, topology, n, steady=n == steady_n)
                    results.append(r)
                    print(r, flush=True)
    finally:
        plane.stop()
    print(f"\nmachine: {os.cpu_count()} cores")
    print(f"{'topology':<10} {'N':>5} {'s':>7} {'inst/s':>7} {'rec/inst':>8} {'RSS0':>6} {'RSS':>6}  requests/Instance")
    for r in results:
        verbs = " ".join(f"{k}={v:.2f}" for k, v in r["requests"].items())
        print(f"{r['topology']:<10} {r['n']:>5} {r['seconds']:>7.1f} {r['per_second']:>7.1f}"
              f" {r['reconciles_per_instance']:>8.2f} {r['rss_start']:>6.1f} {r['rss']:>6.1f}  {verbs}")
    for r in results:
        if "resync_writes" in r:
            print(f"\n{r['topology']} N={r['n']}: forced resync → {r['resync_reconciles']:.0f} reconciles,"
                  f" {r['resync_writes']} writes, {r['resync_reads']} reads;"
                  f" spec change → KServe object p50 {r['change_p50_ms']:.0f} ms p99 {r['change_p99_ms']:.0f} ms;"
                  f" churn 10 updates x {r['n']} in {r['churn_seconds']:.1f} s →"
                  f" {r['churn_applies_per_instance']:.2f} KServe applies per Instance")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 5000])
    parser.add_argument("--topologies", nargs="+", default=["llm", "predictor"])
    anyio.run(main, parser.parse_args())
