"""End-to-end fixtures: the node-mode cluster (dev/cluster) with the provider image built by
dev/build-image.sh imported, and the chart installed the way its README tells users.

Everything here is real: containerd runs the image, the kubelet runs the pod under the chart's
ServiceAccount, kube-proxy routes the Service. Needs root (`make e2e`). The whole session is
bracketed by host snapshots: whatever the clusters changed on the host must be gone at the end.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from cluster import host, snapshot
from cluster.node import NodeCluster
from controlplane import ControlPlaneError
from kservestack import KSERVE_NAMESPACE, KServeStack
from tests.support.helm import helm

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "provider-kserve"
IMAGE_SCRIPT = ROOT / "dev" / "build-image.sh"
RELEASE = "provider-kserve"
RELEASE_NAMESPACE = "kserve-system"
# The chart README's install for a cluster that already runs KServe and cert-manager.
INSTALL = (
    "upgrade", "--install", RELEASE, str(CHART), "-n", RELEASE_NAMESPACE, "--create-namespace",
    "--skip-crds", "-f", str(CHART / "values-external-kserve.yaml"), "--wait",
)  # fmt: skip
# Figures for the closing summary (no assertion is made on them).
MEASUREMENTS: dict[str, Any] = {}
MEASUREMENTS_FILE = ROOT / "build" / "e2e-measurements.json"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/e2e/" in str(item.path):
            item.add_marker(pytest.mark.e2e)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not MEASUREMENTS:
        return
    MEASUREMENTS_FILE.parent.mkdir(parents=True, exist_ok=True)
    MEASUREMENTS_FILE.write_text(json.dumps(MEASUREMENTS, indent=1))
    terminalreporter.section("e2e measurements")
    for key, value in MEASUREMENTS.items():
        terminalreporter.write_line(f"{key}: {value}")


@pytest.fixture(scope="session", autouse=True)
def host_left_clean() -> Iterator[None]:
    """The host after the end-to-end tests is the host before them. The host lock is held
    throughout (it is re-entrant for this session's own clusters), so that no other node-mode
    cluster on this host starts or stops in between and shows up in the comparison. The Debian
    packages the node and the image builds need are installed first: they are what the set-up
    installs for good (as `make` installs the venv), not a change a teardown undoes."""
    host.ensure_packages()
    subprocess.run(["bash", str(IMAGE_SCRIPT), "packages"], check=True)
    with host.host_lock():
        before = snapshot.take()
        yield
        changes = snapshot.diff(before, snapshot.take())
    assert not changes, "the e2e clusters left host changes behind:\n" + "\n".join(changes)


def build_image(tag: str | None = None, extra_args: str = "", target: str = "provider") -> Path:
    """dev/build-image.sh `target` (cached layers: seconds when nothing changed); its archive."""
    env = {**os.environ, **({"IMAGE_TAG": tag} if tag else {}), "IMAGE_BUILD_ARGS": extra_args}
    proc = subprocess.run(["bash", str(IMAGE_SCRIPT), target], capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        pytest.fail(f"{IMAGE_SCRIPT} failed:\n{proc.stderr[-3000:]}", pytrace=False)
    return Path(proc.stdout.strip().splitlines()[-1])


def chart_inputs() -> None:
    """The chart's gitignored inputs (`make chart-deps vendor-kserve-crds`), when missing."""
    if not (CHART / "charts" / "cert-manager").is_dir():
        subprocess.run(["bash", str(CHART / "hack" / "vendor-chart-deps.sh")], check=True, capture_output=True)
    if not (CHART / "files" / "kserve" / "llmisvcconfigs.yaml").is_file():
        shared = os.environ.get("PROVIDER_KSERVE_SHARED") or str(ROOT.parent / "shared")
        env = {**os.environ, "KSERVE_SRC": str(Path(shared) / "crds" / "kserve")}
        subprocess.run(["bash", str(CHART / "hack" / "vendor-kserve.sh")], check=True, capture_output=True, env=env)


@contextlib.asynccontextmanager
async def node_cluster(
    *images: Path, kserve: bool = False, kserve_in_release_namespace: bool = False
) -> AsyncIterator[NodeCluster]:
    """A node-mode cluster with every CRD, the provider image and `images` imported, and with
    `kserve` KServe's real controllers against it (dev/kservestack, out-of-cluster); stopped (host
    restored) on exit. `kserve_in_release_namespace`: the controllers run in the chart's release
    namespace and take their LLM presets from the chart (llmPresets, cpuProfile), as the chart's
    bundled controllers do, instead of the stack's defaults in `kserve`."""
    if os.geteuid() != 0:
        pytest.fail("the end-to-end tests need root (run `make e2e` as root)", pytrace=False)
    started = time.monotonic()
    image = build_image()
    MEASUREMENTS.setdefault("image_build_seconds", round(time.monotonic() - started, 1))
    cluster = NodeCluster(images=(image, *images))
    try:
        await cluster.start()
    except ControlPlaneError as err:
        pytest.fail(f"the node-mode cluster could not start: {err}", pytrace=False)
    MEASUREMENTS.setdefault("cluster_start_seconds", round(cluster.timings["total_start"], 1))
    try:
        if kserve:
            try:
                chart_presets = kserve_in_release_namespace
                namespace = RELEASE_NAMESPACE if chart_presets else KSERVE_NAMESPACE
                stack = KServeStack(cluster.plane, fake_node=False, namespace=namespace, llm_presets=not chart_presets)
                await stack.start()
            except ControlPlaneError as err:
                pytest.fail(f"KServe's controllers could not start on the node-mode cluster: {err}", pytrace=False)
            MEASUREMENTS["kserve_start_seconds"] = round(stack.timings["total_start"], 1)
        yield cluster
    finally:
        cluster.stop()


@pytest_asyncio.fixture(scope="module")
async def node() -> AsyncIterator[NodeCluster]:
    """A node-mode cluster with every CRD and the provider image; stopped (host restored) after
    the module."""
    async with node_cluster() as cluster:
        yield cluster


@pytest.fixture(scope="module")
def install(node: NodeCluster) -> Callable[..., None]:
    """Runs the README's `helm upgrade --install` (extra `--set`s appended)."""
    chart_inputs()

    def run(*sets: str) -> None:
        args = [*INSTALL, *(arg for value in sets for arg in ("--set", value))]
        helm(*args, "--timeout", "5m", kubeconfig=node.kubeconfig, timeout=400)

    return run
