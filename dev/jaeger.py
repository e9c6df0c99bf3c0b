"""Jaeger v2 as a local process: OTLP in (gRPC and HTTP), spans kept in memory, the query API out.

Built from its Go module by `dev/build-controlplane.sh jaeger` (cached). The module carries no web
UI (release builds embed a build of the separate jaeger-ui repository), so `/` is Jaeger's
placeholder page and people read traces through the query API: `search_link` is the JSON of the
provider's latest traces, and `traces` what the tests read.

    python dev/jaeger.py [--host 127.0.0.1] [--otlp-http-port 4318] [--query-port 16686]

runs one in the foreground until Ctrl-C (Tilt's `jaeger` resource, the demo).
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any

from plane.constants import BUILD_SCRIPT
from plane.processes import Process, free_port

SERVICE = "provider-kserve"


def jaeger_binary() -> Path:
    """The cached build (built on first use: ~14 minutes cold on 2 cores)."""
    out = subprocess.run(["bash", str(BUILD_SCRIPT), "jaeger"], stdout=subprocess.PIPE, text=True, check=True)
    return Path(out.stdout.strip().splitlines()[-1]) / "jaeger"


@dataclass
class Jaeger:
    host: str = "127.0.0.1"
    otlp_http_port: int = field(default_factory=free_port)
    otlp_grpc_port: int = field(default_factory=free_port)
    query_port: int = field(default_factory=free_port)
    query_grpc_port: int = field(default_factory=free_port)
    # For its config and log: a temporary one (None) is made at start and removed on exit.
    workdir: Path | None = None
    process: Process | None = None
    _temporary: Path | None = None

    @property
    def otlp_http(self) -> str:
        """The OTLP/HTTP base URL (OTEL_EXPORTER_OTLP_ENDPOINT: the exporter appends /v1/traces)."""
        return f"http://{self.host}:{self.otlp_http_port}"

    @property
    def otlp_grpc(self) -> str:
        return f"http://{self.host}:{self.otlp_grpc_port}"

    @property
    def query(self) -> str:
        return f"http://{self.host}:{self.query_port}"

    def search_link(self, service: str = SERVICE) -> str:
        """The service's latest traces as JSON, for a browser (the query API the UI would use)."""
        return f"{self.query}/api/traces?" + urllib.parse.urlencode({"service": service, "limit": 20})

    def config(self) -> str:
        """Only what the tests and the dev loop use: no sampling endpoints, no self-telemetry port."""
        return json.dumps(
            {
                "service": {
                    "extensions": ["jaeger_storage", "jaeger_query"],
                    "pipelines": {
                        "traces": {
                            "receivers": ["otlp"],
                            "processors": ["batch"],
                            "exporters": ["jaeger_storage_exporter"],
                        }
                    },
                    "telemetry": {"metrics": {"level": "none"}, "logs": {"level": "warn"}},
                },
                "extensions": {
                    "jaeger_storage": {"backends": {"memory": {"memory": {"max_traces": 100000}}}},
                    "jaeger_query": {
                        "storage": {"traces": "memory"},
                        # Its own spans would go to an OTLP collector on localhost:4317 (none), and
                        # its shutdown would wait 10 s for that export.
                        "enable_tracing": False,
                        "http": {"endpoint": f"{self.host}:{self.query_port}"},
                        "grpc": {"endpoint": f"{self.host}:{self.query_grpc_port}"},
                    },
                },
                "receivers": {
                    "otlp": {
                        "protocols": {
                            "grpc": {"endpoint": f"{self.host}:{self.otlp_grpc_port}"},
                            "http": {"endpoint": f"{self.host}:{self.otlp_http_port}"},
                        }
                    }
                },
                "processors": {"batch": {"timeout": "100ms"}},
                "exporters": {"jaeger_storage_exporter": {"trace_storage": "memory"}},
            },
            indent=1,
        )

    def start(self, binary: Path | None = None, timeout: float = 60.0) -> Jaeger:
        if self.workdir is None:
            self.workdir = self._temporary = Path(tempfile.mkdtemp(prefix="provider-kserve-jaeger-"))
        config = self.workdir / "jaeger.json"
        config.write_text(self.config())
        # The collector's config loader takes YAML, of which JSON is a subset.
        args = [str(binary or jaeger_binary()), "--config", f"file:{config}"]
        self.process = Process("jaeger", args, self.workdir / "jaeger.log")
        self.process.start()
        deadline = time.monotonic() + timeout
        while not self._answers():
            if not self.process.running():
                raise RuntimeError(f"jaeger exited:\n{self.process.log_tail()}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"jaeger did not answer on {self.query} within {timeout:.0f}s")
            time.sleep(0.2)
        return self

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.query}/api/v3/services", timeout=2) as response:
                return bool(response.status == 200)
        except (OSError, urllib.error.URLError):
            return False

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()
            self.process = None

    def __enter__(self) -> Jaeger:
        return self.start() if self.process is None else self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.stop()
        if self._temporary is not None:
            shutil.rmtree(self._temporary, ignore_errors=True)
            self.workdir = self._temporary = None

    def traces(self, service: str = SERVICE, lookback: timedelta = timedelta(hours=1)) -> list[dict[str, Any]]:
        """The service's spans as Jaeger's query API (api_v3, OTLP JSON) returns them, flattened:
        each span with its `resource` and `scope` attributes beside it. [] when there are none."""
        now = datetime.now(UTC)
        query = urllib.parse.urlencode(
            {
                "query.service_name": service,
                "query.start_time_min": (now - lookback).isoformat().replace("+00:00", "Z"),
                "query.start_time_max": (now + timedelta(minutes=1)).isoformat().replace("+00:00", "Z"),
                "query.num_traces": 1000,
            }
        )
        try:
            with urllib.request.urlopen(f"{self.query}/api/v3/traces?{query}", timeout=10) as response:
                body = json.load(response)
        except urllib.error.HTTPError as err:
            if err.code == 404:  # "trace not found": nothing yet
                return []
            raise
        spans = []
        for resource_spans in body["result"]["resourceSpans"]:
            for scope_spans in resource_spans.get("scopeSpans", []):
                spans += scope_spans.get("spans", [])
        return spans


# What Jaeger's query service adds to a span it returns (e.g. `@jaeger@warnings`: "parent span ID=…
# is not in the trace; skipping clock skew adjustment", when its adjusters see a trace in parts):
# its own notes, not attributes the provider set.
JAEGER_NOTES = "@jaeger@"


def attributes(span: dict[str, Any]) -> dict[str, Any]:
    """An OTLP JSON span's attributes as plain values (without Jaeger's own notes)."""
    out = {}
    for attribute in span.get("attributes", []):
        if attribute["key"].startswith(JAEGER_NOTES):
            continue
        value = attribute["value"]
        (kind, raw), *_ = value.items() or [("", None)]
        out[attribute["key"]] = int(raw) if kind == "intValue" else raw
    return out


def reconcile_tree(spans: list[dict[str, Any]], key: str) -> list[str]:
    """The reconcile of Instance `key` that did the most (the latest of those), as indented lines
    (the demo prints it): each span's name, its attributes and, for an error, the message."""
    children: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        children.setdefault(span.get("parentSpanId", ""), []).append(span)

    def size(span: dict[str, Any]) -> int:
        return 1 + sum(size(child) for child in children.get(span["spanId"], []))

    roots = [s for s in children.get("", []) if s["name"] == "reconcile" and attributes(s).get("instance") == key]
    if not roots:
        return []
    lines: list[str] = []

    def walk(span: dict[str, Any], depth: int) -> None:
        seconds = (int(span["endTimeUnixNano"]) - int(span["startTimeUnixNano"])) / 1e9
        shown = ", ".join(f"{k}={v}" for k, v in attributes(span).items() if k != "instance")
        error = (span.get("status") or {}).get("message", "")
        lines.append(
            f"{'  ' * depth}{span['name']} {seconds * 1000:.1f} ms {shown}" + (f" ERROR {error}" if error else "")
        )
        for child in sorted(children.get(span["spanId"], []), key=lambda s: int(s["startTimeUnixNano"])):
            walk(child, depth + 1)

    walk(max(roots, key=lambda s: (size(s), int(s["startTimeUnixNano"]))), 0)
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--otlp-http-port", type=int, default=4318)
    parser.add_argument("--otlp-grpc-port", type=int, default=4317)
    parser.add_argument("--query-port", type=int, default=16686)
    parser.add_argument("--query-grpc-port", type=int, default=16685)
    parser.add_argument("--workdir", type=Path, help="for its config and log (default: a new temporary directory)")
    args = parser.parse_args(argv)
    jaeger = Jaeger(args.host, args.otlp_http_port, args.otlp_grpc_port, args.query_port, args.query_grpc_port)
    if args.workdir:
        args.workdir.mkdir(parents=True, exist_ok=True)
        jaeger.workdir = args.workdir.resolve()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with jaeger:
        print(f"jaeger: OTLP {jaeger.otlp_http} (HTTP), {jaeger.otlp_grpc} (gRPC)", flush=True)
        print(f"jaeger: the provider's traces: {jaeger.search_link()}", flush=True)
        try:
            while jaeger.process is not None and jaeger.process.running():
                time.sleep(1)
        except KeyboardInterrupt:
            pass
        if jaeger.process is not None and not jaeger.process.running():
            print(jaeger.process.log_tail(), file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
