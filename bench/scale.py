"""The real provider at scale beside its floor, measured the way users load it.

    .venv/bin/python bench/scale.py [--sizes 1000 10000] [--topologies null llm predictor] [--steady N]
                                    [--contended] [--checkout DIR] [--out FILE.json] [--baseline FILE.json]

Starts its own control plane (dev/plane), installs the CRDs and the Provider resource,
and for each (topology, N) runs a fresh provider process watching its own namespace. Topology
`null` is the same `provider-kserve run` process with the null provider (bench/null_process.py:
one ConfigMap per Instance, Ready at once): the floor every other row is divided by.

- converge: N Instances created at once; time until each has our finalizer, its derived object and
  a status written; CPU per Instance; API requests per Instance by verb; failed reconciles; RSS;
- at the steady-state size (`--steady`; by default 1000, or the largest size below it): p50/p99
  from a spec change to the derived object while the converge is under way, then with N-1 others
  idle, each change after the previous one's status write (also split in two: until the
  Instance's watch event, the API server's part before any provider can act, and from there to
  the derived object's); a forced resync (SIGHUP) issues zero writes; churn (every Instance
  updated 10 times in a burst: applies per Instance); a restarted process over N converged
  Instances (writes, CPU), then its idle CPU and the requests that woke it;
- delete all: time and CPU until the last Instance is gone;
- memory per extra 1000 Instances between sizes.

`--contended` runs everything beside a CPU hog on every core. The API server runs with its watch
cache, as in every real cluster; `--no-watch-cache` runs it without, as the tests' control plane
does (each watcher then reads etcd: the Instance writes, their events and the bench's own watches
cost the two cores more; docs/performance.md says which figures were taken so). `--checkout DIR` runs
the provider from another checkout (e.g. a `git worktree` of an older commit) for before/after
tables; `--out` saves the results and `--baseline` prints this run's figures as ratios to a saved
run; BENCH_PROFILE=PREFIX samples each provider process with py-spy, BENCH_CALLS=PREFIX runs each
under cProfile (the calls the same work makes, which the machine's load does not move:
bench/call_counts.py compares two runs). Nothing here is a test: it prints tables
(bench/scaling/report.py), with the machine's cores, its load and the watch cache.
`--figures DIR` also draws the converge curves and the idle spec-change latencies as PNG files
(bench/scaling/figures.py); `--results FILE.json` prints the tables and draws the figures of a run
saved by `--out`, without running anything. docs/performance.md shows them.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "dev"), str(ROOT / "src")]

from bench.scaling.figures import SERIES, draw  # noqa: E402
from bench.scaling.lifecycle import run_one  # noqa: E402
from bench.scaling.process import start_cpu_hog  # noqa: E402
from bench.scaling.report import print_tables  # noqa: E402
from bench.scaling.workloads import WORKLOADS  # noqa: E402

from actors.client import KubeClient  # noqa: E402
from actors.client.known_resources import PROVIDERS  # noqa: E402
from plane import ControlPlane  # noqa: E402


async def publish_provider(kube: KubeClient) -> None:
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


def commit_of(checkout: Path) -> str:
    """The checkout's commit (short), with `+` when its working tree differs from it; "" outside git."""
    git = ["git", "-C", str(checkout)]
    head = subprocess.run([*git, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False)
    if head.returncode != 0:
        return ""
    dirty = subprocess.run([*git, "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True)
    return head.stdout.strip() + ("+" if dirty.stdout.strip() else "")


def report(results: list[dict[str, Any]], args: argparse.Namespace) -> None:
    print_tables(results, json.loads(args.baseline.read_text()) if args.baseline else [])
    if args.figures:
        for path in draw(results, args.figures):
            print(f"figure: {path}")


async def main(args: argparse.Namespace) -> None:
    if args.results:
        report(json.loads(args.results.read_text()), args)
        return
    plane = ControlPlane(watch_cache=args.watch_cache)
    await plane.start_with_crds(groups=["openeverest", "kserve", "prometheus-operator"])
    results: list[dict[str, Any]] = []
    hog = start_cpu_hog(args.hog_seconds) if args.contended else []
    try:
        async with await KubeClient.connect(str(plane.kubeconfig)) as kube:
            await publish_provider(kube)
            steady_n = (
                args.steady
                if args.steady is not None
                else max((n for n in args.sizes if n <= 1000), default=min(args.sizes))
            )
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
                        extra=tuple(args.provider_arg),
                    )
                    r.update(
                        contended=args.contended,
                        watch_cache=args.watch_cache,
                        when=datetime.datetime.now().astimezone().strftime("%Y-%m-%d %H:%M %Z"),
                        cores=os.cpu_count(),
                        commit=commit_of(args.checkout),
                    )
                    results.append(r)
                    print({k: v for k, v in r.items() if k not in SERIES}, flush=True)
                    if args.out:
                        args.out.write_text(json.dumps(results, indent=1))
    finally:
        for proc in hog:
            proc.kill()
        plane.stop()
    report(results, args)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--topologies", nargs="+", choices=sorted(WORKLOADS), default=["null", "llm", "predictor"])
    parser.add_argument("--checkout", type=Path, default=ROOT, help="run the provider from this checkout")
    parser.add_argument("--out", type=Path, help="save the results as JSON")
    parser.add_argument("--baseline", type=Path, help="print ratios to results saved by --out")
    parser.add_argument("--figures", type=Path, help="also draw the figures (PNG) into this directory")
    parser.add_argument("--results", type=Path, help="report (and draw) results saved by --out instead of running")
    parser.add_argument("--idle", type=float, default=60.0, help="seconds of idle CPU measured after the restart")
    parser.add_argument(
        "--contended", action="store_true", help="run everything beside a CPU hog on every core (bounded in time)"
    )
    parser.add_argument(
        "--steady", type=int, help="the size that gets the steady-state phases (default: 1000 or the largest below)"
    )
    parser.add_argument("--churn", action=argparse.BooleanOptionalAction, default=True, help="the churn phase")
    parser.add_argument("--provider-arg", action="append", default=[], help="one more `run` argument (repeatable)")
    parser.add_argument(
        "--watch-cache",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="the API server's watch cache, on in every real cluster (off: the test plane's default, "
        "which watches and reads etcd directly and costs the API server more per event)",
    )
    parser.add_argument("--hog-seconds", type=float, default=3600.0, help="the CPU hog's own time limit")
    anyio.run(main, parser.parse_args())
