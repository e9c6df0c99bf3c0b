"""What a node changes on its host, recorded before the change and undone by `HostChanges.undo()`.

A kubelet, containerd and the CNI plugins reach beyond their own directories: the kubelet sets
kernel sysctls (vm.overcommit_memory, kernel.panic, ...) and iptables chains, the bridge plugin
turns on ip_forward, kube-proxy writes its KUBE-* chains, containerd bind-mounts network namespaces
under /run/netns, runc makes cgroups, and several create directories at fixed paths. Teardown puts
each of those back: the record is written to disk first, so a cluster whose process was killed is
cleaned up by the next start (`recover_orphan`).

One node-mode cluster runs on a host at a time (`host_lock`): kube-proxy's chains are host-wide.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shlex
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

from controlplane import ControlPlaneError

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
)

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
_PROC_SYS = Path("/proc/sys")

# iptables chains and rules of the node: kube-proxy's and the kubelet's KUBE-*, the bridge
# plugin's CNI-*, and our own rules, which carry this comment.
RULE_COMMENT = "provider-kserve node"
_OUR_CHAIN_PREFIXES = ("KUBE-", "CNI-")
IPTABLES_FAMILIES = ("iptables", "ip6tables")


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


@contextlib.contextmanager
def host_lock() -> Iterator[None]:
    """One node-mode cluster per host at a time (kube-proxy's iptables chains are host-wide). Re-
    entrant within a process, so a test can hold it across several clusters' lifetimes."""
    global _lock_depth, _lock_file
    with _lock_guard:
        if _lock_depth == 0:
            fd = os.open(state_dir() / "host.lock", os.O_CREAT | os.O_RDWR, 0o600)
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


# -- sysctls --------------------------------------------------------------------------------------


def read_sysctls(patterns: tuple[str, ...] = SYSCTLS) -> dict[str, str]:
    """Current values, keyed by path under /proc/sys, in the order of `patterns`."""
    values: dict[str, str] = {}
    for pattern in patterns:
        for path in sorted(_PROC_SYS.glob(pattern)):
            with contextlib.suppress(OSError):
                values[str(path.relative_to(_PROC_SYS))] = " ".join(path.read_text().split())
    return values


def write_sysctl(name: str, value: str) -> None:
    (_PROC_SYS / name).write_text(value + "\n")


# -- iptables -------------------------------------------------------------------------------------


def iptables_rules(family: str) -> list[str]:
    """`<family>-save` without comments and counters: `*table`, `:chain policy` and `-A` lines."""
    if shutil.which(f"{family}-save") is None:
        return []
    lines = []
    for line in run(f"{family}-save").splitlines():
        if not line or line.startswith("#"):
            continue
        if line.startswith(":"):
            line = line.rsplit(" [", 1)[0]
        lines.append(line)
    return lines


def _ours(text: str) -> bool:
    return RULE_COMMENT in text or any(prefix in text for prefix in _OUR_CHAIN_PREFIXES)


def _by_table(lines: list[str]) -> list[tuple[str, str]]:
    """(table, line) for each chain and rule line of an iptables_rules() listing."""
    table, out = "", []
    for line in lines:
        if line.startswith("*"):
            table = line[1:]
        elif line.startswith((":", "-A ")):
            out.append((table, line))
    return out


def remove_new_iptables(before: dict[str, list[str]]) -> None:
    """Delete the rules and chains of ours (KUBE-*, CNI-*, our comment) added since `before`."""
    for family in IPTABLES_FAMILIES:
        old = set(_by_table(before.get(family, [])))
        rules: list[tuple[str, str]] = []
        chains: list[tuple[str, str]] = []
        for table, line in _by_table(iptables_rules(family)):
            if (table, line) in old:
                continue
            if line.startswith("-A ") and _ours(line):
                rules.append((table, line))
            elif line.startswith(":") and line[1:].startswith(_OUR_CHAIN_PREFIXES):
                chains.append((table, line[1:].split()[0]))
        for table, line in reversed(rules):
            run(family, "-w", "-t", table, "-D", *shlex.split(line)[1:], check=False)
        for flag in ("-F", "-X"):
            for table, chain in chains:
                run(family, "-w", "-t", table, flag, chain, check=False)


def remove_new_empty_tables(before: dict[str, list[str]]) -> None:
    """Delete the tables iptables created on first use (with nftables underneath, `filter`, `nat`
    and `mangle` exist only once something touched them) when nothing is left in them."""
    for family, nft_family in zip(IPTABLES_FAMILIES, ("ip", "ip6"), strict=True):
        existed = {line[1:] for line in before.get(family, []) if line.startswith("*")}
        table, empty = "", dict[str, bool]()
        for line in iptables_rules(family):
            if line.startswith("*"):
                table = line[1:]
                empty[table] = True
            elif line.startswith("-A ") or (line.startswith(":") and not line.endswith(" ACCEPT")):
                empty[table] = False  # a rule, a chain of its own ("-" policy) or a changed policy
        for name, is_empty in empty.items():
            if is_empty and name not in existed and shutil.which("nft"):
                run("nft", "delete", "table", nft_family, name, check=False)


def add_forward_guard(bridge: str) -> None:
    """Drop whatever pods send to anywhere but the bridge: nothing a pod does leaves this host."""
    for family in IPTABLES_FAMILIES:
        if shutil.which(family):
            run(family, "-w", "-I", "FORWARD", "-i", bridge, "!", "-o", bridge,
                "-m", "comment", "--comment", RULE_COMMENT, "-j", "DROP")  # fmt: skip


# -- mounts, cgroups, processes -------------------------------------------------------------------


def mount_points() -> list[str]:
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        field_ = line.split()[4]
        points.append(field_.encode().decode("unicode_escape"))
    return points


def unmount_under(prefix: Path) -> None:
    """Lazily unmount everything at or below `prefix`, deepest first."""
    root = str(prefix)
    for point in sorted({p for p in mount_points() if p == root or p.startswith(root + "/")}, key=len, reverse=True):
        run("umount", "-l", point, check=False)


def cgroup_hierarchies() -> list[Path]:
    """Mount points of the cgroup v1 hierarchies (or the single v2 one)."""
    found = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        pre, _, post = line.partition(" - ")
        if post.split()[0] in ("cgroup", "cgroup2"):
            found.append(Path(pre.split()[4]))
    return sorted(set(found))


def make_cgroup(name: str) -> None:
    """`name` under every hierarchy: the kubelet's cgroupRoot, which must exist before it starts."""
    for hierarchy in cgroup_hierarchies():
        path = hierarchy / name
        path.mkdir(exist_ok=True)
        for knob in ("cpuset.cpus", "cpuset.mems"):  # an empty cpuset admits no process
            if (path / knob).exists() and not (path / knob).read_text().strip():
                (path / knob).write_text((hierarchy / knob).read_text())


def remove_cgroup(name: str, timeout: float = 20.0) -> None:
    """Kill every process left in the `name` subtree, then remove its cgroups bottom-up."""
    deadline = time.monotonic() + timeout
    for hierarchy in cgroup_hierarchies():
        top = hierarchy / name
        while top.exists():
            for pid in _cgroup_pids(top):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            for directory, _, _ in sorted(os.walk(top), key=lambda entry: len(entry[0]), reverse=True):
                with contextlib.suppress(OSError):
                    Path(directory).rmdir()
            if top.exists():
                if time.monotonic() > deadline:
                    raise ControlPlaneError(f"cgroup {top} still busy after {timeout:.0f}s")
                time.sleep(0.2)


def _cgroup_pids(top: Path) -> set[int]:
    pids: set[int] = set()
    for procs in top.rglob("cgroup.procs"):
        with contextlib.suppress(OSError, ValueError):
            pids.update(int(pid) for pid in procs.read_text().split())
    return pids


def kill_processes_mentioning(text: str) -> None:
    """SIGKILL any process whose command line contains `text` (a shim that outlived containerd)."""
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        with contextlib.suppress(OSError, ProcessLookupError):
            if text in proc.joinpath("cmdline").read_bytes().decode(errors="replace"):
                os.kill(int(proc.name), signal.SIGKILL)


# -- the record ------------------------------------------------------------------------------------


@dataclass
class HostChanges:
    """What the host looked like before the node started, and what the node will add. Saved to
    `state_dir()/host-record.json` before any change is made; `undo()` restores it."""

    workdir: str
    bridge: str
    cgroup: str
    owner: int = field(default_factory=os.getpid)
    sysctls: dict[str, str] = field(default_factory=read_sysctls)
    iptables: dict[str, list[str]] = field(default_factory=lambda: {f: iptables_rules(f) for f in IPTABLES_FAMILIES})
    netns: list[str] = field(default_factory=lambda: sorted(p.name for p in NETNS_DIR.glob("*")))
    paths: list[str] = field(default_factory=lambda: [p for p in FIXED_PATHS if os.path.lexists(p)])

    @staticmethod
    def file() -> Path:
        return state_dir() / "host-record.json"

    def save(self) -> None:
        tmp = self.file().with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=1))
        tmp.replace(self.file())

    @classmethod
    def load(cls) -> HostChanges | None:
        with contextlib.suppress(OSError, ValueError, TypeError):
            return cls(**json.loads(cls.file().read_text()))
        return None

    def undo(self) -> list[str]:
        """Restore the host; returns what could not be restored (empty when clean)."""
        errors: list[str] = []
        steps = (
            ("processes", lambda: kill_processes_mentioning(self.workdir)),
            ("cgroups", lambda: remove_cgroup(self.cgroup)),
            ("network namespaces", self._remove_new_netns),
            ("mounts", lambda: unmount_under(Path(self.workdir))),
            ("bridge", lambda: run("ip", "link", "del", self.bridge, check=False)),
            ("iptables", lambda: remove_new_iptables(self.iptables)),
            ("iptables tables", lambda: remove_new_empty_tables(self.iptables)),
            ("sysctls", self._restore_sysctls),
            ("directories", self._remove_new_paths),
        )
        for what, step in steps:
            try:
                step()
            except (OSError, ControlPlaneError) as err:
                errors.append(f"{what}: {err}")
        if not errors:
            self.file().unlink(missing_ok=True)
        return errors

    def _remove_new_netns(self) -> None:
        for path in NETNS_DIR.glob("*"):
            if path.name not in self.netns:
                run("umount", "-l", str(path), check=False)
                path.unlink(missing_ok=True)

    def _restore_sysctls(self) -> None:
        for name, value in self.sysctls.items():
            path = _PROC_SYS / name
            with contextlib.suppress(FileNotFoundError):  # an interface that went away
                if " ".join(path.read_text().split()) != value:
                    write_sysctl(name, value)

    def _remove_new_paths(self) -> None:
        for name in FIXED_PATHS:
            path = Path(name)
            if name in self.paths or not os.path.lexists(path):
                continue
            if path == NETNS_DIR:  # shared with `ip netns`: only if nothing else is in it
                with contextlib.suppress(OSError):
                    path.rmdir()
            else:
                shutil.rmtree(path, ignore_errors=True)


def recover_orphan() -> None:
    """Undo the changes of a node whose process died without tearing down (SIGKILL, a crash)."""
    record = HostChanges.load()
    if record is None:
        return
    if record.owner != os.getpid() and _alive(record.owner):
        raise ControlPlaneError(f"a node-mode cluster of process {record.owner} runs on this host; stop it first")
    errors = record.undo()
    if errors:
        raise ControlPlaneError("could not clean up after an earlier node: " + "; ".join(errors))
    shutil.rmtree(record.workdir, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
