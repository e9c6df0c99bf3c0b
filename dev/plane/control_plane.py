"""A real local Kubernetes control plane for tests and the demo: etcd + kube-apiserver (+ optionally
kube-controller-manager running only the garbage-collector and namespace controllers).

No kubelet, no scheduler: pods never run and LoadBalancer Services stay pending. Everything listens
on 127.0.0.1 only, on free ports, with data, certificates and logs in a temporary directory.
Binaries come from `KUBEBUILDER_ASSETS` (the envtest convention) when set, else from
dev/build-controlplane.sh, which builds them from Go modules once and caches them.
"""

from __future__ import annotations

import contextlib
import secrets
import shutil
import ssl
import time
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from actors.client import KubeClient
from plane import commands, etcd
from plane.binaries import find_binaries, require_executables
from plane.constants import APISERVER, CONTROLLER_MANAGER, DEFAULT_CONTROLLERS, ETCD
from plane.crds import delete_crd, ensure_namespace, install_crds, install_llm_presets
from plane.identity import kept_identity, write_kubeconfig_file
from plane.pki import make_certs
from plane.processes import Process, free_port, http_ok, make_workdir, release_workdir, stop_at_exit, stopped
from plane.supervision import Supervision

# Seconds between SIGTERM and SIGKILL. kube-apiserver stops listening at once on SIGTERM but then
# waits for open watches to drain (a minute); all its state is in etcd, so cut that short.
_STOP_GRACE = {ETCD: 10.0, APISERVER: 2.0, CONTROLLER_MANAGER: 5.0}


@dataclass(eq=False)
class ControlPlane(Supervision):
    """etcd + kube-apiserver (+ kube-controller-manager) on 127.0.0.1.

    `start()` blocks until /readyz; the admin kubeconfig is `kubeconfig`. CRD helpers are async
    (they use actors.client.KubeClient). `stop()` is idempotent and also runs at interpreter exit.
    """

    controller_manager: bool = True
    # Off by default so that compact() alone makes a watch from an older resourceVersion fail
    # with 410: the watch cache would answer it from memory. Turn it on for realism
    # (only the watch cache sends BOOKMARK events); then compact() needs restart_apiserver().
    watch_cache: bool = False
    keep_dir: bool = False
    bin_dir: Path | None = None
    # The address the API server binds, advertises and is reached at. On loopback nothing can route
    # to the `kubernetes` Service, so its Endpoints are not reconciled; on a node-reachable address
    # (dev/cluster's node mode) the default lease reconciler points the Service at it, as in a real
    # cluster.
    address: str = "127.0.0.1"
    # kube-controller-manager's --controllers (("*",): every default controller).
    controllers: tuple[str, ...] = DEFAULT_CONTROLLERS
    # Off by default: nothing here runs pods, and the plugin needs the serviceaccount controller.
    service_account_admission: bool = False
    # ("Node", "RBAC") for a cluster with kubelets (identities in group system:nodes).
    authorization_modes: tuple[str, ...] = ("RBAC",)
    # More identities in the static token file: user name -> groups. Their tokens: user_tokens.
    users: dict[str, tuple[str, ...]] = field(default_factory=dict)
    extra_apiserver_args: tuple[str, ...] = ()
    extra_controller_manager_args: tuple[str, ...] = ()
    # Keeps the API server's identity (port, CA and serving certificate, ServiceAccount keys, admin
    # token and its kubeconfig) in this directory across starts, made there on first use: for a
    # client that loads its kubeconfig once and outlives a restart, like Tilt. None: fresh per start.
    identity_dir: Path | None = None
    workdir: Path = field(init=False)
    etcd_port: int = field(init=False, default=0)
    apiserver_port: int = field(init=False, default=0)
    controller_manager_port: int = field(init=False, default=0)
    admin_token: str = field(init=False, default="")
    user_tokens: dict[str, str] = field(init=False, default_factory=dict)
    timings: dict[str, float] = field(init=False, default_factory=dict)
    _procs: dict[str, Process] = field(init=False, default_factory=dict)
    _extra: dict[str, tuple[Process, float]] = field(init=False, default_factory=dict)
    _peaks: dict[str, int] = field(init=False, default_factory=dict)

    # -- paths ------------------------------------------------------------------------------

    @property
    def kubeconfig(self) -> Path:
        return self.workdir / "admin.kubeconfig"

    @property
    def ca_file(self) -> Path:
        return self.workdir / "pki" / "ca.crt"

    @property
    def server(self) -> str:
        return f"https://{self.address}:{self.apiserver_port}"

    @property
    def etcd_url(self) -> str:
        return f"http://127.0.0.1:{self.etcd_port}"

    # -- lifecycle --------------------------------------------------------------------------

    def start(self, *, _defer_controller_manager: bool = False) -> ControlPlane:
        """Start everything (binaries are located or built first). Raises ControlPlaneError with
        the failing process's log tail; anything started is stopped again on failure."""
        started = time.monotonic()
        if self.bin_dir is None:
            self.bin_dir = find_binaries(controller_manager=self.controller_manager)
        else:
            required = [ETCD, APISERVER] + ([CONTROLLER_MANAGER] if self.controller_manager else [])
            require_executables(self.bin_dir, required, "bin_dir")
        self.timings["binaries"] = time.monotonic() - started
        self.workdir = make_workdir()
        stop_at_exit(self)
        try:
            self._prepare()
            self._start_etcd()
            self.start_apiserver()
            if self.controller_manager and not _defer_controller_manager:
                self.start_controller_manager()
        except BaseException:
            self.stop()
            raise
        self.timings["total_start"] = time.monotonic() - started
        return self

    async def start_with_crds(self, groups: Iterable[str] | None = None, exclude: Iterable[str] = ()) -> list[str]:
        """start(), install CRDs, and only then start the controller manager: its garbage
        collector rediscovers the API on every new CRD, which slows installing by a third on 2
        cores. Returns the installed CRD names."""
        self.start(_defer_controller_manager=True)
        try:
            names = await self.install_crds(groups, exclude)
            if self.controller_manager:
                self.start_controller_manager()
        except BaseException:
            self.stop()
            raise
        return names

    def stop(self) -> None:
        """Stop every process (those added last first, then controller-manager, apiserver, etcd)
        and remove the temp dir."""
        self._stop_extra()
        for name in (CONTROLLER_MANAGER, APISERVER, ETCD):
            proc = self._procs.get(name)
            if proc is not None:
                self._sample_peak(proc)
                proc.stop(_STOP_GRACE[name])
        stopped(self)
        workdir = getattr(self, "workdir", None)
        if workdir is not None:
            release_workdir(workdir, keep=self.keep_dir)

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _prepare(self) -> None:
        self.etcd_port, peer_port = free_port(), free_port()
        self.controller_manager_port = free_port()
        if self.identity_dir is None:
            self.apiserver_port = free_port()
            make_certs(self.workdir / "pki", self.address)
            self.admin_token = secrets.token_hex(16)
        else:
            kept = kept_identity(self.identity_dir, self.address)
            self.apiserver_port, self.admin_token = kept.port, kept.admin_token
            shutil.copytree(self.identity_dir / "pki", self.workdir / "pki")
        kcm_token = secrets.token_hex(16)
        self.user_tokens = {user: secrets.token_hex(16) for user in self.users}
        # A distinct user for the controller manager so its writes are attributable; it is in
        # system:masters because the GC must delete any kind of object.
        (self.workdir / "tokens.csv").write_text(
            f"{self.admin_token},admin,admin,system:masters\n"
            f"{kcm_token},system:kube-controller-manager,kcm,system:masters\n"
            + "".join(
                f'{self.user_tokens[user]},{user},{user},"{",".join(groups)}"\n' for user, groups in self.users.items()
            )
        )
        self.write_kubeconfig(self.kubeconfig, self.admin_token, user="admin")
        self.write_kubeconfig(self.workdir / "kcm.kubeconfig", kcm_token, user="kube-controller-manager")
        pki = self.workdir / "pki"
        self._procs[ETCD] = commands.etcd(self, peer_port)
        self._procs[APISERVER] = commands.apiserver(self, pki)
        self._procs[CONTROLLER_MANAGER] = commands.controller_manager(self, pki)

    def binary(self, name: str) -> Path:
        assert self.bin_dir is not None
        return self.bin_dir / name

    def _start_etcd(self) -> None:
        started = time.monotonic()
        proc = self._procs[ETCD]
        proc.start()
        self._wait(proc, lambda: http_ok(f"{self.etcd_url}/health"), timeout=30.0)
        self.timings["etcd_start"] = time.monotonic() - started

    def start_apiserver(self) -> None:
        """(Re)start kube-apiserver on the same port and etcd data, and wait for /readyz; a running
        controller manager is restarted after it."""
        started = time.monotonic()
        proc = self._procs[APISERVER]
        if proc.running():
            return
        proc.start()
        context = ssl.create_default_context(cafile=str(self.ca_file))
        headers = {"Authorization": f"Bearer {self.admin_token}"}
        self._wait(proc, lambda: http_ok(f"{self.server}/readyz", context, headers), timeout=120.0)
        self.timings["apiserver_ready"] = time.monotonic() - started
        self._restart_controller_manager()

    def _restart_controller_manager(self) -> None:
        """A controller manager that outlived an API server outage is restarted: its informers back
        off while the server is away (client-go: 0.8 s doubling to 30 s, plus up to 100 % jitter),
        so after a 20 s outage the garbage collector went over a minute without seeing new objects
        and a later test's dependents were not collected in time. A fresh one relists everything
        at once, and its garbage collector still finds what was orphaned during the outage."""
        proc = self._procs.get(CONTROLLER_MANAGER)
        if proc is None or not proc.running():
            return
        self._sample_peak(proc)
        proc.stop(_STOP_GRACE[CONTROLLER_MANAGER])
        self.start_controller_manager()

    def stop_apiserver(self) -> None:
        """Stop kube-apiserver only (etcd and its data stay); clients see connection refused."""
        proc = self._procs[APISERVER]
        self._sample_peak(proc)
        proc.stop(_STOP_GRACE[APISERVER])

    def restart_apiserver(self) -> None:
        self.stop_apiserver()
        self.start_apiserver()

    def start_controller_manager(self) -> None:
        """Start kube-controller-manager (garbage collector and namespace controllers) and wait
        for its /healthz."""
        started = time.monotonic()
        proc = self._procs[CONTROLLER_MANAGER]
        if proc.running():
            return
        proc.start()
        # Its own serving cert is self-signed and /healthz needs no authentication.
        insecure = ssl.create_default_context()
        insecure.check_hostname = False
        insecure.verify_mode = ssl.CERT_NONE
        url = f"https://127.0.0.1:{self.controller_manager_port}/healthz"
        self._wait(proc, lambda: http_ok(url, insecure), timeout=60.0)
        self.timings["controller_manager_ready"] = time.monotonic() - started

    # -- etcd -------------------------------------------------------------------------------

    def etcd_revision(self) -> int:
        """etcd's current revision, which is also the newest resourceVersion the apiserver hands out."""
        return etcd.revision(self.etcd_url)

    def compact(self, revision: int | None = None) -> int:
        """Compact etcd up to `revision` (default: current); returns the revision. Watches and
        paginated lists from older resourceVersions then get 410 Gone, as long as they reach etcd:
        true with the default watch_cache=False. With the watch cache on, follow with
        restart_apiserver() (a fresh cache refuses older versions)."""
        return etcd.compact(self.etcd_url, revision)

    # -- clients ----------------------------------------------------------------------------

    def write_kubeconfig(self, path: Path, token: str, *, user: str = "user") -> Path:
        """A kubeconfig for this apiserver and bearer `token` (e.g. from service_account_token)."""
        return write_kubeconfig_file(path, self.server, self.ca_file, token, user=user)

    @contextlib.asynccontextmanager
    async def client(self) -> AsyncIterator[KubeClient]:
        """An admin KubeClient, closed on exit."""
        kube = await KubeClient.connect(str(self.kubeconfig))
        try:
            yield kube
        finally:
            await kube.close()

    async def install_crds(
        self, groups: Iterable[str] | None = None, exclude: Iterable[str] = (), *, timeout: float = 180.0
    ) -> list[str]:
        started = time.monotonic()
        async with self.client() as kube:
            names = await install_crds(kube, groups, exclude, timeout=timeout)
        self.timings["crds_established"] = time.monotonic() - started
        return names

    async def delete_crd(self, name: str, *, wait: bool = True) -> bool:
        async with self.client() as kube:
            return await delete_crd(kube, name, wait=wait)

    async def install_llm_presets(self, namespace: str) -> list[str]:
        async with self.client() as kube:
            await ensure_namespace(kube, namespace)
            return await install_llm_presets(kube, namespace)
