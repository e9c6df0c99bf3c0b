"""The Helm chart as the tests render it.

Helm is built from its Go module at the version pinned in dev/build-controlplane.sh and cached
(`HELM` overrides the binary). The chart is rendered from a scratch copy into which the KServe CRDs
and presets are vendored (hack/vendor-kserve.sh, from shared/crds/kserve) and in which the four
chart dependencies are stubbed: their real tarballs need a registry, and Helm refuses to render a
chart whose declared dependencies are missing even when they are disabled. Each stub renders one
ConfigMap holding the values it received, so the toggles and value plumbing are still checked.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from actors.interface import KubeObject
from plane import shared_dir
from tests.support.helm import helm

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "provider-kserve"
RELEASE_NAMESPACE = "kserve-system"

STUB_TEMPLATE = """apiVersion: v1
kind: ConfigMap
metadata:
  name: stub-{{ .Chart.Name | lower }}
  namespace: {{ .Release.Namespace }}
data:
  values: {{ toJson .Values | quote }}
"""


def prepare_chart(dest: Path) -> Path:
    """A copy of the chart with the KServe files vendored and the dependencies stubbed."""
    chart = dest / "provider-kserve"
    shutil.copytree(CHART, chart, ignore=shutil.ignore_patterns("charts", "Chart.lock", "serving.kserve.io_*.yaml"))
    kserve_src = shared_dir() / "crds" / "kserve"
    subprocess.run(
        ["bash", str(chart / "hack" / "vendor-kserve.sh"), str(chart)],
        check=True,
        capture_output=True,
        env={**os.environ, "KSERVE_SRC": str(kserve_src)},
    )
    for dep in yaml.safe_load((chart / "Chart.yaml").read_text())["dependencies"]:
        stub = chart / "charts" / dep["name"]
        (stub / "templates").mkdir(parents=True)
        (stub / "Chart.yaml").write_text(
            yaml.safe_dump({"apiVersion": "v2", "name": dep["name"], "version": dep["version"]})
        )
        (stub / "templates" / "values.yaml").write_text(STUB_TEMPLATE)
    return chart


def render(
    chart: Path,
    *sets: str,
    release: str = "provider-kserve",
    namespace: str = RELEASE_NAMESPACE,
    api_versions: Sequence[str] = (),
    stubs: bool = False,
) -> list[KubeObject]:
    """The rendered documents; the dependency stubs' ConfigMaps only with `stubs`."""
    args = ["template", release, str(chart), "--namespace", namespace]
    for value in sets:
        args += ["--set", value]
    for api in api_versions:
        args += ["--api-versions", api]
    proc = helm(*args, check=False)
    if proc.returncode != 0:
        raise RenderError(proc.stderr)
    docs = [doc for doc in yaml.safe_load_all(proc.stdout) if doc]
    return [d for d in docs if stubs or not d["metadata"]["name"].startswith("stub-")]


class RenderError(Exception):
    pass


def by_kind(docs: Sequence[KubeObject], kind: str) -> list[KubeObject]:
    return [d for d in docs if d["kind"] == kind]


def one(docs: Sequence[KubeObject], kind: str, name: str | None = None) -> KubeObject:
    found = [d for d in by_kind(docs, kind) if name is None or d["metadata"]["name"] == name]
    assert len(found) == 1, f"expected one {kind} {name or ''}, got {[d['metadata']['name'] for d in found]}"
    return found[0]


def container(docs: Sequence[KubeObject]) -> dict[str, Any]:
    deployment = one(docs, "Deployment")
    (main,) = deployment["spec"]["template"]["spec"]["containers"]
    assert isinstance(main, dict)
    return main


def parse_run_args(args: list[str]) -> Any:
    """The Deployment's args as `provider-kserve run` parses them (unknown flags fail)."""
    import argparse

    from provider.commands import run

    parser = argparse.ArgumentParser()
    run.register(parser.add_subparsers())
    return parser.parse_args(["run", *args])


def env(docs: Sequence[KubeObject]) -> dict[str, Any]:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container(docs)["env"]}
