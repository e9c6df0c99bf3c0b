"""Prometheus as a local process: a config written for the purpose, the chart's alerts loaded, its
HTTP API to query.

Built from its module by `dev/build-controlplane.sh prometheus` (cached), without the web UI's
assets (the module has their sources, not their build): the HTTP API answers, `/alerts` and the
graph pages do not. The end-to-end test scrapes the provider pod with it, and

    python dev/prometheus.py --target localhost:18080 [--port 19090]

runs one in the foreground until Ctrl-C (Tilt's `prometheus` resource): it scrapes the provider's
/metrics at the target every 5 s, labelled as the chart's PodMonitor would (namespace), and
evaluates the chart's PrometheusRule (`helm template`, the helm on PATH).
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml

from plane.constants import BUILD_SCRIPT, REPO_ROOT
from plane.processes import Process, free_port

CHART = REPO_ROOT / "charts" / "provider-kserve"
PROMETHEUS_RULE = "monitoring.coreos.com/v1/PrometheusRule"


def prometheus_binary() -> Path:
    """The cached build (built on first use: ~8 minutes cold on 2 cores, with promtool)."""
    out = subprocess.run(["bash", str(BUILD_SCRIPT), "prometheus"], stdout=subprocess.PIPE, text=True, check=True)
    return Path(out.stdout.strip().splitlines()[-1]) / "prometheus"


def chart_rules(helm: str, release: str, namespace: str, chart: Path = CHART) -> dict[str, Any]:
    """The rule groups of the chart's PrometheusRule, as `helm template` renders them."""
    rendered = subprocess.run(
        [helm, "template", release, str(chart), "-n", namespace, "--api-versions", PROMETHEUS_RULE,
         "--show-only", "templates/prometheusrule.yaml"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    spec: dict[str, Any] = yaml.safe_load(rendered)["spec"]
    return spec


@dataclass
class Prometheus:
    config: dict[str, Any]
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="provider-kserve-prometheus-")))
    host: str = "127.0.0.1"
    port: int = field(default_factory=free_port)
    process: Process | None = None

    @property
    def url(self) -> str:
        return f"http://{'localhost' if self.host == '0.0.0.0' else self.host}:{self.port}"

    def start(self, binary: Path | None = None, timeout: float = 60.0) -> Prometheus:
        config = self.workdir / "prometheus.yml"
        config.write_text(yaml.safe_dump(self.config))
        args = [
            str(binary or prometheus_binary()),
            f"--config.file={config}",
            f"--storage.tsdb.path={self.workdir / 'data'}",
            f"--web.listen-address={self.host}:{self.port}",
            "--log.level=warn",
        ]
        self.process = Process("prometheus", args, self.workdir / "prometheus.log")
        self.process.start()
        deadline = time.monotonic() + timeout
        while not self._ready():
            if not self.process.running() or time.monotonic() > deadline:
                tail = self.process.log_tail()
                self.stop()
                raise RuntimeError(f"prometheus did not become ready:\n{tail}")
            time.sleep(0.2)
        return self

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
            self.process = None

    def __enter__(self) -> Prometheus:
        return self.start() if self.process is None else self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.stop()

    def _ready(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/-/ready", timeout=2) as response:
                return bool(response.status == 200)
        except (OSError, urllib.error.URLError):
            return False

    def api(self, path: str, **params: str) -> Any:
        query = f"?{urllib.parse.urlencode(params)}" if params else ""
        with urllib.request.urlopen(f"{self.url}/api/v1/{path}{query}", timeout=10) as response:
            body = json.load(response)
        assert body["status"] == "success", body
        return body["data"]

    def query(self, expr: str) -> dict[tuple[tuple[str, str], ...], float]:
        """An instant query's vector: each series' labels (sorted pairs) → value."""
        data = self.api("query", query=expr)
        return {tuple(sorted(r["metric"].items())): float(r["value"][1]) for r in data["result"]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--target", required=True, help="host:port of the provider's plain-HTTP /metrics")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=19090)
    parser.add_argument("--release", default="provider-kserve")
    parser.add_argument("--namespace", default="kserve-system", help="the label the chart's PodMonitor would add")
    parser.add_argument("--helm", default="helm")
    parser.add_argument("--workdir", type=Path, help="for its config, rules and data (default: a new temporary one)")
    args = parser.parse_args(argv)
    workdir = args.workdir.resolve() if args.workdir else Path(tempfile.mkdtemp(prefix="provider-kserve-prometheus-"))
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "rules.yaml").write_text(yaml.safe_dump(chart_rules(args.helm, args.release, args.namespace)))
    config = {
        "global": {"scrape_interval": "5s", "evaluation_interval": "5s"},
        "rule_files": [str(workdir / "rules.yaml")],
        "scrape_configs": [
            {
                "job_name": "provider-kserve",
                "static_configs": [{"targets": [args.target], "labels": {"namespace": args.namespace}}],
            }
        ],
    }
    prometheus = Prometheus(config, workdir, args.host, args.port)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with prometheus:
        print(f"prometheus: the provider's alerts: {prometheus.url}/api/v1/alerts", flush=True)
        try:
            while prometheus.process is not None and prometheus.process.running():
                time.sleep(1)
        except KeyboardInterrupt:
            pass
        if prometheus.process is not None and not prometheus.process.running():
            print(prometheus.process.log_tail(), file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
