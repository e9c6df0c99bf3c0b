"""The provider process under test (a fresh `provider-kserve run` per run), and what is read from it:
its /metrics, its RSS and CPU time from /proc; and the CPU hog of `--contended`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import urllib.request
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from actors.interface import Resource
from plane import free_port

WRITES = ("create", "update", "patch", "dryrun", "delete")
READS = ("get", "list")
# py-spy's collapsed stacks, sampled without stopping the process.
RAW = ("--nonblocking", "--format", "raw", "-o")


@dataclass
class Sample:
    """One /metrics scrape of a provider process."""

    verbs: Counter[str]  # API requests by verb
    on_derived: Counter[str]  # API requests by verb on the derived resource
    reconciles: float
    depth: float  # keys waiting to run
    errors: float = 0.0  # reconciles that failed (retried with backoff)
    live: float = 0.0  # per-Instance actors alive (each exits after its idle timeout)
    # Seconds spent and how many, by "step:<reconcile step>" and "api:<verb>" (histogram sums/counts).
    seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    counts: dict[str, float] = field(default_factory=lambda: defaultdict(float))

    def writes(self) -> int:
        return sum(self.verbs[v] for v in WRITES)

    def since(self, before: Sample) -> Counter[str]:
        """Requests by verb since `before` (zeros left out)."""
        return +Counter({v: self.verbs[v] - before.verbs[v] for v in self.verbs})


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
            if 'result="error"' in line:
                sample.errors += float(line.rsplit(" ", 1)[1])
        elif line.startswith(_TIMED):
            name, labels, value = _timed(line)
            (sample.seconds if name.endswith("_sum") else sample.counts)[labels] += value
        elif line.startswith("provider_live_actors "):
            sample.live = float(line.rsplit(" ", 1)[1])
        elif line.startswith("provider_queue_depth "):
            sample.depth = float(line.rsplit(" ", 1)[1])
    return sample


_TIMED = tuple(
    f"{metric}_{part}{{"
    for metric in (
        "provider_reconcile_step_seconds",
        "provider_api_request_seconds",
        "provider_queue_wait_seconds",
        "provider_gc_pause_seconds",
    )
    for part in ("sum", "count")
)
_KIND_OF_LABEL = {"step": "step", "verb": "api", "priority": "wait", "generation": "gc"}


def _timed(line: str) -> tuple[str, str, float]:
    """`provider_reconcile_step_seconds_sum{step="sync"} 1.5` → (metric, "step:sync", 1.5); the
    API request latency by verb as "api:<verb>", the queue wait by priority as "wait:<priority>",
    the garbage collector's pauses by generation as "gc:<generation>"."""
    head, value = line.rsplit(" ", 1)
    name, labels = head.rstrip("}").split("{", 1)
    key, _, label = labels.partition("=")
    return name, f"{_KIND_OF_LABEL[key]}:{label.strip(chr(34))}", float(value)


def rss_mib(pid: int, field: str = "VmRSS") -> float:
    """Resident set size now (VmRSS) or at its peak (VmHWM), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def _profile_path(prefix: str, namespace: str) -> str:
    """`prefix.<namespace>.<k>`, k counting the processes profiled in that namespace."""
    k = 0
    while Path(path := f"{prefix}.{namespace}.{k}").exists():
        k += 1
    Path(path).touch()
    return path


@dataclass
class ProviderProcess:
    kubeconfig: Path
    namespace: str
    topology: str
    checkout: Path
    derived: Resource
    extra: tuple[str, ...] = ()  # more `run` arguments (e.g. --max-concurrent 64)
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {**os.environ, "PYTHONPATH": f"{self.checkout / 'src'}:{self.checkout}"}
        # The checkout's own null process: its imports follow that checkout's layout.
        null_process = self.checkout / "bench" / "null_process.py"
        entry = [str(null_process)] if self.topology == "null" else ["-m", "provider.cli"]
        log = (Path(tempfile.gettempdir()) / f"provider-kserve-bench-{self.namespace}.log").open("wb")
        options = ["--kubeconfig", str(self.kubeconfig), "--namespace", self.namespace, "--no-leader-elect"]
        ports = ["--metrics-port", str(self.port), "--health-port", "0", "--validation-port", "0"]
        # BENCH_CALLS=PREFIX runs each provider process under cProfile, its stats saved at exit into
        # PREFIX.<namespace>.<k>: the Python calls the same work makes, a count the machine's load
        # does not move as it moves CPU seconds (bench/call_counts.py compares two runs).
        if prefix := os.environ.get("BENCH_CALLS"):
            entry = ["-m", "cProfile", "-o", _profile_path(prefix, self.namespace), *entry]
        self.proc = subprocess.Popen(
            [sys.executable, *entry, "run", *options, *ports, "--log-level", "warning", *self.extra],
            env=env,
            cwd=self.checkout,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        # BENCH_PROFILE=PREFIX samples each provider process with py-spy for its first 120 s (raw
        # stacks, for bench/profile_summary.py) into PREFIX.<namespace>.<k>.
        if prefix := os.environ.get("BENCH_PROFILE"):
            profile = _profile_path(prefix, self.namespace)
            py_spy = str(Path(sys.executable).with_name("py-spy"))  # installed by `.[bench]`
            subprocess.Popen(
                [py_spy, "record", "--pid", str(self.proc.pid), "--duration", "120", "--rate", "50", *RAW, profile],
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

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

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

    async def quiet(self, settle: float = 3.0) -> None:
        """Wait until the process stops writing."""
        last = self.scrape().writes()
        while True:
            await anyio.sleep(settle)
            now = self.scrape().writes()
            if now == last:
                return
            last = now


def start_cpu_hog(seconds: float) -> list[subprocess.Popen[bytes]]:
    """One busy process per core, each ending by itself after `seconds` (and stopped by us earlier)."""
    loop = f"import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end:\n    pass\n"
    return [subprocess.Popen([sys.executable, "-c", loop]) for _ in range(os.cpu_count() or 1)]
