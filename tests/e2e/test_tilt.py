"""`tilt up` for real: the Tiltfile under the pinned tilt (`dev/tilt`), in a clean copy of the
repository (what a fresh clone has: no venv, no build/, no vendored chart inputs).

- `local` target (root): `tilt ci` starts the node-mode cluster, builds the image the way
  `make image` does and imports it into the node, installs the chart and examples/, and exits 0
  once the provider pod is Ready and every example Instance has its KServe objects. Then, under
  `tilt up`, a log line edited in src/ reaches the running pod by live update (the same pod and
  container, no image build), and `tilt down` stops the cluster, leaving the host as it was.
- `process` target, as an unprivileged user: the no-node control plane and `provider-kserve run`
  as a process; `tilt ci` as above, then an edit in src/ restarts the process with the change.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import yaml

from cluster import background, host, snapshot
from plane import free_port, shared_dir
from tests.e2e.support import (
    KSERVE_RESOURCE,
    MEASUREMENTS,
    POD_SELECTOR,
    RELEASE,
    RELEASE_NAMESPACE,
    ROOT,
    ready,
    synced,
)
from tests.e2e.tilt_support import RUN_MODULE, Tilt, base_env, built, clean_copy, mark_log_line
from tests.support.waiting import NotYet, wait_for_sync

# An unprivileged user every Debian system has.
NOBODY = 65534
# The Tilt resources that must be green before a change is made.
SETTLED = (RELEASE, "examples", "instance-status")


class Kubectl:
    """The pinned kubectl against one kubeconfig."""

    def __init__(self, kubeconfig: Path) -> None:
        self.binary = str(built("node") / "kubectl")
        self.kubeconfig = kubeconfig

    def __call__(self, *args: str, check: bool = True) -> str:
        proc = subprocess.run([self.binary, f"--kubeconfig={self.kubeconfig}", *args], capture_output=True,
                              text=True, timeout=120, check=False)  # fmt: skip
        if check and proc.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)}: {proc.stderr}")
        return proc.stdout

    def json(self, *args: str) -> dict[str, Any]:
        result: dict[str, Any] = json.loads(self("get", *args, "-o", "json"))
        return result


def examples_reconciled(kubectl: Kubectl) -> bool:
    """Every example Instance is Synced and its KServe object exists."""
    expected = sorted(path.stem for path in (ROOT / "examples").glob("*.yaml"))
    items = kubectl.json("instances", "-A")["items"]
    if len(items) != len(expected) or not all(synced(i) for i in items):
        return False
    for item in items:
        kind = KSERVE_RESOURCE[item["spec"]["topology"]["type"]]
        meta = item["metadata"]
        if not kubectl("get", kind, "-n", meta["namespace"], meta["name"], "-o", "name", check=False):
            return False
    return True


def provider_pod(kubectl: Kubectl) -> dict[str, Any]:
    items: list[dict[str, Any]] = kubectl.json("pods", "-n", RELEASE_NAMESPACE, "-l", POD_SELECTOR)["items"]
    pods = [p for p in items if ready(p)]
    assert len(pods) == 1, [p["metadata"]["name"] for p in items]
    return pods[0]


def settled(tilt: Tilt) -> bool:
    return all(tilt.resource_ready(name) for name in SETTLED)


# -- the plan of each target, as Tilt evaluates it ----------------------------------------------------


@pytest.mark.parametrize("target", ["local", "k3d", "process"])
def test_each_target_evaluates_to_a_grouped_plan(target: str, tmp_path: Path) -> None:
    """`tilt alpha tiltfile-result` (Tilt evaluating the Tiltfile, starting nothing) per target:
    every resource in one of the groups cluster, provider, examples; the provider's live update or
    restart on src/; links to /metrics and to each example Instance. (The k3d target is only
    evaluated here: it needs Docker; helm comes from PATH there, as for its users.)"""
    env = base_env(TILT_TARGET=target, TILT_DEV_DIR=str(tmp_path), SHARED_DIR=str(shared_dir()),
                   PATH=f"{built('helm')}:{os.environ['PATH']}")  # fmt: skip
    output = Tilt(ROOT, env).must("alpha", "tiltfile-result", timeout=600)
    manifests = {m["Name"]: m for m in json.loads(output[output.index("{") :])["Manifests"]}
    assert {name: sorted(m.get("Labels") or {}) for name, m in manifests.items()} == {
        name: [group] for name, group in EXPECTED_GROUPS[target].items()
    }
    provider = manifests[RELEASE]
    links = {link["Name"]: link["URL"]["Path"] for link in provider["DeployTarget"].get("Links") or []}
    forwards = {f["name"]: f["path"] for f in (provider["DeployTarget"].get("portForwardTemplateSpec") or {}).get(
        "forwards", [])}  # fmt: skip
    assert {**links, **forwards}.get("metrics", "").strip("/") == "metrics"
    if target == "process":
        assert provider["DeployTarget"]["Deps"] == [str(ROOT / "src")]
        assert "provider-kserve run" in provider["DeployTarget"]["ServeCmd"]["Argv"][-1]
    else:
        (image,) = provider["ImageTargets"]
        live_update = image["LiveUpdateSpec"]
        assert live_update["syncs"] == [{"localPath": "src", "containerPath": "/app/src"}]
        assert live_update["execs"][0]["args"] == ["sh", "-c", "kill -USR1 1"]
        build = image["BuildDetails"]
        assert build.get("target") == "dev" if target == "k3d" else "dev/tilt-image.sh" in build["args"][-1]
    status_links = {link["Name"] for link in manifests["instance-status"]["DeployTarget"]["Links"]}
    assert status_links >= {doc["metadata"]["name"] for doc in _examples()}
    # The provider's traces: a link to them in Jaeger, where the provider (process or pod) sends them.
    traces = {link["Name"]: link["URL"] for link in manifests["jaeger"]["DeployTarget"]["Links"]}
    assert traces["provider traces (JSON)"]["RawQuery"] == "service=provider-kserve&limit=20"
    alerts = {link["Name"]: link["URL"]["Path"] for link in manifests["prometheus"]["DeployTarget"]["Links"]}
    assert alerts["alerts"] == "/api/v1/alerts"


def test_process_target_drops_only_a_kubeconfig_whose_server_is_gone(tmp_path: Path) -> None:
    """Tilt probes the control plane's readiness (its kubeconfig present) as soon as the serve
    command starts, so a kubeconfig an earlier session left would pass for a new control plane and
    what depends on it would run against no server (seen under load in CI). The Tiltfile removes it
    at load unless its server answers, as the running session's own does when the Tiltfile is
    reloaded."""
    repo = clean_copy(tmp_path / "repo")
    (repo / ".venv").symlink_to(ROOT / ".venv")  # copies keep their mtimes: `make venv` has nothing to do
    chart = Path("charts") / "provider-kserve"
    for vendored in ("charts", "crds", "files/kserve"):
        shutil.copytree(ROOT / chart / vendored, repo / chart / vendored, dirs_exist_ok=True)
    kubeconfig = repo / "build" / "tilt" / "process" / "kubeconfig"
    kubeconfig.parent.mkdir(parents=True)
    env = base_env(TILT_TARGET="process", TILT_DEV_DIR=str(tmp_path / "tilt-dev"), SHARED_DIR=str(shared_dir()),
                   PATH=f"{built('helm')}:{os.environ['PATH']}")  # fmt: skip
    tilt = Tilt(repo, env)

    with _answering_readyz() as server:
        kubeconfig.write_text(_plain_kubeconfig(server))
        tilt.must("alpha", "tiltfile-result", timeout=600)
        assert kubeconfig.exists(), "the kubeconfig of a server that answers was removed"
    kubeconfig.write_text(_plain_kubeconfig(f"http://127.0.0.1:{free_port()}"))
    tilt.must("alpha", "tiltfile-result", timeout=600)
    assert not kubeconfig.exists(), "the kubeconfig of a server that is gone was kept"


@contextlib.contextmanager
def _answering_readyz() -> Iterator[str]:
    """An HTTP server answering `ok` to GET /readyz (as kube-apiserver does), for a kubeconfig to name."""

    class Readyz(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            ok = self.path.split("?")[0] == "/readyz"
            self.send_response(200 if ok else 404)
            self.end_headers()
            self.wfile.write(b"ok" if ok else b"")

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Readyz)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _plain_kubeconfig(server: str) -> str:
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "c", "cluster": {"server": server}}],
            "users": [{"name": "u", "user": {}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            "current-context": "c",
        }
    )


EXPECTED_GROUPS = {
    "local": {"cluster": "cluster", "namespaces": "cluster", "generate": "provider", RELEASE: "provider",
              "kserve-presets": "provider", "provider-definition": "provider", "jaeger": "provider",
              "prometheus": "provider", "examples": "examples", "instance-status": "examples"},
    "k3d": {"crds": "cluster", "namespaces": "cluster", "generate": "provider", RELEASE: "provider",
            "kserve-presets": "provider", "provider-definition": "provider", "jaeger": "provider",
            "prometheus": "provider", "examples": "examples", "instance-status": "examples"},
    "process": {"controlplane": "cluster", "generate": "provider", RELEASE: "provider",
                "provider-definition": "provider", "jaeger": "provider", "prometheus": "provider",
                "examples": "examples", "instance-status": "examples"},
}  # fmt: skip


def _examples() -> list[dict[str, Any]]:
    return [d for path in sorted((ROOT / "examples").glob("*.yaml")) for d in yaml.safe_load_all(path.read_text()) if d]


# -- local ------------------------------------------------------------------------------------------


@pytest.fixture
def host_lock_lent() -> Iterator[None]:
    """The session holds the host lock (conftest.host_left_clean); the cluster Tilt starts is a
    process of its own that takes the lock itself, so the session lends it for the test."""
    with host.host_lock_lent():
        yield


@pytest.mark.usefixtures("host_lock_lent")
def test_local_target_ci_live_update_down(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.fail("the local target runs a real node: run `make e2e` as root", pytrace=False)
    repo = clean_copy(tmp_path / "repo")
    state = repo / "build" / "tilt" / "local"
    env = base_env(TILT_TARGET="local", SHARED_DIR=str(shared_dir()), PROVIDER_KSERVE_SHARED=str(shared_dir()),
                   TILT_DEV_DIR=str(tmp_path / "tilt-dev"))  # fmt: skip
    tilt = Tilt(repo, env)
    kubectl = Kubectl(background.identity_kubeconfig(state))
    before = snapshot.take()
    try:
        pod = ci_until_ready(tilt, kubectl, "cold")  # a fresh clone: venv, cluster, image, chart, examples
        started = time.monotonic()
        with tilt.up():
            wait_for_sync(
                lambda: tilt.resource_ready(RELEASE), what="tilt up: the provider green", timeout=900, interval=0.5
            )
            MEASUREMENTS["tilt_local_up_to_ready_provider_seconds_cluster_running"] = round(
                time.monotonic() - started, 1
            )
            wait_for_sync(
                lambda: settled(tilt),
                what="tilt up: the provider, examples and instance-status green",
                timeout=900,
                interval=0.5,
            )
            ui_and_links_answer(tilt)
            live_update_reaches_the_pod(tilt, repo, kubectl, pod)
        tilt.must("down", timeout=600)
        assert background.running(state) is None
        # And up again from there (venv and image cache present, the cluster started anew).
        ci_until_ready(tilt, kubectl, "warm")
        tilt.must("down", timeout=600)
    finally:
        if background.running(state) is not None:  # a failed step must not leave the cluster running
            subprocess.run(["bash", "-c", f"PYTHONPATH=dev .venv/bin/python -m cluster stop --state-dir {state}"],
                           cwd=repo, check=False)  # fmt: skip
    changes = snapshot.diff(before, snapshot.take())
    assert not changes, "tilt down left host changes behind:\n" + "\n".join(changes)


def ui_and_links_answer(tilt: Tilt) -> None:
    """Tilt's web UI is the embedded build, the /metrics link shows the provider's metrics, and an
    Instance status link shows the Instance through a proxy that refuses anything else."""
    index = _http(f"http://localhost:{tilt.port}/")[1]
    assert "<title>Tilt</title>" in index
    script = index.split('src="/static/js/', 1)[1].split('"', 1)[0]
    assert _http(f"http://localhost:{tilt.port}/static/js/{script}")[0] == 200
    metrics_link = f"http://localhost:{tilt.env['METRICS_PORT']}/metrics"
    _, metrics = wait_for_sync(lambda: _ok(metrics_link), what="the /metrics link", timeout=60, interval=0.5)
    assert "provider_reconciles_total" in metrics
    proxy = f"http://localhost:{tilt.env['API_PROXY_PORT']}"
    name = _examples()[0]["metadata"]["name"]
    instance = json.loads(_http(f"{proxy}/apis/core.openeverest.io/v1alpha1/namespaces/models/instances/{name}")[1])
    assert instance["status"]["phase"]
    assert _http(f"{proxy}/api/v1/secrets")[0] == 403
    assert _http(f"{proxy}/apis/core.openeverest.io/v1alpha1/namespaces/models/instances/{name}", "DELETE")[0] == 403


def _http(url: str, method: str = "GET") -> tuple[int, str]:
    request = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status), response.read().decode(errors="replace")
    except urllib.error.HTTPError as err:
        return err.code, ""
    except (urllib.error.URLError, OSError):
        return 0, ""


def _ok(url: str) -> tuple[int, str] | None:
    answer = _http(url)
    return answer if answer[0] == 200 else None


def ci_until_ready(tilt: Tilt, kubectl: Kubectl, run: str) -> dict[str, Any]:
    """`tilt ci`, then what it waited for seen from outside Tilt: the provider pod Ready and every
    example Instance with its KServe objects. Returns the pod."""
    started, wall = time.monotonic(), time.time()
    tilt.ci()
    MEASUREMENTS[f"tilt_local_ci_seconds_{run}"] = round(time.monotonic() - started, 1)
    assert examples_reconciled(kubectl)
    pod = provider_pod(kubectl)
    (container,) = pod["spec"]["containers"]
    assert container["image"].split(":")[-1].startswith("tilt-")  # the image Tilt built and imported
    (ready_at,) = [c["lastTransitionTime"] for c in pod["status"]["conditions"] if c["type"] == "Ready"]
    ready_after = datetime.fromisoformat(ready_at.replace("Z", "+00:00")).timestamp() - wall
    MEASUREMENTS[f"tilt_local_ci_to_ready_provider_seconds_{run}"] = round(ready_after)
    return pod


def live_update_reaches_the_pod(tilt: Tilt, repo: Path, kubectl: Kubectl, after_ci: dict[str, Any]) -> None:
    pod = provider_pod(kubectl)
    # `tilt up` rebuilt the same image (same digest, so the same tag): the pod `tilt ci` left runs on.
    assert pod["metadata"]["uid"] == after_ci["metadata"]["uid"]
    image_built = tilt.get("imagemap", RELEASE)["status"]["buildStartTime"]
    restarts = pod["status"]["containerStatuses"][0]["restartCount"]
    marker = f"tilt-live-update-{uuid.uuid4().hex[:8]}"
    saved = time.monotonic()
    mark_log_line(repo, marker)
    name = pod["metadata"]["name"]
    wait_for_sync(
        lambda: marker in kubectl("logs", "-n", RELEASE_NAMESPACE, name, check=False),
        what=f"{marker} in the pod's log",
        timeout=300,
        interval=0.2,
    )
    MEASUREMENTS["tilt_local_live_update_seconds"] = round(time.monotonic() - saved, 1)
    now = provider_pod(kubectl)
    assert now["metadata"]["uid"] == pod["metadata"]["uid"]  # the same pod ...
    assert now["status"]["containerStatuses"][0]["restartCount"] == restarts  # ... and container
    assert now["spec"]["containers"][0]["image"] == pod["spec"]["containers"][0]["image"]
    assert tilt.get("imagemap", RELEASE)["status"]["buildStartTime"] == image_built  # no image build
    synced_files = kubectl("exec", "-n", RELEASE_NAMESPACE, name, "--", "cat", f"/app/{RUN_MODULE}")
    assert marker in synced_files
    wait_for_sync(
        lambda: ready(provider_pod(kubectl)), what="the restarted provider Ready again", timeout=120, interval=0.5
    )


# -- process, without root ----------------------------------------------------------------------


@pytest.fixture
def unprivileged_home() -> Iterator[Path]:
    """A directory owned by an unprivileged user (pytest's tmp_path is root's and closed to others)."""
    path = Path(tempfile.mkdtemp(prefix="provider-kserve-tilt-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def seed_user_caches(home: Path, repo: Path) -> None:
    """What a developer has after building the tools once and `make chart-deps`: the pinned binaries
    in their own cache (copies of ours; building them again would take half an hour) and the chart's
    vendored inputs (gitignored)."""
    ours = Path(os.environ.get("PROVIDER_KSERVE_CACHE") or Path.home() / ".cache" / "provider-kserve")
    theirs = home / ".cache" / "provider-kserve"
    for target, names in {"controlplane": ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "etcd"),
                          "kubectl": ("kubectl",), "helm": ("helm",), "tilt": ("tilt",),
                          "jaeger": ("jaeger",), "prometheus": ("promtool", "prometheus")}.items():  # fmt: skip
        directory = built(target)
        for name in names:
            copy = theirs / directory.relative_to(ours) / name
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(directory / name, copy)
    chart = Path("charts") / "provider-kserve"
    for vendored in ("charts", "crds", "files/kserve"):
        shutil.copytree(ROOT / chart / vendored, repo / chart / vendored, dirs_exist_ok=True)


def test_process_target_without_root(unprivileged_home: Path) -> None:
    home = unprivileged_home / "home"
    repo = clean_copy(unprivileged_home / "repo")
    seed_user_caches(home, repo)
    subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(unprivileged_home)], check=True)
    env = base_env(TILT_TARGET="process", HOME=str(home), PATH="/usr/local/bin:/usr/bin:/bin",
                   SHARED_DIR=str(shared_dir()), PROVIDER_KSERVE_SHARED=str(shared_dir()))  # fmt: skip
    env.pop("PROVIDER_KSERVE_CACHE", None)
    tilt = Tilt(repo, env, uid=NOBODY)

    started = time.monotonic()
    tilt.ci()
    MEASUREMENTS["tilt_process_ci_seconds"] = round(time.monotonic() - started, 1)
    # Tilt exits without waiting for the processes it served to finish their shutdown (SIGTERM to
    # each group): `tilt up` must not start its own while theirs still hold the ports.
    wait_session_ended(repo, what="the processes of `tilt ci` gone")
    kubectl = Kubectl(repo / "build" / "tilt" / "process" / "kubeconfig")
    started = time.monotonic()
    with tilt.up():
        wait_for_sync(
            lambda: tilt.resource_ready(RELEASE), what="tilt up: the provider green", timeout=600, interval=0.5
        )
        MEASUREMENTS["tilt_process_up_to_ready_provider_seconds"] = round(time.monotonic() - started, 1)
        wait_for_sync(
            lambda: settled(tilt),
            what="tilt up: the provider, examples and instance-status green",
            timeout=600,
            interval=0.5,
        )
        ui_and_links_answer(tilt)
        assert examples_reconciled(kubectl)
        first = wait_for_sync(lambda: provider_process(tilt), what="the provider process", timeout=60, interval=0.5)
        assert process_uid(first) == NOBODY
        marker = f"tilt-restart-{uuid.uuid4().hex[:8]}"
        saved = time.monotonic()
        mark_log_line(repo, marker)
        wait_for_sync(
            lambda: marker in tilt.api("logs", RELEASE),
            what=f"{marker} in the provider's log",
            timeout=300,
            interval=0.2,
        )
        MEASUREMENTS["tilt_process_restart_seconds"] = round(time.monotonic() - saved, 1)
        second = wait_for_sync(
            lambda: provider_process(tilt), what="the restarted provider process", timeout=60, interval=0.5
        )
        assert second != first and process_uid(second) == NOBODY
    tilt.must("down", timeout=300)
    # Tilt stopped the control plane and the provider it served: none of their processes is left.
    wait_session_ended(repo, what="the processes of the session gone")


def wait_session_ended(repo: Path, *, what: str) -> None:
    """Wait (up to 120 s) until no process of the control plane and provider a session in `repo`
    ran is left; the wait's failure names those still running."""

    def ended() -> bool | NotYet:
        left = [cmd for _, cmd in _processes(NOBODY) if str(repo) in cmd or "provider-kserve-cp-" in cmd]
        return NotYet(left) if left else True

    wait_for_sync(ended, timeout=120, interval=0.5, what=what)


def provider_process(tilt: Tilt) -> int:
    """The pid of the `provider-kserve run` Tilt serves (its Cmd `<resource>-serve-<n>`, n counting
    restarts); 0 while none runs."""
    out = tilt.api("get", "cmd", "-o", "json")
    for cmd in json.loads(out)["items"] if out else []:
        running = (cmd.get("status") or {}).get("running") or {}
        if cmd["metadata"]["name"].startswith(f"{RELEASE}-serve-") and running.get("pid"):
            return int(running["pid"])
    return 0


def process_uid(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Uid:"):
            return int(line.split()[1])
    raise AssertionError(f"no Uid in /proc/{pid}/status")


def _processes(uid: int) -> list[tuple[int, str]]:
    """(pid, command line) of the processes running as `uid`."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if process_uid(int(entry.name)) == uid:
                    found.append((int(entry.name), (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()))
            except (OSError, AssertionError):
                continue
    return found
