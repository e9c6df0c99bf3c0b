"""`NodeCluster`: the local control plane plus one real node on this host.

    cluster = NodeCluster(images=(archive,))
    await cluster.start()          # control plane, CRDs, containerd, kubelet, kube-proxy, scheduler
    ...                            # kubectl --kubeconfig cluster.kubeconfig ...
    cluster.stop()                 # everything stopped, every host change undone

The control plane is dev/plane's ControlPlane, started with what a node needs: every default
controller (Deployments make pods, ServiceAccounts get tokens, kube-root-ca.crt is published),
ServiceAccount admission, the Node authorizer, and the API server on the node's bridge address.

Networking: one Linux bridge with the node's address, the CNI bridge plugin giving each pod a veth
on it, kube-proxy in iptables mode. The `kubernetes` Service reaches the API server the way a real
cluster's does: the API server binds and advertises the node's address, its lease endpoint
reconciler writes that address into the Service's endpoints, and kube-proxy DNATs the ClusterIP
to it. (The alternatives were all less real: binding 0.0.0.0 exposes the API server on every
interface, and routing pods to 127.0.0.1 needs route_localnet plus a hand-made DNAT.) Nothing a
pod sends leaves the host: a FORWARD rule drops whatever does not stay on the bridge.

Needs root and Linux; host changes are recorded first and undone by stop() (see host_record.py); the
components' configuration files are written by node_config.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import ssl
import subprocess
import tempfile
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cluster import host, host_record, iptables, metrics_server, mounts_cgroups
from cluster.node_config import (
    BRIDGE,
    CGROUP,
    NODE_IP,
    NODE_NAME,
    apiserver_kubelet_client_args,
    audit_args,
    audit_log_path,
    kube_proxy_config,
    kubelet_args,
    write_cni_config,
)
from cluster.runtime import Containerd
from plane import (
    BUILD_SCRIPT,
    KUBERNETES_SERVICE_IP,
    REPO_ROOT,
    SERVICE_CLUSTER_IP_RANGE,
    ControlPlane,
    ControlPlaneError,
    Process,
    free_port,
    http_ok,
)

IMAGE_SCRIPT = REPO_ROOT / "dev" / "build-image.sh"

KUBELET = "kubelet"
KUBE_PROXY = "kube-proxy"
SCHEDULER = "kube-scheduler"
KUBECTL = "kubectl"
# Identities in the API server's token file; the bootstrap RBAC policy binds the last two.
USERS = {
    f"system:node:{NODE_NAME}": ("system:nodes",),
    "system:kube-proxy": (),
    "system:kube-scheduler": (),
}
_STOP_GRACE = {SCHEDULER: 5.0, KUBE_PROXY: 5.0, KUBELET: 10.0}
_WORKDIR_PREFIX = "provider-kserve-node-"


def script_output(script: Path, target: str) -> Path:
    """The path a build script prints last (its progress goes to stderr, shown as it runs)."""
    proc = subprocess.run(["bash", str(script), target], stdout=subprocess.PIPE, text=True, check=False)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise ControlPlaneError(f"{script} {target} failed (exit {proc.returncode}); its log is above")
    return Path(lines[-1])


def find_node_binaries() -> Path:
    """kubelet, kube-proxy, kube-scheduler and kubectl (dev/build-controlplane.sh node)."""
    return script_output(BUILD_SCRIPT, "node")


def pause_image_archive() -> Path:
    """The pod sandbox image (dev/build-image.sh pause, cached)."""
    return script_output(IMAGE_SCRIPT, "pause")


@dataclass(eq=False)
class NodeCluster:
    # Image archives imported into the node before the kubelet starts (see dev/build-image.sh).
    images: tuple[Path, ...] = ()
    keep_dir: bool = False
    # The API server's identity kept across starts (ControlPlane.identity_dir), for Tilt.
    identity_dir: Path | None = None
    # metrics-server and the aggregation layer it is served through (the HPA controller's input).
    metrics_server: bool = False
    # The HPA controller's scale-down stabilization window (kube-controller-manager's flag, the
    # platform's to set; default 300 s), for an HPA with no `behavior` of its own.
    hpa_scale_down_window_seconds: int | None = None
    plane: ControlPlane = field(init=False)
    workdir: Path = field(init=False)
    containerd: Containerd = field(init=False)
    timings: dict[str, float] = field(init=False, default_factory=dict)
    _bin: Path | None = field(init=False, default=None)
    _record: host_record.HostChanges | None = field(init=False, default=None)
    _procs: dict[str, Process] = field(init=False, default_factory=dict)
    _ports: dict[str, int] = field(init=False, default_factory=dict)
    _lock: contextlib.ExitStack = field(init=False, default_factory=contextlib.ExitStack)

    @property
    def kubeconfig(self) -> Path:
        return self.plane.kubeconfig

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self, crd_groups: Iterable[str] | None = None, exclude: Iterable[str] = ()) -> NodeCluster:
        """Start the node and its control plane, install the CRDs, and return once the node is
        Ready and kube-proxy has programmed the `kubernetes` Service. Raises ControlPlaneError
        (after undoing everything) when any part fails."""
        if os.geteuid() != 0:
            raise ControlPlaneError("the node-mode cluster needs root (containerd, iptables, cgroups, mounts)")
        started = time.monotonic()
        host.ensure_packages()
        self._bin = find_node_binaries()
        archives = (pause_image_archive(), *self.images)
        self._lock.enter_context(host.host_lock())
        try:
            host_record.recover_orphan()
            self.workdir = Path(tempfile.mkdtemp(prefix=_WORKDIR_PREFIX))
            self._record = host_record.HostChanges(str(self.workdir), BRIDGE, CGROUP)
            self._record.save()
            self._prepare_host()
            self.plane = ControlPlane(
                address=NODE_IP,
                controllers=("*",),
                service_account_admission=True,
                authorization_modes=("Node", "RBAC"),
                users={**USERS, **({metrics_server.USER: ()} if self.metrics_server else {})},
                extra_apiserver_args=(
                    *apiserver_kubelet_client_args(self.workdir),
                    *audit_args(self.workdir),
                    *(metrics_server.front_proxy_args(self.workdir) if self.metrics_server else ()),
                ),
                extra_controller_manager_args=tuple(
                    f"--horizontal-pod-autoscaler-downscale-stabilization={seconds}s"
                    for seconds in (self.hpa_scale_down_window_seconds,)
                    if seconds is not None
                ),
                identity_dir=self.identity_dir,
            )
            await self.plane.start_with_crds(crd_groups, exclude)
            self._start_node(archives)
            await self._wait_ready()
            if self.metrics_server:
                self.timings["metrics_server_ready"] = await metrics_server.start(
                    self.plane,
                    Path(self._binary(metrics_server.NAME)),
                    self._user_kubeconfig(metrics_server.USER),
                    self.workdir / "pki",
                )
        except BaseException:
            self.stop()
            raise
        self.timings["total_start"] = time.monotonic() - started
        return self

    def stop(self) -> None:
        """Stop everything and restore the host. Raises ControlPlaneError naming what could not be
        restored (after trying all of it)."""
        errors: list[str] = []
        self._stop_proc(SCHEDULER)
        try:
            self._delete_pods()
        except ControlPlaneError as err:
            errors.append(f"pods: {err}")
        self._stop_proc(KUBE_PROXY)
        self._stop_proc(KUBELET)
        if hasattr(self, "containerd"):
            self.containerd.stop()
        if hasattr(self, "plane"):
            self.plane.stop()
        if self._bin is not None and hasattr(self, "workdir") and shutil.which("iptables"):
            # kube-proxy's own cleanup first: it knows its chains' order.
            subprocess.run([self._binary(KUBE_PROXY), "--cleanup"], capture_output=True, check=False)
        if self._record is not None:
            errors += self._record.undo()
            self._record = None
        if hasattr(self, "workdir") and not self.keep_dir:
            shutil.rmtree(self.workdir, ignore_errors=True)
        self._lock.close()
        if errors:
            raise ControlPlaneError("the node's teardown left host changes behind: " + "; ".join(errors))

    # -- host --------------------------------------------------------------------------------

    def _prepare_host(self) -> None:
        if any(NODE_IP in line for line in host.run("ip", "-o", "addr").splitlines()):
            raise ControlPlaneError(f"{NODE_IP} is already configured on this host; the node needs it for {BRIDGE}")
        host.run("ip", "link", "add", BRIDGE, "type", "bridge")
        host.run("ip", "addr", "add", f"{NODE_IP}/24", "dev", BRIDGE)
        host.run("ip", "link", "set", BRIDGE, "up")
        # Service IPs without a kube-proxy rule (yet) stay on the bridge instead of following the
        # default route off the host.
        host.run("ip", "route", "add", SERVICE_CLUSTER_IP_RANGE, "dev", BRIDGE)
        iptables.add_forward_guard(BRIDGE)
        # Pod -> Service -> pod on the same bridge is only NATed when bridged traffic passes iptables.
        for name in ("net/bridge/bridge-nf-call-iptables", "net/bridge/bridge-nf-call-ip6tables"):
            with contextlib.suppress(OSError):
                host.write_sysctl(name, "1")
        mounts_cgroups.make_cgroup(CGROUP)

    @property
    def audit_log(self) -> Path:
        return audit_log_path(self.workdir)

    def audit_events(self) -> list[dict[str, Any]]:
        """The audit log's events so far (writes only, ResponseComplete stage)."""
        events = []
        with contextlib.suppress(FileNotFoundError), self.audit_log.open() as log:
            for line in log:
                with contextlib.suppress(ValueError):
                    events.append(json.loads(line))
        return events

    # -- node components ---------------------------------------------------------------------

    def _start_node(self, archives: Sequence[Path]) -> None:
        started = time.monotonic()
        cni_dir = self.workdir / "cni"
        write_cni_config(cni_dir)
        self.containerd = Containerd(self.workdir / "containerd", cni_dir / "net.d", host.CNI_BIN_DIR)
        self.containerd.start()
        for archive in archives:
            self.import_image(archive)
        self.timings["containerd_and_images"] = time.monotonic() - started
        for name in (KUBELET, KUBE_PROXY, SCHEDULER):
            self._ports[name], self._ports[f"{name}-healthz"] = free_port(), free_port()
        kubelet = kubelet_args(
            self.workdir,
            port=self._ports[KUBELET],
            healthz_port=self._ports[f"{KUBELET}-healthz"],
            runtime_endpoint=self.containerd.endpoint,
            kubeconfig=self._user_kubeconfig(f"system:node:{NODE_NAME}"),
        )
        self._start_proc(KUBELET, kubelet)
        proxy = kube_proxy_config(
            self.workdir,
            kubeconfig=self._user_kubeconfig("system:kube-proxy"),
            healthz_port=self._ports[f"{KUBE_PROXY}-healthz"],
            metrics_port=self._ports[KUBE_PROXY],
        )
        self._start_proc(KUBE_PROXY, [f"--config={proxy}"])
        self._start_proc(
            SCHEDULER,
            [
                f"--kubeconfig={self._user_kubeconfig('system:kube-scheduler')}",
                "--leader-elect=false",
                "--bind-address=127.0.0.1",
                f"--secure-port={self._ports[f'{SCHEDULER}-healthz']}",
                f"--cert-dir={self.workdir / 'scheduler-certs'}",
            ],
        )

    def import_image(self, archive: Path) -> list[str]:
        names = self.containerd.import_image(archive)
        if not names:
            raise ControlPlaneError(f"importing {archive} into the node brought no image")
        return names

    def _binary(self, name: str) -> str:
        assert self._bin is not None, "start() locates the binaries first"
        return str(self._bin / name)

    def _start_proc(self, name: str, args: list[str]) -> None:
        proc = Process(name, [self._binary(name), *args], self.workdir / f"{name}.log")
        self._procs[name] = proc
        proc.start()

    def _stop_proc(self, name: str) -> None:
        if (proc := self._procs.get(name)) is not None:
            proc.stop(_STOP_GRACE[name])

    def _user_kubeconfig(self, user: str) -> Path:
        path = self.workdir / f"{user.replace(':', '-')}.kubeconfig"
        return self.plane.write_kubeconfig(path, self.plane.user_tokens[user], user=user)

    # -- readiness ---------------------------------------------------------------------------

    async def _wait_ready(self, timeout: float = 120.0) -> None:
        started = time.monotonic()
        deadline = started + timeout
        insecure = ssl.create_default_context()
        insecure.check_hostname = False
        insecure.verify_mode = ssl.CERT_NONE
        checks = {
            KUBELET: lambda: http_ok(f"http://127.0.0.1:{self._ports[f'{KUBELET}-healthz']}/healthz"),
            SCHEDULER: lambda: http_ok(f"https://127.0.0.1:{self._ports[f'{SCHEDULER}-healthz']}/healthz", insecure),
            # kube-proxy's healthz turns 200 once it has synced its rules.
            KUBE_PROXY: lambda: http_ok(f"http://127.0.0.1:{self._ports[f'{KUBE_PROXY}-healthz']}/healthz"),
            "node Ready": self._node_ready,
            "kubernetes Service": self._kubernetes_service_programmed,
        }
        for name, ready in checks.items():
            while not ready():
                self._check_running()
                if time.monotonic() > deadline:
                    raise ControlPlaneError(f"{name} not ready after {timeout:.0f}s; logs in {self.workdir}")
                await asyncio.sleep(0.2)
            self.timings[f"{name}_ready"] = time.monotonic() - started

    def _check_running(self) -> None:
        for proc in (*self._procs.values(), self.containerd.process):
            if proc is not None and not proc.running():
                raise ControlPlaneError(f"{proc.name} exited; log tail:\n{proc.log_tail()}")

    def _node_ready(self) -> bool:
        out = self.kubectl("get", "node", NODE_NAME, "-o", "json", check=False)
        if not out:
            return False
        conditions = json.loads(out).get("status", {}).get("conditions") or []
        return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)

    def _kubernetes_service_programmed(self) -> bool:
        return KUBERNETES_SERVICE_IP in host.run("iptables-save", "-t", "nat", check=False)

    def service_programmed(self, namespace: str, service: str) -> bool:
        """Whether kube-proxy DNATs the Service to exactly the ready endpoints its EndpointSlices
        list (and there is one). A pod turns Ready, and KServe and the provider report it, before
        kube-proxy's next sync: until then a ClusterIP with no endpoint rule refuses connections,
        and the pod a rollout replaced keeps its rule, so a request can still reach it."""
        ready = self.ready_endpoints(namespace, service)
        # kube-proxy comments each rule with the Service port it serves: "namespace/name[:port]".
        routed = {
            line.split("--to-destination ", 1)[1].split()[0]
            for line in host.run("iptables-save", "-t", "nat", check=False).splitlines()
            if (f'--comment "{namespace}/{service}:' in line or f'--comment "{namespace}/{service}"' in line)
            and "--to-destination " in line
        }
        return bool(ready) and routed == ready

    def ready_endpoints(self, namespace: str, service: str) -> set[str]:
        """`address:port` of every ready endpoint the Service's EndpointSlices list."""
        out = self.kubectl(
            "get", "endpointslices", "-n", namespace, "-l", f"kubernetes.io/service-name={service}", "-o", "json",
            check=False,
        )  # fmt: skip
        return {
            f"{address}:{port['port']}"
            for endpoint_slice in (json.loads(out)["items"] if out else [])
            for endpoint in endpoint_slice.get("endpoints") or []
            if (endpoint.get("conditions") or {}).get("ready")
            for address in endpoint["addresses"]
            for port in endpoint_slice.get("ports") or []
        }

    # -- clients and teardown ----------------------------------------------------------------

    def kubectl(self, *args: str, check: bool = True, timeout: float = 120.0, input: str | None = None) -> str:
        """Run kubectl (the pinned build) as the admin; returns stdout ("" on failure unless check)."""
        kubeconfig = f"--kubeconfig={self.kubeconfig}"
        return host.run(self._binary(KUBECTL), kubeconfig, *args, check=check, timeout=timeout, input=input)

    @property
    def kubectl_path(self) -> str:
        return self._binary(KUBECTL)

    def _delete_pods(self, timeout: float = 90.0) -> None:
        """Delete every pod of the node through the API and wait until the kubelet has reclaimed
        them (stopped, volumes unmounted, sandboxes and their network removed). The scheduler is
        stopped first, so pods a controller recreates stay unbound."""
        kubelet = self._procs.get(KUBELET)
        if not hasattr(self, "plane") or kubelet is None or not kubelet.running():
            return
        selector = f"spec.nodeName={NODE_NAME}"
        self.kubectl("delete", "pods", "--all-namespaces", "--field-selector", selector, "--grace-period=2",
                     "--wait=false", check=False)  # fmt: skip
        deadline = time.monotonic() + timeout
        while self.kubectl("get", "pods", "-A", "--field-selector", selector, "-o", "name", check=False).strip():
            if time.monotonic() > deadline:
                raise ControlPlaneError(f"pods of {NODE_NAME} not gone {timeout:.0f}s after deletion")
            time.sleep(0.5)

    # -- measurements ------------------------------------------------------------------------

    def peak_rss_kib(self) -> dict[str, int]:
        """Peak resident set per process: the control plane's, the node's (shims and pods excluded:
        see pod_peak_memory_bytes)."""
        peaks = dict(self.plane.peak_rss_kib())
        for name, proc in self._procs.items():
            if proc.peak_kib():
                peaks[name] = proc.peak_kib()
        if self.containerd.peak_kib():
            peaks["containerd"] = self.containerd.peak_kib()
        return peaks

    def pod_peak_memory_bytes(self, pod_uid: str) -> int:
        """The pod cgroup's peak memory use (cgroup v1 memory.max_usage_in_bytes, v2 memory.peak)."""
        for hierarchy in mounts_cgroups.cgroup_hierarchies():
            for pattern in (f"{CGROUP}/kubepods*/**/pod{pod_uid}", f"{CGROUP}/kubepods*/pod{pod_uid}"):
                for pod in hierarchy.glob(pattern):
                    for knob in ("memory.max_usage_in_bytes", "memory.peak"):
                        if (pod / knob).exists():
                            return int((pod / knob).read_text())
        return 0
