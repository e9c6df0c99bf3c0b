"""The real provider at scale beside its floor, measured the way users load it.

    .venv/bin/python bench/scale.py [--sizes 100 1000 5000] [--topologies null llm predictor]
                                    [--checkout DIR] [--out FILE.json] [--baseline FILE.json]

Starts its own control plane (dev/controlplane.py), installs the CRDs and the Provider resource,
and for each (topology, N) runs a fresh provider process watching its own namespace. Topology
`null` is the same `provider-kserve run` process with the null provider (bench/null_process.py:
one ConfigMap per Instance, Ready at once): the floor every other row is divided by.

- converge: N Instances created at once; time until each has our finalizer, its derived object and
  a status written; Instances/s; API requests per Instance by verb (from the process's /metrics);
- memory: RSS after start and after converging N;
- steady state (N = 1000 or the largest size below it): a forced resync (SIGHUP) issues zero writes;
  p50/p99 from an Instance spec change to the updated derived object, N-1 others idle;
- churn (same N): every Instance updated 10 times in a burst; applies of the derived object per Instance.

`--checkout DIR` runs the provider from another checkout (e.g. a `git worktree` of an older
commit) for before/after tables; `--out` saves the results and `--baseline` prints this run's
figures as ratios to a saved run. Nothing here is a test: it prints tables.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
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
from tests.support import null_provider  # noqa: E402

WRITES = ("create", "update", "patch", "dryrun", "delete")
# Longest wait for one spec change to show on its derived object.
LATENCY_CAP = 60.0
READS = ("get", "list")


def _kserve_instance(topology: str, component: str, spec: dict[str, Any]) -> Callable[[str, str], KubeObject]:
    def build(name: str, namespace: str) -> KubeObject:
        return {
            "apiVersion": INSTANCES.api_version,
            "kind": INSTANCES.kind,
            "metadata": {"name": name, "namespace": namespace},
            "spec": {
                "providerRef": {"name": "provider-kserve"},
                "topology": {"type": topology},
                "components": {component: {**spec, "replicas": 1}},
            },
        }

    return build


@dataclass(frozen=True)
class Workload:
    """What one topology's Instances look like, what they produce, and how a spec change shows."""

    instance: Callable[[str, str], KubeObject]
    derived: Resource
    derived_suffix: str
    change: Callable[[int], dict[str, Any]]  # merge patch setting the watched value
    observed: Callable[[KubeObject], Any]  # the watched value on the derived object


WORKLOADS = {
    "null": Workload(
        instance=lambda name, namespace: null_provider.instance(name, namespace, size=1),
        derived=null_provider.CONFIGMAPS,
        derived_suffix="-cm",
        change=lambda v: {"spec": {"topology": {"parameters": {"size": v}}}},
        observed=lambda obj: int((obj.get("data") or {}).get("size", 0)),
    ),
    "llm": Workload(
        instance=_kserve_instance(
            "llm",
            "llmEngine",
            {
                "type": "vllm",
                "resources": {"limits": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"}},
                "parameters": {"modelURI": "hf://Qwen/Qwen2.5-0.5B-Instruct", "modelName": "qwen"},
            },
        ),
        derived=Resource("serving.kserve.io", "v1alpha2", "llminferenceservices", "LLMInferenceService"),
        derived_suffix="",
        change=lambda v: {"spec": {"components": {"llmEngine": {"replicas": v}}}},
        observed=lambda obj: (obj.get("spec") or {}).get("replicas"),
    ),
    "predictor": Workload(
        instance=_kserve_instance(
            "predictor",
            "predictor",
            {
                "type": "modelServer",
                "resources": {"limits": {"cpu": "1", "memory": "2Gi"}},
                "parameters": {
                    "modelFormat": "sklearn",
                    "storageURI": "gs://kfserving-examples/models/sklearn/1.0/model",
                },
            },
        ),
        derived=Resource("serving.kserve.io", "v1beta1", "inferenceservices", "InferenceService"),
        derived_suffix="",
        change=lambda v: {"spec": {"components": {"predictor": {"replicas": v}}}},
        observed=lambda obj: ((obj.get("spec") or {}).get("predictor") or {}).get("minReplicas"),
    ),
}


@dataclass
class Sample:
    """One /metrics scrape of a provider process."""

    verbs: Counter[str]  # API requests by verb
    on_derived: Counter[str]  # API requests by verb on the derived resource
    reconciles: float
    depth: float  # keys waiting to run


def scrape(port: int, derived: Resource) -> Sample:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as response:
        text = response.read().decode()
    sample = Sample(Counter(), Counter(), 0.0, 0.0)
    for line in text.splitlines():
        if line.startswith("provider_api_requests_total{"):
            labels, value = line.rsplit(" ", 1)
            parts = dict(p.split("=", 1) for p in labels[labels.index("{") + 1 : -1].split(","))
            verb = parts["verb"].strip('"')
            sample.verbs[verb] += int(float(value))
            if parts["resource"].strip('"') == str(derived):
                sample.on_derived[verb] += int(float(value))
        elif line.startswith("provider_reconciles_total{"):
            sample.reconciles += float(line.rsplit(" ", 1)[1])
        elif line.startswith("provider_queue_depth "):
            sample.depth = float(line.rsplit(" ", 1)[1])
    return sample


def rss_mib(pid: int, field: str = "VmRSS") -> float:
    """Resident set size now (VmRSS) or at its peak (VmHWM), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


@dataclass
class ProviderProcess:
    kubeconfig: Path
    namespace: str
    topology: str
    checkout: Path
    derived: Resource
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {**os.environ, "PYTHONPATH": f"{self.checkout / 'src'}:{self.checkout}"}
        entry = [str(ROOT / "bench/null_process.py")] if self.topology == "null" else ["-m", "provider.cli"]
        log = (Path(tempfile.gettempdir()) / f"provider-kserve-bench-{self.namespace}.log").open("wb")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                *entry,
                "run",
                "--kubeconfig",
                str(self.kubeconfig),
                "--namespace",
                self.namespace,
                "--no-leader-elect",
                "--metrics-port",
                str(self.port),
                "--health-port",
                "0",
                "--validation-port",
                "0",
                "--log-level",
                "warning",
            ],
            env=env,
            cwd=self.checkout,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        # BENCH_PROFILE=FILE samples the provider with py-spy for its first 120 s (raw stacks).
        if profile := os.environ.get("BENCH_PROFILE"):
            subprocess.Popen(
                [
                    str(Path(sys.executable).with_name("py-spy")),  # installed by `.[bench]`
                    "record",
                    "--pid",
                    str(self.proc.pid),
                    "--duration",
                    "120",
                    "--rate",
                    "50",
                    "--format",
                    "raw",
                    "-o",
                    profile,
                    "--nonblocking",
                ],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
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

    def scrape(self) -> Sample:
        return scrape(self.port, self.derived)

    async def wait_metrics(self) -> None:
        with anyio.fail_after(60):
            while True:
                try:
                    self.scrape()
                    return
                except OSError:
                    await anyio.sleep(0.2)

    def writes(self) -> int:
        verbs = self.scrape().verbs
        return sum(verbs[v] for v in WRITES)

    async def quiet(self, settle: float = 3.0) -> None:
        """Wait until the process stops writing. (Not until it stops reconciling: Instances that
        are not Ready, as none is without a KServe controller, are polled, writing nothing.)"""
        last = self.writes()
        while True:
            await anyio.sleep(settle)
            now = self.writes()
            if now == last:
                return
            last = now


async def bounded(n: int, action: Callable[[int], Any], limit: int = 32) -> None:
    """Run action(0..n-1) with at most `limit` in flight (a burst, as a client fleet would send it)."""
    limiter = anyio.CapacityLimiter(limit)

    async def one(i: int) -> None:
        async with limiter:
            await action(i)

    async with anyio.create_task_group() as tg:
        for i in range(n):
            tg.start_soon(one, i)


def name_of(i: int) -> str:
    return f"i{i:05d}"


async def converged(kube: KubeClient, workload: Workload, namespace: str, n: int) -> bool:
    items, _ = await kube.list_all(INSTANCES, namespace)
    done = sum(
        1
        for o in items
        if FINALIZER in (o["metadata"].get("finalizers") or []) and (o.get("status") or {}).get("phase")
    )
    if done < n:
        return False
    derived, _ = await kube.list_all(workload.derived, namespace)
    return sum(1 for o in derived if o["metadata"]["name"].endswith(workload.derived_suffix)) >= n


async def spec_change_latency(
    kube: KubeClient, workload: Workload, namespace: str, samples: int, offset: int = 0
) -> list[float]:
    latencies = []
    for i in range(samples):
        value = offset + 2 + i % 3
        started = time.perf_counter()
        await kube.patch(INSTANCES, namespace, name_of(i), workload.change(value))
        # Not seen within the cap: counted as the cap (a user's change waiting behind a whole bulk
        # backlog shows up as a p99 at the cap, not as a failed run).
        with anyio.move_on_after(LATENCY_CAP):
            while (
                workload.observed(
                    await kube.get(workload.derived, namespace, name_of(i) + workload.derived_suffix) or {}
                )
                != value
            ):
                await anyio.sleep(0.005)
        latencies.append(min(time.perf_counter() - started, LATENCY_CAP))
    return latencies


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def steady_and_churn(
    kube: KubeClient, process: ProviderProcess, workload: Workload, n: int, churn: bool = True
) -> dict[str, Any]:
    result: dict[str, Any] = {}
    before = process.scrape()
    assert process.proc is not None
    process.proc.send_signal(signal.SIGHUP)
    # The resync queues all N at once; polls of not-Ready Instances add reconciles too, so wait for
    # the queue to drain as well as for N more reconciles.
    await anyio.sleep(0.5)
    with anyio.fail_after(600):
        while (now := process.scrape()).reconciles < before.reconciles + n or now.depth:
            await anyio.sleep(0.5)
    await process.quiet()
    after = process.scrape()
    result["resync_writes"] = sum(after.verbs[v] - before.verbs[v] for v in WRITES)
    result["resync_reads"] = sum(after.verbs[v] - before.verbs[v] for v in READS)
    result["resync_reconciles"] = after.reconciles - before.reconciles
    latencies = await spec_change_latency(kube, workload, process.namespace, min(50, n))
    result["change_p50_ms"] = 1000 * statistics.median(latencies)
    result["change_p99_ms"] = 1000 * pct(latencies, 0.99)
    await process.quiet()
    if not churn:
        return result
    before_derived = process.scrape().on_derived

    spans: list[float] = []

    async def burst(i: int) -> None:
        first = time.perf_counter()
        for k in range(10):
            await kube.patch(INSTANCES, process.namespace, name_of(i), workload.change(10 + k))
        spans.append(time.perf_counter() - first)

    started = time.perf_counter()
    await bounded(n, burst)
    await process.quiet()
    result["churn_seconds"] = time.perf_counter() - started
    # How long one Instance's ten edits took to send: coalescing can only merge what overlaps.
    result["churn_burst_ms"] = 1000 * statistics.median(spans)
    after_derived = process.scrape().on_derived
    result["churn_applies_per_instance"] = (after_derived["patch"] - before_derived["patch"]) / n
    return result


async def run_one(
    plane: ControlPlane,
    kube: KubeClient,
    checkout: Path,
    topology: str,
    n: int,
    steady: bool,
    idle_seconds: float,
    churn: bool = True,
) -> dict[str, Any]:
    workload = WORKLOADS[topology]
    namespace = f"scale-{topology}-{n}"
    await kube.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
    process = ProviderProcess(plane.kubeconfig, namespace, topology, checkout, workload.derived)
    process.start()
    result: dict[str, Any] = {"topology": topology, "n": n}
    try:
        await process.wait_metrics()
        await anyio.sleep(1)
        result["rss_start"] = rss_mib(process.pid)
        cpu_start = cpu_seconds(process.pid)
        started = time.perf_counter()
        async with anyio.create_task_group() as tg:
            tg.start_soon(bounded, n, lambda i: kube.create(INSTANCES, workload.instance(name_of(i), namespace)))
            if steady:
                # A user's change while the bulk converge is under way (it must go ahead of it).
                probes = min(50, n)
                with anyio.fail_after(600):
                    for i in range(probes):  # created in any order by the burst
                        while await kube.get(INSTANCES, namespace, name_of(i)) is None:
                            await anyio.sleep(0.05)
                during = await spec_change_latency(kube, workload, namespace, probes, offset=100)
                result["converge_change_p50_ms"] = 1000 * statistics.median(during)
                result["converge_change_p99_ms"] = 1000 * pct(during, 0.99)
        with anyio.fail_after(1800):
            while not await converged(kube, workload, namespace, n):
                await anyio.sleep(0.5)
        elapsed = time.perf_counter() - started
        result["seconds"] = elapsed
        result["per_second"] = n / elapsed
        await process.quiet()
        result["cpu_seconds"] = cpu_seconds(process.pid) - cpu_start
        converged_sample = process.scrape()
        verbs, reconciles = converged_sample.verbs, converged_sample.reconciles
        result["requests"] = {v: c / n for v, c in sorted(verbs.items())}
        result["reconciles_per_instance"] = reconciles / n
        result["rss"] = rss_mib(process.pid)
        result["rss_peak"] = rss_mib(process.pid, "VmHWM")
        result["load_converge"] = os.getloadavg()[0]
        if steady:
            result.update(await steady_and_churn(kube, process, workload, n, churn))
            process.stop()
            process = ProviderProcess(plane.kubeconfig, namespace, topology, checkout, workload.derived)
            result.update(await restart_and_idle(process, n, idle_seconds))
    finally:
        process.stop()
    return result


async def restart_and_idle(process: ProviderProcess, n: int, idle_seconds: float) -> dict[str, Any]:
    """A new process (a restart, or a new leader) over N converged Instances: writes and CPU until
    it is quiet; then its CPU over `idle_seconds` with nothing happening."""
    result: dict[str, Any] = {}
    started = time.perf_counter()
    process.start()
    await process.wait_metrics()
    with anyio.fail_after(600):
        while process.scrape().reconciles < n:
            await anyio.sleep(0.2)
    await process.quiet()
    after = process.scrape()
    result["restart_writes"] = sum(after.verbs[v] for v in WRITES)
    result["restart_verbs"] = dict(after.verbs)
    result["restart_reads"] = sum(after.verbs[v] for v in READS)
    result["restart_reconciles"] = after.reconciles
    result["restart_cpu"] = cpu_seconds(process.pid)
    result["restart_seconds"] = time.perf_counter() - started
    idle_from = cpu_seconds(process.pid)
    reconciles_from = after.reconciles
    await anyio.sleep(idle_seconds)
    result["idle_cpu_per_min"] = (cpu_seconds(process.pid) - idle_from) * 60 / idle_seconds
    result["idle_reconciles"] = process.scrape().reconciles - reconciles_from
    result["load_idle"] = os.getloadavg()[0]
    return result


def requests_total(r: dict[str, Any]) -> float:
    return float(sum(r["requests"].values()))


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}" if b else "-"


def print_tables(results: list[dict[str, Any]], baseline: list[dict[str, Any]]) -> None:
    load = ", ".join(f"{r['topology']}/{r['n']}: {r.get('load_converge', 0):.1f}" for r in results)
    print(f"\nmachine: {os.cpu_count()} cores; 1-min load average at the end of each converge: {load}")
    print(
        f"{'topology':<10} {'N':>5} {'s':>7} {'inst/s':>7} {'cpu s':>6} {'rec/inst':>8}"
        f" {'RSS0':>6} {'RSS':>6} {'peak':>6}  requests/Instance"
    )
    for r in results:
        verbs = " ".join(f"{k}={v:.2f}" for k, v in r["requests"].items())
        print(
            f"{r['topology']:<10} {r['n']:>5} {r['seconds']:>7.1f} {r['per_second']:>7.1f} {r['cpu_seconds']:>6.1f}"
            f" {r['reconciles_per_instance']:>8.2f} {r['rss_start']:>6.1f} {r['rss']:>6.1f}"
            f" {r.get('rss_peak', 0):>6.1f}  {verbs}  cpu/inst {1000 * r['cpu_seconds'] / r['n']:.2f} ms"
        )
    floor = {r["n"]: r for r in results if r["topology"] == "null"}
    if floor:
        print("\nratio to the null floor at the same N (time, CPU, requests, RSS growth over start)")
        for r in results:
            if (f := floor.get(r["n"])) and r is not f:
                print(
                    f"{r['topology']:<10} {r['n']:>5}  time x{ratio(r['seconds'], f['seconds'])}"
                    f"  cpu x{ratio(r['cpu_seconds'], f['cpu_seconds'])}"
                    f"  requests x{ratio(requests_total(r), requests_total(f))}"
                    f"  RSS growth x{ratio(r['rss'] - r['rss_start'], f['rss'] - f['rss_start'])}"
                )
    by_size = {r["topology"]: {x["n"]: x for x in results if x["topology"] == r["topology"]} for r in results}
    for topology, sizes in by_size.items():
        if 1000 in sizes and (largest := max(sizes)) > 1000:
            per_1000 = (sizes[largest]["rss"] - sizes[1000]["rss"]) / ((largest - 1000) / 1000)
            print(
                f"{topology}: RSS {sizes[1000]['rss']:.1f} MiB at 1000, {sizes[largest]['rss']:.1f} MiB at"
                f" {largest} → {per_1000:.1f} MiB per extra 1000 Instances"
            )
    for r in results:
        if "resync_writes" in r:
            print(
                f"\n{r['topology']} N={r['n']}: forced resync → {r['resync_reconciles']:.0f} reconciles,"
                f" {r['resync_writes']} writes, {r['resync_reads']} reads;"
                f" spec change → derived object p50 {r['change_p50_ms']:.0f} ms p99 {r['change_p99_ms']:.0f} ms"
            )
        if "churn_seconds" in r:
            print(
                f"{r['topology']} N={r['n']}: churn 10 updates x {r['n']} in {r['churn_seconds']:.1f} s"
                f" (one Instance's 10: median {r.get('churn_burst_ms', 0):.0f} ms) →"
                f" {r['churn_applies_per_instance']:.2f} applies per Instance"
            )
        if "restart_writes" in r:
            print(
                f"{r['topology']} N={r['n']}: during the converge, spec change → derived object"
                f" p50 {r['converge_change_p50_ms']:.0f} ms p99 {r['converge_change_p99_ms']:.0f} ms;"
                f" restart over {r['n']} converged → {r['restart_writes']} writes, {r['restart_reads']} reads,"
                f" {r['restart_reconciles']:.0f} reconciles, {r['restart_cpu']:.2f} s CPU"
                f" in {r['restart_seconds']:.1f} s;"
                f" idle → {r['idle_cpu_per_min']:.3f} s CPU per minute, {r['idle_reconciles']:.0f} reconciles"
                f" (load {r.get('load_idle', 0):.1f})"
            )
    before = {(b["topology"], b["n"]): b for b in baseline}
    if before:
        print("\nafter / before (baseline file)")
        for r in results:
            if b := before.get((r["topology"], r["n"])):
                print(
                    f"{r['topology']:<10} {r['n']:>5}  time x{ratio(r['seconds'], b['seconds'])}"
                    f"  cpu x{ratio(r['cpu_seconds'], b['cpu_seconds'])}"
                    f"  requests x{ratio(requests_total(r), requests_total(b))}"
                    f"  RSS x{ratio(r['rss'], b['rss'])}"
                )


def start_cpu_hog(seconds: float) -> list[subprocess.Popen[bytes]]:
    """One busy process per core, each ending by itself after `seconds` (and stopped by us earlier)."""
    loop = f"import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"
    return [subprocess.Popen([sys.executable, "-c", loop]) for _ in range(os.cpu_count() or 1)]


async def main(args: argparse.Namespace) -> None:
    plane = ControlPlane()
    await plane.start_with_crds(groups=["openeverest", "kserve", "prometheus-operator"])
    results = []
    hog = start_cpu_hog(args.hog_seconds) if args.contended else []
    try:
        async with await KubeClient.connect(str(plane.kubeconfig)) as kube:
            generated = yaml.safe_load((ROOT / "charts/provider-kserve/generated/provider-spec.yaml").read_text())
            await kube.create(
                PROVIDERS,
                {
                    "apiVersion": PROVIDERS.api_version,
                    "kind": PROVIDERS.kind,
                    "metadata": {"name": "provider-kserve"},
                    "spec": generated["spec"],
                },
            )
            steady_n = max((n for n in args.sizes if n <= 1000), default=min(args.sizes))
            for topology in args.topologies:
                for n in args.sizes:
                    r = await run_one(
                        plane,
                        kube,
                        args.checkout.resolve(),
                        topology,
                        n,
                        steady=n == steady_n,
                        idle_seconds=args.idle,
                        churn=args.churn,
                    )
                    results.append(r)
                    print(r, flush=True)
                    if args.out:
                        args.out.write_text(json.dumps(results, indent=1))
    finally:
        for proc in hog:
            proc.kill()
        plane.stop()
    print_tables(results, json.loads(args.baseline.read_text()) if args.baseline else [])


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 5000])
    parser.add_argument("--topologies", nargs="+", choices=sorted(WORKLOADS), default=["null", "llm", "predictor"])
    parser.add_argument("--checkout", type=Path, default=ROOT, help="run the provider from this checkout")
    parser.add_argument("--out", type=Path, help="save the results as JSON")
    parser.add_argument("--baseline", type=Path, help="print ratios to results saved by --out")
    parser.add_argument("--idle", type=float, default=60.0, help="seconds of idle CPU measured after the restart")
    parser.add_argument(
        "--contended", action="store_true", help="run everything beside a CPU hog on every core (bounded in time)"
    )
    parser.add_argument("--churn", action=argparse.BooleanOptionalAction, default=True, help="the churn phase")
    parser.add_argument("--hog-seconds", type=float, default=3600.0, help="the CPU hog's own time limit")
    args = parser.parse_args()
    anyio.run(main, args)
