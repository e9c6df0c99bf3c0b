"""What a node changes on its host, recorded before the change and undone by `HostChanges.undo()`.

A kubelet, containerd and the CNI plugins reach beyond their own directories: the kubelet sets
kernel sysctls (vm.overcommit_memory, kernel.panic, ...) and iptables chains, the bridge plugin
turns on ip_forward, kube-proxy writes its KUBE-* chains, containerd bind-mounts network namespaces
under /run/netns, runc makes cgroups, and several create directories at fixed paths. Teardown puts
each of those back: the record is written to disk first, so a cluster whose process was killed is
cleaned up by the next start (`recover_orphan`).

This module holds the commands, packages, host lock, sysctls and fixed paths; `iptables` the node's
chains and rules, `mounts_cgroups` its mounts, cgroups and stray processes, `host_record` the record
itself (`HostChanges`) and its undo.

One node-mode cluster runs on a host at a time (`host_lock`): kube-proxy's chains are host-wide.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from plane import ControlPlaneError

# The executable (or file) that shows each Debian package the node needs is installed.
PACKAGES = {
    "containerd": "containerd",
    "ctr": "containerd",
    "runc": "runc",
    "/usr/lib/cni/bridge": "containernetworking-plugins",
    "iptables": "iptables",
    "conntrack": "conntrack",
    "ip": "iproute2",
    "nft": "nftables",
}
CNI_BIN_DIR = Path("/usr/lib/cni")
NETNS_DIR = Path("/run/netns")

# Paths the node's components create whatever their configuration says (containerd's shim sockets,
# the CNI's result cache, the kubelet's container log links, ...). Removed again if they did not
# exist before; the host-state test finds any that is missing here.
FIXED_PATHS = (
    "/run/netns",
    "/run/containerd",
    "/var/lib/cni",
    "/var/log/containers",
    "/var/log/pods",
    "/usr/libexec/kubernetes",
    "/var/lib/kubelet",
    "/etc/cni",
    "/opt/cni",
    "/opt/containerd",
    "/var/lib/containerd",
    "/etc/kubernetes",
    "/run/xtables.lock",
    "/run/mount",
)
# Of those, the directories other tools share (`ip netns`; libmount's utab, which the first mount
# since boot with userspace options creates, whoever makes it): removed only when empty.
SHARED_DIRS = (NETNS_DIR, Path("/run/mount"))

# Sysctls the kubelet (kernel tunables), the bridge plugin (forwarding), kube-proxy (conntrack,
# route_localnet) and we (bridge netfilter) may write. Globs expand to the interfaces present at
# record time; restored in this order, because writing ip_forward resets every interface's value.
SYSCTLS = (
    "net/ipv4/ip_forward",
    "net/ipv4/conf/*/forwarding",
    "net/ipv4/conf/*/route_localnet",
    "net/ipv6/conf/*/forwarding",
    "net/bridge/bridge-nf-call-iptables",
    "net/bridge/bridge-nf-call-ip6tables",
    "vm/overcommit_memory",
    "vm/panic_on_oom",
    "kernel/panic",
    "kernel/panic_on_oops",
    "kernel/keys/root_maxkeys",
    "kernel/keys/root_maxbytes",
    "net/netfilter/nf_conntrack_max",
    "net/netfilter/nf_conntrack_tcp_timeout_established",
    "net/netfilter/nf_conntrack_tcp_timeout_close_wait",
)
PROC_SYS = Path("/proc/sys")


def run(*args: str, check: bool = True, timeout: float | None = None, input: str | None = None) -> str:
    """stdout of a command; on failure ControlPlaneError with its stderr, or "" without `check`."""
    proc = subprocess.run(args, capture_output=True, text=True, timeout=timeout, input=input, check=False)
    if proc.returncode != 0:
        if check:
            raise ControlPlaneError(f"{' '.join(args)} failed (exit {proc.returncode}): {proc.stderr.strip()}")
        return ""
    return proc.stdout


# -- packages and lock ----------------------------------------------------------------------------


def ensure_packages() -> None:
    """Install the Debian packages the node needs when root, else name the missing ones."""
    missing = sorted({pkg for tool, pkg in PACKAGES.items() if not _present(tool)})
    if not missing:
        return
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise ControlPlaneError(f"the node needs these Debian packages: {' '.join(missing)} (apt-get install, as root)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for cmd in (["apt-get", "update", "-qq"], ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing]):
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
        if proc.returncode != 0:
            raise ControlPlaneError(f"{' '.join(cmd)} failed: {proc.stderr.strip()[-2000:]}")


def _present(tool: str) -> bool:
    return Path(tool).exists() if tool.startswith("/") else shutil.which(tool) is not None


def state_dir() -> Path:
    base = os.environ.get("PROVIDER_KSERVE_CACHE") or str(Path.home() / ".cache" / "provider-kserve")
    path = Path(base) / "node"
    path.mkdir(parents=True, exist_ok=True)
    return path


_lock_depth = 0
_lock_guard = threading.Lock()
_lock_file: int | None = None


def _open_lock_file() -> int:
    return os.open(state_dir() / "host.lock", os.O_CREAT | os.O_RDWR, 0o600)


@contextlib.contextmanager
def host_lock() -> Iterator[None]:
    """One node-mode cluster per host at a time (kube-proxy's iptables chains are host-wide). Re-
    entrant within a process, so a test can hold it across several clusters' lifetimes."""
    global _lock_depth, _lock_file
    with _lock_guard:
        if _lock_depth == 0:
            fd = _open_lock_file()
            fcntl.flock(fd, fcntl.LOCK_EX)
            _lock_file = fd
        _lock_depth += 1
    try:
        yield
    finally:
        with _lock_guard:
            _lock_depth -= 1
            if _lock_depth == 0 and _lock_file is not None:
                os.close(_lock_file)
                _lock_file = None


@contextlib.contextmanager
def host_lock_lent(timeout: float = 600.0) -> Iterator[None]:
    """Lend the host lock this process holds to a cluster a child process starts and stops inside
    the block (Tilt's `cluster start`, a process of its own that must take the lock itself); taken
    back afterwards, waiting at most `timeout` seconds for that cluster to let go of it. The
    holder's snapshot comparison still brackets both."""
    global _lock_file
    with _lock_guard:
        lent, _lock_file = _lock_file, None
        if lent is not None:
            os.close(lent)
    try:
        yield
    finally:
        if lent is not None:
            fd = _open_lock_file()
            deadline = time.monotonic() + timeout
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if time.monotonic() > deadline:
                        os.close(fd)
                        raise ControlPlaneError(
                            f"the host lock was not given back within {timeout:.0f} s: a node-mode cluster "
                            "started meanwhile still runs (python -m cluster cleanup)"
                        ) from None
                    time.sleep(0.5)
            with _lock_guard:
                _lock_file = fd


# -- sysctls --------------------------------------------------------------------------------------


def read_sysctls(patterns: tuple[str, ...] = SYSCTLS) -> dict[str, str]:
    """Current values, keyed by path under /proc/sys, in the order of `patterns`."""
    values: dict[str, str] = {}
    for pattern in patterns:
        for path in sorted(PROC_SYS.glob(pattern)):
            with contextlib.suppress(OSError):
                values[str(path.relative_to(PROC_SYS))] = " ".join(path.read_text().split())
    return values


def write_sysctl(name: str, value: str) -> None:
    (PROC_SYS / name).write_text(value + "\n")
