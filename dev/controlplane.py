"""A real local Kubernetes control plane for tests and the demo: etcd + kube-apiserver (+ optionally
kube-controller-manager running only the garbage-collector and namespace controllers).

No kubelet, no scheduler: pods never run and LoadBalancer Services stay pending. Everything listens
on 127.0.0.1 only, on free ports, with data, certificates and logs in a temporary directory.

    .venv/bin/python dev/controlplane.py build  # locate or build the binaries, print their dir
    .venv/bin/python dev/controlplane.py up     # start, install CRDs, print `export KUBECONFIG=`
                                                # (--kubeconfig-out PATH), block until signalled
    .venv/bin/python dev/controlplane.py check  # start, install CRDs, print timings + peak RSS

Binaries come from `KUBEBUILDER_ASSETS` (the envtest convention) when set, else from
dev/build-controlplane.sh, which builds them from Go modules once and caches them.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import base64
import contextlib
import ctypes
import hashlib
import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO, Any

import yaml

from actors.interface import KubeObject, Resource
from actors.kube import ApiError, KubeClient

REPO_ROOT = Path(__file__).resolve().parents[1]
BUILD_SCRIPT = REPO_ROOT / "dev" / "build-controlplane.sh"

ETCD = "etcd"
APISERVER = "kube-apiserver"
CONTROLLER_MANAGER = "kube-controller-manager"

# Directory names under shared/crds, in install order. `install_crds(groups=...)` takes these.
CRD_GROUPS: tuple[str, ...] = (
    "openeverest",
    "kserve",
    "envoy-ai-gateway",
    "envoy-gateway",
    "gateway-api",
    "inference-extension",
    "prometheus-operator",
    "cert-manager",
)
# Only the plain controller-gen CRDs: presets/ are LLMInferenceServiceConfig objects,
# chart-patches/ are partial CRDs, and gateway-inference-extension.yaml duplicates two CRDs of
# inference-extension/ (see shared/crds/SOURCES.md).
_GROUP_GLOBS: dict[str, str] = {"kserve": "serving.kserve.io_*.yaml"}

# cert-manager's CRDs are Helm templates whose label values the apiserver would reject; this is
# what `helm template` renders for a release named cert-manager.
_CERT_MANAGER_TEMPLATES = {
    '{{ template "cert-manager.name" . }}': "cert-manager",
    "{{ .Release.Name }}": "cert-manager",
}

CRD = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False)
NAMESPACE = Resource("", "v1", "namespaces", "Namespace", False)
SERVICE_ACCOUNT = Resource("", "v1", "serviceaccounts", "ServiceAccount")
LLM_ISVC_CONFIG = Resource("serving.kserve.io", "v1alpha2", "llminferenceserviceconfigs", "LLMInferenceServiceConfig")

# The `kubernetes` Service's ClusterIP: the first address of --service-cluster-ip-range.
SERVICE_CLUSTER_IP_RANGE = "10.0.0.0/24"
KUBERNETES_SERVICE_IP = "10.0.0.1"
# What the controller manager runs by default: enough for the tests of a node-less control plane.
DEFAULT_CONTROLLERS = ("garbage-collector-controller", "namespace-controller")

_PR_SET_PDEATHSIG = 1

# Seconds between SIGTERM and SIGKILL. kube-apiserver stops listening at once on SIGTERM but then
# waits 60 s (measured) for open watches to drain; all its state is in etcd, so cut that short.
_STOP_GRACE = {ETCD: 10.0, APISERVER: 2.0, CONTROLLER_MANAGER: 5.0}


class ControlPlaneError(RuntimeError):
    """The control plane could not be located, built, started or configured."""


# -- binaries ---------------------------------------------------------------------------------


def find_binaries(*, controller_manager: bool = True) -> Path:
    """The directory holding etcd and kube-apiserver (and kube-controller-manager if asked)."""
    required = [ETCD, APISERVER] + ([CONTROLLER_MANAGER] if controller_manager else [])
    assets = os.environ.get("KUBEBUILDER_ASSETS")
    if assets:
        _require_executables(Path(assets), required, "KUBEBUILDER_ASSETS")
        return Path(assets)
    if not BUILD_SCRIPT.is_file():
        raise ControlPlaneError(f"KUBEBUILDER_ASSETS is not set and {BUILD_SCRIPT} is missing")
    proc = subprocess.run(["bash", str(BUILD_SCRIPT), "controlplane"], stdout=subprocess.PIPE, text=True, check=False)
    lines = proc.stdout.strip().splitlines()
    if proc.returncode != 0 or not lines:
        raise ControlPlaneError(
            f"{BUILD_SCRIPT} failed (exit {proc.returncode}); its log is above. It needs `go` on PATH "
            "and the Go module proxy, or set KUBEBUILDER_ASSETS to a directory with " + ", ".join(required)
        )
    bin_dir = Path(lines[-1])
    _require_executables(bin_dir, required, str(BUILD_SCRIPT))
    return bin_dir


def _require_executables(directory: Path, names: Sequence[str], origin: str) -> None:
    missing = [n for n in names if not os.access(directory / n, os.X_OK)]
    if missing:
        raise ControlPlaneError(f"{origin}: {directory} has no executable {', '.join(missing)}")


# -- CRD files --------------------------------------------------------------------------------


def shared_dir() -> Path:
    override = os.environ.get("PROVIDER_KSERVE_SHARED")
    return Path(override) if override else REPO_ROOT.parent / "shared"


def crds_dir() -> Path:
    return shared_dir() / "crds"


def _cache_dir() -> Path:
    base = os.environ.get("PROVIDER_KSERVE_CACHE") or str(Path.home() / ".cache" / "provider-kserve")
    return Path(base) / "crd-json"


def _load_yaml_docs(path: Path, replacements: dict[str, str] | None = None) -> list[KubeObject]:
    """All YAML documents of a file, cached as JSON keyed by content: parsing the ~10 MB of CRD
    YAML takes seconds even with libyaml, json.loads takes tens of milliseconds."""
    text = path.read_text()
    for old, new in (replacements or {}).items():
        text = text.replace(old, new)
    digest = hashlib.sha256(text.encode()).hexdigest()
    cached = _cache_dir() / f"{digest}.json"
    with contextlib.suppress(OSError, ValueError):
        docs: list[KubeObject] = json.loads(cached.read_text())
        return docs
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    docs = [d for d in yaml.load_all(text, Loader=loader) if isinstance(d, dict)]
    with contextlib.suppress(OSError):
        cached.parent.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(docs))
        tmp.replace(cached)
    return docs


def _prepare_crd(crd: KubeObject, source: Path) -> KubeObject:
    for key, value in (crd["metadata"].get("labels") or {}).items():
        if "{{" in str(value):
            raise ControlPlaneError(f"{source}: label {key}={value!r} is an unrendered Helm template")
    spec = crd["spec"]
    # No conversion webhook runs in tests: a CRD whose upstream form converts through a webhook
    # would fail every read of a non-storage version, so it is always installed with strategy None.
    if (spec.get("conversion") or {}).get("strategy", "None") != "None":
        spec["conversion"] = {"strategy": "None"}
    return crd


def load_crds(groups: Iterable[str] | None = None, exclude: Iterable[str] = ()) -> list[KubeObject]:
    """The CRDs from shared/crds, ready to create.

    `groups` picks directories (see CRD_GROUPS; default all). `exclude` drops whole groups or
    single CRDs by name (e.g. "prometheus-operator" or "servicemonitors.monitoring.coreos.com").
    """
    root = crds_dir()
    if not root.is_dir():
        raise ControlPlaneError(f"CRD directory {root} not found (set PROVIDER_KSERVE_SHARED)")
    chosen = list(CRD_GROUPS if groups is None else groups)
    unknown = sorted(set(chosen) - set(CRD_GROUPS))
    if unknown:
        raise ControlPlaneError(f"unknown CRD groups {unknown}; known: {list(CRD_GROUPS)}")
    skip = set(exclude)
    crds: dict[str, KubeObject] = {}
    for group in chosen:
        if group in skip:
            continue
        files = sorted((root / group).glob(_GROUP_GLOBS.get(group, "*.yaml")))
        if not files:
            raise ControlPlaneError(f"no CRD files in {root / group}")
        replacements = _CERT_MANAGER_TEMPLATES if group == "cert-manager" else None
        for path in files:
            for doc in _load_yaml_docs(path, replacements):
                if doc.get("kind") != "CustomResourceDefinition":
                    continue
                name = doc["metadata"]["name"]
                if name in skip:
                    continue
                if name in crds:
                    raise ControlPlaneError(f"{path}: CRD {name} is defined twice")
                crds[name] = _prepare_crd(doc, path)
    return list(crds.values())


def load_llm_presets() -> list[KubeObject]:
    """KServe's LLMInferenceServiceConfig presets (config-llm-*.yaml), without a namespace."""
    files = sorted((crds_dir() / "kserve" / "presets").glob("config-llm-*.yaml"))
    if not files:
        raise ControlPlaneError(f"no presets in {crds_dir() / 'kserve' / 'presets'}")
    return [d for path in files for d in _load_yaml_docs(path) if d.get("kind") == LLM_ISVC_CONFIG.kind]


# -- API operations ---------------------------------------------------------------------------


# What a busy API server answers (on a loaded machine a 0.7 MB CRD can exceed its request timeout):
# worth another try. A create that timed out may have succeeded all the same: the retry gets 409.
_BUSY = (429, 500, 503, 504)


async def create_or_replace(client: KubeClient, res: Resource, obj: KubeObject, attempts: int = 5) -> KubeObject:
    """POST, or PUT over an existing object. Not apply: client-side apply would put the whole
    object into an annotation (256 KiB limit, the big KServe CRDs are ~0.7 MB of JSON)."""
    for attempt in range(attempts):
        try:
            return await client.create(res, obj)
        except ApiError as err:
            if err.status == 409:
                break
            if err.status not in _BUSY or attempt == attempts - 1:
                raise
            await asyncio.sleep(2**attempt)
    meta = obj["metadata"]
    current = await client.get(res, meta.get("namespace"), meta["name"])
    if current is None:
        return await client.create(res, obj)
    replacement = {**obj, "metadata": {**meta, "resourceVersion": current["metadata"]["resourceVersion"]}}
    return await client.replace(res, replacement)


def _established(crd: KubeObject) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


async def wait_established(client: KubeClient, names: Iterable[str], timeout: float = 180.0) -> None:
    """Until every named CRD is Established. Uses list+watch: the CRDs total several MB of JSON,
    so polling the whole list would cost more than the establishing itself."""
    pending = set(names)
    deadline = time.monotonic() + timeout
    while pending:
        items, rv = await client.list_all(CRD)
        pending -= {c["metadata"]["name"] for c in items if _established(c)}
        remaining = deadline - time.monotonic()
        if not pending:
            return
        if remaining <= 0:
            raise ControlPlaneError(f"CRDs not Established after {timeout:.0f}s: {sorted(pending)}")
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(remaining):
                async for event in client.watch(CRD, None, rv, timeout_seconds=max(1, int(remaining))):
                    obj = event.get("object") or {}
                    if event.get("type") in ("ADDED", "MODIFIED") and _established(obj):
                        pending.discard(obj["metadata"]["name"])
                        if not pending:
                            return


async def wait_served(client: KubeClient, crds: Iterable[KubeObject], timeout: float = 60.0) -> None:
    """Until discovery lists every served version of each CRD: Established flips slightly before
    the apiserver's handler serves the resource, and a test creating a CR right away would 404."""
    wanted: dict[str, set[str]] = {}
    for crd in crds:
        spec = crd["spec"]
        for version in spec["versions"]:
            if version.get("served", True):
                wanted.setdefault(f"{spec['group']}/{version['name']}", set()).add(spec["names"]["plural"])
    deadline = time.monotonic() + timeout
    while wanted:
        for group_version in list(wanted):
            try:
                served = await client.discover(group_version)
            except ValueError:
                # A group the apiserver does not serve yet answers 404 with a plain-text body,
                # which KubeClient.request fails to decode as JSON.
                continue
            if wanted[group_version] <= served:
                del wanted[group_version]
        if not wanted:
            return
        if time.monotonic() > deadline:
            raise ControlPlaneError(f"not in discovery after {timeout:.0f}s: {sorted(wanted)}")
        await asyncio.sleep(0.1)


async def install_crds(
    client: KubeClient,
    groups: Iterable[str] | None = None,
    exclude: Iterable[str] = (),
    *,
    timeout: float = 180.0,
) -> list[str]:
    """Create (or replace) the CRDs and wait until they are Established and served. Returns their
    names, sorted."""
    crds = load_crds(groups, exclude)
    # Bounded: unbounded was measured no faster on 2 cores, and every in-flight body of up to
    # 0.7 MB is held several times over by client and server.
    gate = asyncio.Semaphore(4)

    async def one(crd: KubeObject) -> None:
        async with gate:
            await create_or_replace(client, CRD, crd)

    await asyncio.gather(*(one(c) for c in crds))
    names = sorted(c["metadata"]["name"] for c in crds)
    await wait_established(client, names, timeout)
    await wait_served(client, crds, timeout)
    return names


async def delete_crd(client: KubeClient, name: str, *, wait: bool = True, timeout: float = 60.0) -> bool:
    """Delete one CRD (and with it all its objects); True when it existed. With `wait`, returns
    only once the apiserver no longer has it."""
    existed = await client.delete(CRD, None, name)
    deadline = time.monotonic() + timeout
    while wait and await client.get(CRD, None, name) is not None:
        if time.monotonic() > deadline:
            raise ControlPlaneError(f"CRD {name} still present {timeout:.0f}s after delete")
        await asyncio.sleep(0.2)
    return existed


async def install_llm_presets(client: KubeClient, namespace: str) -> list[str]:
    """Create KServe's LLMInferenceServiceConfig presets in `namespace` (upstream puts them in
    `kserve`). Needs the KServe CRDs. Returns the preset names, sorted."""
    presets = load_llm_presets()
    for preset in presets:
        preset["metadata"]["namespace"] = namespace
        await create_or_replace(client, LLM_ISVC_CONFIG, preset)
    return sorted(p["metadata"]["name"] for p in presets)


async def ensure_namespace(client: KubeClient, name: str) -> None:
    try:
        await client.create(NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
    except ApiError as err:
        if err.status != 409:
            raise


async def service_account_token(
    client: KubeClient,
    namespace: str,
    name: str,
    *,
    expiration_seconds: int = 3600,
    audiences: Sequence[str] = (),
) -> str:
    """A bound token for ServiceAccount namespace/name (created if missing) via TokenRequest.
    Pair with ControlPlane.write_kubeconfig to run something under that identity (RBAC applies)."""
    await ensure_namespace(client, namespace)
    sa = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name, "namespace": namespace}}
    try:
        await client.create(SERVICE_ACCOUNT, sa)
    except ApiError as err:
        if err.status != 409:
            raise
    spec: dict[str, Any] = {"expirationSeconds": expiration_seconds}
    if audiences:
        spec["audiences"] = list(audiences)
    review = await client.request(
        "POST",
        SERVICE_ACCOUNT.path(namespace, name) + "/token",
        body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec},
        resource="serviceaccounts/token",
    )
    token: str = review["status"]["token"]
    return token


# -- processes --------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _die_with_parent() -> None:
    # Runs in the child between fork and exec: the kernel kills the child when the thread that
    # started it dies, even by SIGKILL, when atexit and signal handlers never get to run.
    # (Tied to the starting *thread*: start the control plane from the main thread.)
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _vm_hwm_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


@dataclass
class _Process:
    name: str
    args: list[str]
    log: Path
    popen: subprocess.Popen[bytes] | None = None
    log_file: IO[bytes] | None = None

    def start(self) -> None:
        self.log_file = self.log.open("ab")
        self.popen = subprocess.Popen(
            self.args,
            stdin=subprocess.DEVNULL,
            stdout=self.log_file,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # own process group, so one killpg reaches any children too
            preexec_fn=_die_with_parent if sys.platform == "linux" else None,
        )

    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def peak_kib(self) -> int:
        return _vm_hwm_kib(self.popen.pid) if self.running() and self.popen else 0

    def stop(self, grace: float = 10.0) -> None:
        popen, self.popen = self.popen, None
        if popen is not None and popen.poll() is None:
            for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(popen.pid, sig)
                try:
                    popen.wait(wait)
                    break
                except subprocess.TimeoutExpired:
                    continue
        if self.log_file is not None:
            self.log_file.close()
            self.log_file = None

    def log_tail(self, lines: int = 25) -> str:
        try:
            text = self.log.read_text(errors="replace").splitlines()
        except OSError:
            return ""
        return "\n".join(text[-lines:])


def _openssl(*args: str, cwd: Path) -> None:
    proc = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise ControlPlaneError(f"openssl {' '.join(args)} failed: {proc.stderr.strip()}")


def _make_certs(pki: Path, address: str = "127.0.0.1") -> None:
    """A throwaway CA, an apiserver serving cert for 127.0.0.1/localhost (and `address`), and the
    ServiceAccount signing keypair. P-256 keys: generating them takes milliseconds where RSA takes
    seconds."""
    if shutil.which("openssl") is None:
        raise ControlPlaneError("openssl is required to make the control plane's certificates")
    pki.mkdir(parents=True, exist_ok=True)
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    _openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "3650",
             "-subj", "/CN=provider-kserve-local-ca", cwd=pki)  # fmt: skip
    _openssl("req", *ec, "-keyout", "apiserver.key", "-out", "apiserver.csr", "-subj", "/CN=kube-apiserver",
             cwd=pki)  # fmt: skip
    (pki / "apiserver.ext").write_text(
        f"subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,"
        f"DNS:kubernetes.default.svc,IP:{KUBERNETES_SERVICE_IP}{'' if address == '127.0.0.1' else ',IP:' + address}\n"
        "basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n"
        "extendedKeyUsage=serverAuth\n"
    )
    _openssl("x509", "-req", "-in", "apiserver.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
             "-out", "apiserver.crt", "-days", "3650", "-extfile", "apiserver.ext", cwd=pki)  # fmt: skip
    _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", "sa.key", cwd=pki)
    _openssl("pkey", "-in", "sa.key", "-pubout", "-out", "sa.pub", cwd=pki)


_WORKDIR_PREFIX = "provider-kserve-cp-"


def _sweep_orphaned_workdirs() -> None:
    """Remove temp dirs left by a harness that was SIGKILLed (its processes died with it, see
    _die_with_parent, but nothing was left to delete the directory)."""
    for workdir in Path(tempfile.gettempdir()).glob(f"{_WORKDIR_PREFIX}*"):
        try:
            owner = int((workdir / "owner.pid").read_text())
        except (OSError, ValueError):
            continue
        try:
            os.kill(owner, 0)
        except ProcessLookupError:
            shutil.rmtree(workdir, ignore_errors=True)
        except PermissionError:
            continue


_live: set[ControlPlane] = set()
_live_lock = threading.Lock()


def _stop_all() -> None:
    with _live_lock:
        planes = list(_live)
    for plane in planes:
        plane.stop()


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    # SIGTERM's default action skips atexit; raising lets `finally` blocks and atexit stop the
    # control plane.
    raise SystemExit(128 + signum)


atexit.register(_stop_all)


@dataclass(eq=False)
class ControlPlane:
    """etcd + kube-apiserver (+ kube-controller-manager) on 127.0.0.1.

    `start()` blocks until /readyz; the admin kubeconfig is `kubeconfig`. CRD helpers are async
    (they use actors.kube.KubeClient). `stop()` is idempotent and also runs at interpreter exit.
    """

    controller_manager: bool = True
    # Off by default so that compact() alone makes a watch from an older resourceVersion fail
    # with 410: the watch cache would answer it from memory (measured). Turn it on for realism
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
    _procs: dict[str, _Process] = field(init=False, default_factory=dict)
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
            _require_executables(self.bin_dir, required, "bin_dir")
        self.timings["binaries"] = time.monotonic() - started
        _sweep_orphaned_workdirs()
        self.workdir = Path(tempfile.mkdtemp(prefix=_WORKDIR_PREFIX))
        (self.workdir / "owner.pid").write_text(str(os.getpid()))
        with _live_lock:
            _live.add(self)
        if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) in (
            signal.SIG_DFL,
            None,
        ):
            signal.signal(signal.SIGTERM, _exit_on_sigterm)
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
        """Stop every process (controller-manager, apiserver, etcd) and remove the temp dir."""
        for name in (CONTROLLER_MANAGER, APISERVER, ETCD):
            proc = self._procs.get(name)
            if proc is not None:
                self._sample_peak(proc)
                proc.stop(_STOP_GRACE[name])
        with _live_lock:
            _live.discard(self)
        workdir = getattr(self, "workdir", None)
        if workdir is not None and not self.keep_dir:
            shutil.rmtree(workdir, ignore_errors=True)
        elif workdir is not None:
            # Kept on purpose, so the next start must not sweep it as an orphan.
            (workdir / "owner.pid").unlink(missing_ok=True)

    def __enter__(self) -> ControlPlane:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _prepare(self) -> None:
        self.etcd_port, peer_port = free_port(), free_port()
        self.controller_manager_port = free_port()
        if self.identity_dir is None:
            self.apiserver_port = free_port()
            _make_certs(self.workdir / "pki", self.address)
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
        self._procs[ETCD] = _Process(
            ETCD,
            [
                str(self._bin(ETCD)),
                "--name=local",
                f"--data-dir={self.workdir / 'etcd'}",
                f"--listen-client-urls={self.etcd_url}",
                f"--advertise-client-urls={self.etcd_url}",
                f"--listen-peer-urls=http://127.0.0.1:{peer_port}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{peer_port}",
                f"--initial-cluster=local=http://127.0.0.1:{peer_port}",
                "--unsafe-no-fsync",  # test data: durability across power loss is irrelevant
                "--log-level=warn",
            ],
            self.workdir / "etcd.log",
        )
        self._procs[APISERVER] = _Process(
            APISERVER,
            [
                str(self._bin(APISERVER)),
                f"--etcd-servers={self.etcd_url}",
                f"--bind-address={self.address}",
                f"--advertise-address={self.address}",
                f"--secure-port={self.apiserver_port}",
                f"--cert-dir={self.workdir / 'apiserver-certs'}",
                f"--tls-cert-file={pki / 'apiserver.crt'}",
                f"--tls-private-key-file={pki / 'apiserver.key'}",
                f"--token-auth-file={self.workdir / 'tokens.csv'}",
                f"--authorization-mode={','.join(self.authorization_modes)}",
                # Without the serviceaccount controller the plugin would reject every pod whose
                # ServiceAccount does not exist yet.
                *([] if self.service_account_admission else ["--disable-admission-plugins=ServiceAccount"]),
                f"--service-cluster-ip-range={SERVICE_CLUSTER_IP_RANGE}",
                "--allow-privileged=true",
                f"--service-account-issuer={self.server}/",
                f"--service-account-key-file={pki / 'sa.pub'}",
                f"--service-account-signing-key-file={pki / 'sa.key'}",
                f"--watch-cache={'true' if self.watch_cache else 'false'}",
                # The default reconciler rejects 127.0.0.1 as an Endpoints address and logs an
                # error every 10 s; nothing routes to the `kubernetes` Service on loopback anyway.
                *(["--endpoint-reconciler-type=none"] if self.address == "127.0.0.1" else []),
                *self.extra_apiserver_args,
            ],
            self.workdir / "kube-apiserver.log",
        )
        self._procs[CONTROLLER_MANAGER] = _Process(
            CONTROLLER_MANAGER,
            [
                str(self._bin(CONTROLLER_MANAGER)),
                f"--kubeconfig={self.workdir / 'kcm.kubeconfig'}",
                "--leader-elect=false",
                f"--controllers={','.join(self.controllers)}",
                # For the root-CA publisher (the kube-root-ca.crt ConfigMap every pod's token
                # volume projects) and the token controller, when they run.
                f"--root-ca-file={pki / 'ca.crt'}",
                f"--service-account-private-key-file={pki / 'sa.key'}",
                "--bind-address=127.0.0.1",
                f"--secure-port={self.controller_manager_port}",
                f"--cert-dir={self.workdir / 'kcm-certs'}",
            ],
            self.workdir / "kube-controller-manager.log",
        )

    def _bin(self, name: str) -> Path:
        assert self.bin_dir is not None
        return self.bin_dir / name

    def _start_etcd(self) -> None:
        started = time.monotonic()
        proc = self._procs[ETCD]
        proc.start()
        self._wait(proc, lambda: _http_ok(f"{self.etcd_url}/health"), timeout=30.0)
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
        self._wait(proc, lambda: _http_ok(f"{self.server}/readyz", context, headers), timeout=120.0)
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
        self._wait(proc, lambda: _http_ok(url, insecure), timeout=60.0)
        self.timings["controller_manager_ready"] = time.monotonic() - started

    def _wait(self, proc: _Process, ready: Callable[[], bool], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            if not proc.running():
                raise ControlPlaneError(f"{proc.name} exited during startup; log tail:\n{proc.log_tail()}")
            if time.monotonic() > deadline:
                raise ControlPlaneError(f"{proc.name} not ready after {timeout:.0f}s; log tail:\n{proc.log_tail()}")
            time.sleep(0.05)

    # -- etcd -------------------------------------------------------------------------------

    def _etcd_post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(
            f"{self.etcd_url}{path}",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            result: dict[str, Any] = json.loads(response.read())
            return result

    def etcd_revision(self) -> int:
        """etcd's current revision, which is also the newest resourceVersion the apiserver hands out."""
        status = self._etcd_post("/v3/maintenance/status", {})
        return int(status["header"]["revision"])

    def compact(self, revision: int | None = None) -> int:
        """Compact etcd up to `revision` (default: current) through its v3 HTTP gateway; returns
        the revision. Watches and paginated lists from older resourceVersions then get 410 Gone,
        as long as they reach etcd: true with the default watch_cache=False. With the watch
        cache on, follow with restart_apiserver() (a fresh cache refuses older versions)."""
        target = self.etcd_revision() if revision is None else revision
        self._etcd_post("/v3/kv/compaction", {"revision": str(target), "physical": True})
        return target

    # -- memory -----------------------------------------------------------------------------

    def _sample_peak(self, proc: _Process) -> None:
        self._peaks[proc.name] = max(self._peaks.get(proc.name, 0), proc.peak_kib())

    def peak_rss_kib(self) -> dict[str, int]:
        """Peak resident set (VmHWM, KiB) per control-plane process, kept across restarts."""
        for proc in self._procs.values():
            self._sample_peak(proc)
        return {name: kib for name, kib in self._peaks.items() if kib}

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


def write_kubeconfig_file(path: Path, server: str, ca_file: Path, token: str, *, user: str = "user") -> Path:
    """A kubeconfig for `server` (trusting `ca_file`) and bearer `token`. Written to a temp name and
    renamed, so a watcher never reads a half-written file."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "local",
                "cluster": {
                    "server": server,
                    "certificate-authority-data": base64.b64encode(ca_file.read_bytes()).decode(),
                },
            }
        ],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": "local", "context": {"cluster": "local", "user": user}}],
        "current-context": "local",
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(yaml.safe_dump(config, sort_keys=False))
    tmp.chmod(0o600)
    tmp.replace(path)
    return path


@dataclass(frozen=True)
class KeptIdentity:
    port: int
    admin_token: str
    kubeconfig: Path


def kept_identity(directory: Path, address: str) -> KeptIdentity:
    """The API server identity kept in `directory` for `address` (see ControlPlane.identity_dir),
    made on first use: a port free now, certificates, an admin token and its kubeconfig."""
    record, kubeconfig = directory / "identity.json", directory / "admin.kubeconfig"
    try:
        kept = json.loads(record.read_text())
        if kept["address"] == address and kubeconfig.exists():
            return KeptIdentity(int(kept["port"]), str(kept["admin_token"]), kubeconfig)
    except (OSError, ValueError, KeyError):
        pass
    shutil.rmtree(directory / "pki", ignore_errors=True)
    _make_certs(directory / "pki", address)
    port, token = free_port(), secrets.token_hex(16)
    record.write_text(json.dumps({"address": address, "port": port, "admin_token": token}))
    record.chmod(0o600)
    write_kubeconfig_file(kubeconfig, f"https://{address}:{port}", directory / "pki" / "ca.crt", token, user="admin")
    return KeptIdentity(port, token, kubeconfig)


def _http_ok(url: str, context: ssl.SSLContext | None = None, headers: dict[str, str] | None = None) -> bool:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=2, context=context) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError, ValueError):
        return False


# -- CLI --------------------------------------------------------------------------------------


def _format_rss(peaks: dict[str, int]) -> str:
    parts = [f"{name} {kib / 1024:.0f} MiB" for name, kib in sorted(peaks.items())]
    return f"{sum(peaks.values()) / 1024:.0f} MiB ({', '.join(parts)})"


async def _up(plane: ControlPlane, args: argparse.Namespace) -> None:
    names = await plane.start_with_crds(exclude=args.exclude)
    if args.presets_namespace:
        await plane.install_llm_presets(args.presets_namespace)
    kubeconfig = plane.kubeconfig
    if args.kubeconfig_out:
        kubeconfig = plane.write_kubeconfig(args.kubeconfig_out, plane.admin_token, user="admin")
    print(f"# control plane up: {plane.server}, {len(names)} CRDs established", file=sys.stderr)
    print(f"export KUBECONFIG={kubeconfig}", flush=True)


def _block_until_signal() -> None:
    stop = threading.Event()

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, handler)
    while not stop.wait(3600):
        pass


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="controlplane.py", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("build", help="locate or build the binaries and print their directory")
    up = sub.add_parser("up", help="start, install CRDs, print `export KUBECONFIG=...`, block until signalled")
    up.add_argument("--kubeconfig-out", help="also write the admin kubeconfig here (once CRDs are ready)")
    up.add_argument("--presets-namespace", help="install KServe's LLM presets into this namespace")
    check = sub.add_parser("check", help="start, install CRDs, print timings and peak RSS, stop")
    for p in (up, check):
        p.add_argument("--exclude", action="append", default=[], help="CRD group or CRD name to skip")
        p.add_argument("--no-controller-manager", action="store_true", help="run without GC/namespace controllers")
        p.add_argument("--keep", action="store_true", help="keep the temp dir (logs, data) after stopping")
    args = parser.parse_args(argv)
    if getattr(args, "kubeconfig_out", None):
        args.kubeconfig_out = Path(args.kubeconfig_out).resolve()

    if args.command == "build":
        print(find_binaries())
        return 0

    plane = ControlPlane(controller_manager=not args.no_controller_manager, keep_dir=args.keep)
    try:
        if args.command == "up":
            asyncio.run(_up(plane, args))
            _block_until_signal()
        else:
            asyncio.run(plane.start_with_crds(exclude=args.exclude))
            for name, seconds in plane.timings.items():
                print(f"{name:>26}: {seconds:6.2f} s")
            print(f"{'peak RSS':>26}: {_format_rss(plane.peak_rss_kib())}")
    except (ControlPlaneError, ApiError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        plane.stop()
        if args.keep:
            print(f"# kept {plane.workdir}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
