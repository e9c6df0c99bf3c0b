"""The provider the way users run it: the image built by `make image`, `helm install` of the chart
as its README says, on a real node. The six checks of the in-cluster issue, in order (each builds
on the state the previous one left: installed, examples applied, upgraded, reinstalled).
"""

from __future__ import annotations

import functools
import json
import ssl
import subprocess
import urllib.request
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from cluster.node import NodeCluster
from tests.e2e.support import (
    CHART,
    EXAMPLES_NAMESPACE,
    INSTALL,
    KSERVE_RESOURCE,
    MEASUREMENTS,
    RELEASE,
    RELEASE_NAMESPACE,
    ROOT,
    build_image,
    derived_uids,
    examples,
    exec_in,
    get_json,
    instances,
    kubectl,
    provider_pods,
    provider_writes,
    reconciling_pods_in_order,
    remember_pod_memory,
    synced,
    the_leader,
)
from tests.support.helm import helm, helm_binary
from tests.support.waiting import wait_for_sync

# The Instance the tests change while pods hand over, and where the change shows.
CHANGED = "smollm2-cpu"
CHANGED_RESOURCE = KSERVE_RESOURCE["llm"]


@pytest.fixture(scope="module")
def release(node: NodeCluster, install: Callable[..., None]) -> str:
    install()
    return RELEASE


def set_replicas(node: NodeCluster, replicas: int) -> None:
    patch = {"spec": {"components": {"llmEngine": {"replicas": replicas}}}}
    kubectl(node, "patch", "instance", CHANGED, "-n", EXAMPLES_NAMESPACE, "--type=merge", "-p", json.dumps(patch))


def derived_replicas(node: NodeCluster) -> int | None:
    replicas: int | None = get_json(node, CHANGED_RESOURCE, "-n", EXAMPLES_NAMESPACE, CHANGED)["spec"].get("replicas")
    return replicas


def converged(node: NodeCluster, replicas: int) -> bool:
    return derived_replicas(node) == replicas and all(synced(i) for i in instances(node))


# -- 1 --------------------------------------------------------------------------------------------


def test_pod_runs_locked_down_ready_leader_and_publishes_provider(node: NodeCluster, release: str) -> None:
    leader = the_leader(node)
    name = leader["metadata"]["name"]
    (container,) = leader["spec"]["containers"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert leader["spec"]["serviceAccountName"] == release
    # What the kernel enforces, not only what the spec asks for.
    assert exec_in(node, name, "id", "-u").stdout.strip() == "65532"
    write = exec_in(node, name, "touch", "/probe")
    assert write.returncode != 0 and "Read-only file system" in write.stderr
    assert exec_in(node, name, "touch", "/tmp/probe").returncode == 0  # the chart's emptyDir

    provider = get_json(node, "provider", "provider-kserve")
    generated = yaml.safe_load((CHART / "generated" / "provider-spec.yaml").read_text())["spec"]
    for key, value in generated.items():
        if key != "uiSchema":
            assert provider["spec"][key] == value, key
    app_version = yaml.safe_load((CHART / "Chart.yaml").read_text())["appVersion"]
    assert provider["spec"]["release"]["version"] == app_version
    assert provider["spec"]["uiSchema"]["llm"]["modelCatalog"]


# -- 2 --------------------------------------------------------------------------------------------


def test_examples_reconciled_by_the_pod(node: NodeCluster, release: str) -> None:
    kubectl(node, "create", "namespace", EXAMPLES_NAMESPACE)
    for path in examples():
        kubectl(node, "apply", "-n", EXAMPLES_NAMESPACE, "-f", str(path))
    expected = {path.stem for path in examples()}
    wait_for_sync(
        lambda: len(instances(node)) == len(expected) and all(synced(i) for i in instances(node)),
        what="every example Instance synced with its KServe object",
        timeout=180,
        interval=0.5,
    )
    uids = derived_uids(node)
    leader = the_leader(node)["metadata"]["name"]
    for instance in instances(node):
        name = instance["metadata"]["name"]
        resource = KSERVE_RESOURCE[instance["spec"]["topology"]["type"]]
        obj = get_json(node, resource, "-n", EXAMPLES_NAMESPACE, name, "--show-managed-fields")
        assert obj["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "everest"
        (owner,) = obj["metadata"]["ownerReferences"]
        assert owner["uid"] == instance["metadata"]["uid"] and owner["controller"] is True
        assert {m["manager"] for m in obj["metadata"]["managedFields"]} == {"provider-kserve"}
    assert len(uids) == len(expected)
    # Written by the pod: every write of the provider's identity came with the pod's token ...
    writes = [w for w in provider_writes(node) if (w["objectRef"] or {}).get("namespace") == EXAMPLES_NAMESPACE]
    assert writes and {w["pod"] for w in writes} == {leader}
    assert {w["objectRef"]["resource"] for w in writes} >= {"instances", "llminferenceservices", "inferenceservices"}
    # ... and no provider process runs on this host outside the kubelet's pods.
    outside = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
                cgroup = (proc / "cgroup").read_text()
            except OSError:
                continue
            if "provider-kserve run" in cmdline and "kubepods" not in cgroup:
                outside.append(cmdline)
    assert not outside


# -- 3 --------------------------------------------------------------------------------------------

_LIST_CONFIGMAPS = """
import os, ssl, urllib.error, urllib.request
sa = "/var/run/secrets/kubernetes.io/serviceaccount"
request = urllib.request.Request(
    f"https://{os.environ['KUBERNETES_SERVICE_HOST']}:{os.environ['KUBERNETES_SERVICE_PORT']}/api/v1/configmaps",
    headers={"Authorization": "Bearer " + open(f"{sa}/token").read()},
)
try:
    urllib.request.urlopen(request, context=ssl.create_default_context(cafile=f"{sa}/ca.crt"))
    print(200)
except urllib.error.HTTPError as err:
    print(err.code)
"""


def test_doctor_in_the_pod_and_rbac_denies_the_rest(node: NodeCluster, release: str) -> None:
    leader = the_leader(node)["metadata"]["name"]
    doctor = exec_in(node, leader, "provider-kserve", "doctor")
    (ROOT / "build").mkdir(exist_ok=True)
    (ROOT / "build" / "e2e-doctor.txt").write_text(doctor.stdout + doctor.stderr)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    rows = [line.split() for line in doctor.stdout.splitlines()[1:] if line.strip() and not line.startswith("all ")]
    assert rows and all(row[1] in ("ok", "present") for row in rows), doctor.stdout
    assert any(row[0] == "permission" for row in rows)
    assert "required checks ok" in doctor.stdout
    # The chart grants nothing on ConfigMaps: the pod's own token is refused.
    denied = exec_in(node, leader, "python", "-c", _LIST_CONFIGMAPS)
    assert denied.stdout.strip() == "403", denied.stderr
    identity = f"system:serviceaccount:{RELEASE_NAMESPACE}:{release}"
    can = subprocess.run(
        [
            node.kubectl_path,
            f"--kubeconfig={node.kubeconfig}",
            "auth",
            "can-i",
            "delete",
            "namespaces",
            f"--as={identity}",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert can.stdout.strip() == "no" and can.returncode == 1


# -- 4 --------------------------------------------------------------------------------------------


def _http(url: str, body: dict[str, Any] | None = None, token: str | None = None) -> tuple[int, str]:
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Content-Type": "application/json"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, data=data, headers=headers)
    # The metrics endpoint's certificate is the provider's own self-signed one (metrics.tlsSecretName
    # unset), as Prometheus scrapes it with insecureSkipVerify.
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(request, timeout=10, context=context) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as err:
        return err.code, err.read().decode()


def _ok(answer: tuple[int, str]) -> tuple[int, str] | None:
    return answer if answer[0] == 200 else None


def test_endpoints_answer_through_the_service(node: NodeCluster, release: str) -> None:
    service = get_json(node, "service", "-n", RELEASE_NAMESPACE, release)
    ip = service["spec"]["clusterIP"]
    ports = {p["name"]: p["port"] for p in service["spec"]["ports"]}
    # From the host through kube-proxy's rules for the ClusterIP, as a client pod would, once
    # kube-proxy has synced the ready pods' endpoints.
    programmed = functools.partial(node.service_programmed, RELEASE_NAMESPACE, release)
    wait_for_sync(programmed, what="kube-proxy's rules for the provider's endpoints", timeout=60, interval=0.5)
    base = f"http://{ip}:{ports['http']}"
    for path in ("/healthz", "/readyz"):
        assert _http(base + path)[0] == 200, path
    # metrics.protection rbac (the default): HTTPS, and only a token allowed to get /metrics.
    metrics_url = f"https://{ip}:{ports['metrics']}/metrics"
    assert _http(metrics_url)[0] == 401
    kubectl(node, "create", "serviceaccount", "scraper", "-n", RELEASE_NAMESPACE)
    kubectl(node, "create", "serviceaccount", "stranger", "-n", RELEASE_NAMESPACE)
    kubectl(
        node, "create", "clusterrolebinding", "e2e-scraper", f"--clusterrole={release}-metrics-reader",
        f"--serviceaccount={RELEASE_NAMESPACE}:scraper",
    )  # fmt: skip
    stranger = kubectl(node, "create", "token", "stranger", "-n", RELEASE_NAMESPACE).strip()
    assert _http(metrics_url, token=stranger)[0] == 403
    scraper = kubectl(node, "create", "token", "scraper", "-n", RELEASE_NAMESPACE).strip()
    status, metrics = wait_for_sync(
        lambda: _ok(_http(metrics_url, token=scraper)), what="/metrics for the scraper", timeout=180, interval=0.5
    )
    assert status == 200 and "provider_reconciles_total" in metrics
    instance = yaml.safe_load((ROOT / "examples" / "instance-predictor.yaml").read_text())
    status, answer = _http(base + "/validate", {"operation": "CREATE", "object": instance})
    assert status == 200 and json.loads(answer) == {"allowed": True}
    instance["spec"]["topology"]["type"] = "no-such-topology"
    status, answer = _http(base + "/validate", {"operation": "CREATE", "object": instance})
    assert json.loads(answer)["allowed"] is False and json.loads(answer)["message"]


# -- 5 --------------------------------------------------------------------------------------------


def test_upgrade_to_a_rebuilt_image_hands_over(node: NodeCluster, release: str) -> None:
    before = derived_uids(node)
    old = the_leader(node)["metadata"]["name"]
    remember_pod_memory(node)
    archive = build_image(tag="e2e-rebuilt", extra_args=f"--label org.openeverest.e2e-build={uuid.uuid4().hex}")
    node.import_image(archive)
    mark = datetime.now(UTC)
    upgrade = subprocess.Popen(
        [helm_binary(), *INSTALL, "--set", "image.tag=e2e-rebuilt", "--timeout", "5m"],
        env={"KUBECONFIG": str(node.kubeconfig), "PATH": "/usr/bin:/bin", "HOME": "/tmp"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    set_replicas(node, 2)  # changed while the pods hand over
    output, _ = upgrade.communicate(timeout=400)
    assert upgrade.returncode == 0, output
    new = the_leader(node, not_named=old)
    assert new["spec"]["containers"][0]["image"].endswith(":e2e-rebuilt")
    wait_for_sync(
        lambda: converged(node, 2), what="the change made during the upgrade to converge", timeout=180, interval=0.5
    )
    assert derived_uids(node) == before  # nothing lost, nothing recreated
    order = reconciling_pods_in_order(provider_writes(node, since=mark))
    assert len(order) == len(set(order)), f"pods wrote interleaved: {order}"
    assert wait_for_sync(
        lambda: old not in {p["metadata"]["name"] for p in provider_pods(node)},
        what="old pod gone",
        timeout=180,
        interval=0.5,
    )


def test_deleted_leader_replacement_converges_a_change(node: NodeCluster, release: str) -> None:
    old = the_leader(node)["metadata"]["name"]
    remember_pod_memory(node)
    mark = datetime.now(UTC)
    kubectl(node, "delete", "pod", "-n", RELEASE_NAMESPACE, old, "--wait=false")
    set_replicas(node, 3)
    new = the_leader(node, not_named=old)["metadata"]["name"]
    wait_for_sync(lambda: converged(node, 3), what="the replacement to converge the change", timeout=180, interval=0.5)
    writes = [w for w in provider_writes(node, since=mark) if w["objectRef"].get("resource") == "llminferenceservices"]
    assert writes and writes[-1]["pod"] == new and writes[-1]["objectRef"]["name"] == CHANGED
    order = reconciling_pods_in_order(provider_writes(node, since=mark))
    assert len(order) == len(set(order)), f"pods wrote interleaved: {order}"


# -- 6 --------------------------------------------------------------------------------------------


def test_uninstall_keeps_instances_and_reinstall_adopts_them(
    node: NodeCluster, release: str, install: Callable[..., None]
) -> None:
    remember_pod_memory(node)
    before = derived_uids(node)
    instance_uids = {i["metadata"]["name"]: i["metadata"]["uid"] for i in instances(node)}
    helm("uninstall", release, "-n", RELEASE_NAMESPACE, "--wait", kubeconfig=node.kubeconfig)
    wait_for_sync(lambda: not provider_pods(node), what="the provider's pods gone", timeout=180, interval=0.5)
    for kind, name in (("deployment", release), ("serviceaccount", release), ("service", release)):
        assert not kubectl(node, "get", kind, "-n", RELEASE_NAMESPACE, name, "--ignore-not-found", "-o", "name")
    assert not kubectl(node, "get", "clusterrole", release, "--ignore-not-found", "-o", "name")
    assert not kubectl(node, "get", "provider", "provider-kserve", "--ignore-not-found", "-o", "name")
    # What the README promises stays: the Instances (with the provider's finalizer) and their objects.
    assert {i["metadata"]["name"]: i["metadata"]["uid"] for i in instances(node)} == instance_uids
    assert all(i["metadata"].get("finalizers") for i in instances(node))
    assert derived_uids(node) == before

    mark = datetime.now(UTC)
    install()  # the README's command again, with the chart's own image
    the_leader(node)
    set_replicas(node, 1)
    wait_for_sync(
        lambda: converged(node, 1), what="the reinstalled provider to converge a change", timeout=180, interval=0.5
    )
    assert derived_uids(node) == before  # adopted, not recreated
    creates = [w for w in provider_writes(node, since=mark) if w["verb"] == "create"]
    assert not [w for w in creates if w["objectRef"].get("namespace") == EXAMPLES_NAMESPACE]
    remember_pod_memory(node)
    peaks = node.peak_rss_kib()
    MEASUREMENTS["cluster_peak_rss_mib"] = {name: round(kib / 1024) for name, kib in sorted(peaks.items())}
    MEASUREMENTS["cluster_peak_rss_total_mib"] = round(sum(peaks.values()) / 1024)
