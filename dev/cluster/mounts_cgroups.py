"""The node's mounts, cgroups and stray processes: found, made, and removed at teardown."""

from __future__ import annotations

import contextlib
import os
import signal
import time
from pathlib import Path

from cluster.host import run
from plane import ControlPlaneError


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
