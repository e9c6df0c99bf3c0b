"""Helpers of the end-to-end tests: the repository's image, chart release and node-mode cluster as the
tests deploy them, the figures the session reports; kubectl against the cluster, the provider's pods
and Lease, its derived objects, and the API server's audit log (who wrote what, from which pod)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import time
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from cluster.node import NodeCluster
from kservestack import KSERVE_NAMESPACE, KServeStack
from plane import ControlPlaneError
from tests.support.helm import helm
from tests.support.waiting import wait_for_sync

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


def install_chart(node: NodeCluster, *sets: str) -> None:
    """The README's `helm upgrade --install` (the chart's inputs vendored first), `sets` appended."""
    chart_inputs()
    args = [*INSTALL, *(arg for value in sets for arg in ("--set", value))]
    helm(*args, "--timeout", "5m", kubeconfig=node.kubeconfig, timeout=400)


@contextlib.asynccontextmanager
async def node_cluster(
    *images: Path,
    kserve: bool = False,
    kserve_in_release_namespace: bool = False,
    metrics_server: bool = False,
    hpa_scale_down_window_seconds: int | None = None,
) -> AsyncIterator[NodeCluster]:
    """A node-mode cluster with every CRD, the provider image and `images` imported, and with
    `kserve` KServe's real controllers against it (dev/kservestack, out-of-cluster); stopped (host
    restored) on exit. `kserve_in_release_namespace`: the controllers run in the chart's release
    namespace and take their LLM presets from the chart (llmPresets, cpuProfile), as the chart's
    bundled controllers do, instead of the stack's defaults in `kserve`. `metrics_server`: the
    resource metrics API the HPA controller reads (dev/cluster/metrics_server.py);
    `hpa_scale_down_window_seconds`: its scale-down stabilization window (NodeCluster)."""
    if os.geteuid() != 0:
        pytest.fail("the end-to-end tests need root (run `make e2e` as root)", pytrace=False)
    started = time.monotonic()
    image = build_image()
    MEASUREMENTS.setdefault("image_build_seconds", round(time.monotonic() - started, 1))
    cluster = NodeCluster(
        images=(image, *images),
        metrics_server=metrics_server,
        hpa_scale_down_window_seconds=hpa_scale_down_window_seconds,
    )
    try:
        await cluster.start()
    except ControlPlaneError as err:
        pytest.fail(f"the node-mode cluster could not start: {err}", pytrace=False)
    MEASUREMENTS.setdefault("cluster_start_seconds", round(cluster.timings["total_start"], 1))
    if metrics_server:
        MEASUREMENTS["metrics_server_ready_seconds"] = round(cluster.timings["metrics_server_ready"], 1)
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


SERVICE_ACCOUNT = f"system:serviceaccount:{RELEASE_NAMESPACE}:{RELEASE}"
POD_SELECTOR = f"app.kubernetes.io/name=provider-kserve,app.kubernetes.io/instance={RELEASE}"
EXAMPLES_NAMESPACE = "models"
# The KServe kind each topology becomes (named like the Instance).
KSERVE_RESOURCE = {"llm": "llminferenceservices.serving.kserve.io", "predictor": "inferenceservices.serving.kserve.io"}
# Writes that are not reconciling: leader election, the doctor's access reviews, events.
_NOT_RECONCILING = {"leases", "selfsubjectaccessreviews", "events"}


def kubectl(node: NodeCluster, *args: str, check: bool = True) -> str:
    return node.kubectl(*args, check=check)


def get_json(node: NodeCluster, *args: str) -> dict[str, Any]:
    out = node.kubectl("get", *args, "-o", "json")
    result: dict[str, Any] = json.loads(out)
    return result


def provider_pods(node: NodeCluster) -> list[dict[str, Any]]:
    pods: list[dict[str, Any]] = get_json(node, "pods", "-n", RELEASE_NAMESPACE, "-l", POD_SELECTOR)["items"]
    return pods


def ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    deleting = pod["metadata"].get("deletionTimestamp")
    return not deleting and any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)


def lease_holder(node: NodeCluster) -> str:
    lease = get_json(node, "lease", "-n", RELEASE_NAMESPACE, f"{RELEASE}-leader")
    holder: str = lease["spec"].get("holderIdentity") or ""
    return holder


def the_leader(node: NodeCluster, not_named: str = "") -> dict[str, Any]:
    """The single Ready provider pod, once it holds the Lease (its identity is `<pod>-<n>`)."""

    def probe() -> dict[str, Any] | None:
        pods = [p for p in provider_pods(node) if ready(p) and p["metadata"]["name"] != not_named]
        if len(pods) != 1:
            return None
        name = pods[0]["metadata"]["name"]
        return pods[0] if lease_holder(node).rsplit("-", 1)[0] == name else None

    return wait_for_sync(probe, what="one Ready provider pod holding the Lease", timeout=180, interval=0.5)


def exec_in(node: NodeCluster, pod: str, *command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [node.kubectl_path, f"--kubeconfig={node.kubeconfig}", "exec", "-n", RELEASE_NAMESPACE, pod, "--", *command],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def examples() -> list[Path]:
    return sorted((Path(__file__).resolve().parents[2] / "examples").glob("*.yaml"))


def instances(node: NodeCluster) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = get_json(node, "instances", "-n", EXAMPLES_NAMESPACE)["items"]
    return items


def derived_uids(node: NodeCluster) -> dict[str, str]:
    """`<resource>/<name>` -> uid of each Instance's KServe object."""
    uids = {}
    for instance in instances(node):
        resource = KSERVE_RESOURCE[instance["spec"]["topology"]["type"]]
        name = instance["metadata"]["name"]
        obj = get_json(node, resource, "-n", EXAMPLES_NAMESPACE, name)
        uids[f"{resource}/{name}"] = obj["metadata"]["uid"]
    return uids


def synced(instance: dict[str, Any]) -> bool:
    status = instance.get("status") or {}
    conditions = status.get("conditions") or []
    generation = instance["metadata"].get("generation")
    return bool(status.get("phase")) and any(
        c["type"] == "Synced" and c["status"] == "True" and c.get("observedGeneration") == generation
        for c in conditions
    )


# -- the audit log -----------------------------------------------------------------------------------


def audit_time(event: dict[str, Any]) -> datetime:
    return datetime.fromisoformat(event["stageTimestamp"].replace("Z", "+00:00"))


def provider_writes(node: NodeCluster, since: datetime | None = None) -> list[dict[str, Any]]:
    """The provider ServiceAccount's writes (one audit event each, oldest first), each with the
    name of the pod whose token made it (`pod`)."""
    writes = []
    for event in node.audit_events():
        user = event.get("user") or {}
        if event.get("stage") != "ResponseComplete" or user.get("username") != SERVICE_ACCOUNT:
            continue
        if since is not None and audit_time(event) < since:
            continue
        pod = ((user.get("extra") or {}).get("authentication.kubernetes.io/pod-name") or [""])[0]
        writes.append({**event, "pod": pod})
    return sorted(writes, key=audit_time)


def reconciling_pods_in_order(writes: list[dict[str, Any]]) -> list[str]:
    """The pods that wrote derived objects or Instances, in order, consecutive repeats merged:
    [A, B] is a handover, [A, B, A] would be two pods reconciling at once."""
    order: list[str] = []
    for write in writes:
        if (write.get("objectRef") or {}).get("resource") in _NOT_RECONCILING:
            continue
        if not order or order[-1] != write["pod"]:
            order.append(write["pod"])
    return order


def remember_pod_memory(node: NodeCluster) -> None:
    """The peak memory of the provider pods still there, kept as a figure for the summary."""
    for pod in provider_pods(node):
        peak = node.pod_peak_memory_bytes(pod["metadata"]["uid"])
        current = MEASUREMENTS.get("provider_pod_peak_mib", 0)
        MEASUREMENTS["provider_pod_peak_mib"] = max(current, round(peak / 2**20, 1))
