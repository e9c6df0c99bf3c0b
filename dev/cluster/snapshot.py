"""A snapshot of the host state a node could change, and the difference of two snapshots: what
the host-clean test compares before and after node-mode clusters come and go.

It covers more than host_record.HostChanges records (wider sysctl sets, every cgroup, the top-level
entries of the system directories), so that a change nobody thought of still shows.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
from pathlib import Path

from cluster import host, iptables, mounts_cgroups

_SYSCTLS = (
    *host.SYSCTLS,
    "net/ipv4/conf/all/*",
    "net/ipv4/conf/default/*",
    "net/ipv6/conf/all/*",
    "net/ipv6/conf/default/*",
    "net/bridge/*",
    "vm/overcommit_*",
    "vm/panic_on_oom",
    "kernel/panic*",
    "kernel/keys/*",
    "net/netfilter/nf_conntrack_*timeout*",
)
# Directories whose entries a node might add to (by their names; their contents are its own).
_LISTED = ("/", "/run", "/var/run", "/var/lib", "/var/log", "/etc", "/opt", "/usr/libexec", "/sys/fs/bpf")
# (A kube-scheduler may belong to another harness; ours names the node's work dir.)
_NODE_PROCESSES = {"containerd", "containerd-shim", "containerd-shim-runc-v2", "kubelet", "kube-proxy", "pause", "runc"}
_TMP_PREFIX = "provider-kserve-node-"


def take() -> dict[str, list[str]]:
    """The host state as sorted lists of lines, one list per aspect."""
    state: dict[str, list[str]] = {
        "sysctls": [f"{k}={v}" for k, v in host.read_sysctls(_SYSCTLS).items()],
        "links": _ip("-o", "link", "show"),
        "addresses": _ip("-o", "addr", "show"),
        "routes": _ip("route", "show", "table", "all"),
        "mounts": sorted({_mount(line) for line in Path("/proc/self/mountinfo").read_text().splitlines()}),
        "cgroups": _cgroups(),
        "netns": sorted(p.name for p in host.NETNS_DIR.glob("*")),
        "processes": _processes(),
        "paths": _paths(),
    }
    for family in iptables.IPTABLES_FAMILIES:
        state[family] = iptables.iptables_rules(family)
    if shutil.which("nft"):
        state["nftables"] = sorted(host.run("nft", "list", "tables", check=False).splitlines())
    return state


def diff(before: dict[str, list[str]], after: dict[str, list[str]]) -> list[str]:
    """Human-readable differences, empty when the host is as it was."""
    lines = []
    for aspect in sorted(set(before) | set(after)):
        old, new = set(before.get(aspect, [])), set(after.get(aspect, []))
        lines += [f"{aspect}: - {item}" for item in sorted(old - new)]
        lines += [f"{aspect}: + {item}" for item in sorted(new - old)]
    return lines


def _ip(*args: str) -> list[str]:
    out = host.run("ip", *args, check=False)
    # Lifetimes count down and link statistics move: keep what configuration says.
    out = re.sub(r"\\?[ \t]+valid_lft \S+ preferred_lft \S+", "", out)
    out = re.sub(r"\\[ \t]+", " ", out)
    out = re.sub(r" expires \d+sec", "", out)
    return sorted(" ".join(line.split()) for line in out.splitlines() if line.strip())


def _mount(line: str) -> str:
    pre, _, post = line.partition(" - ")
    fields = pre.split()
    return f"{fields[4]} {post.split()[0]} {fields[3]}"


def _cgroups() -> list[str]:
    """Top-level cgroups and anything a kubelet or runc makes anywhere (other cgroups come and go
    with whatever else runs: a sandbox's per-command cgroups, for one)."""
    found = []
    for hierarchy in mounts_cgroups.cgroup_hierarchies():
        for directory, _, _ in os.walk(hierarchy):
            relative = Path(directory).relative_to(hierarchy)
            if len(relative.parts) <= 1 or any(word in directory for word in ("kubepods", "provider-kserve")):
                found.append(directory)
    return sorted(found)


def _processes() -> list[str]:
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        with contextlib.suppress(OSError):
            comm = (proc / "comm").read_text().strip()
            cmdline = (proc / "cmdline").read_bytes().decode(errors="replace")
            if comm in _NODE_PROCESSES or _TMP_PREFIX in cmdline:
                found.append(f"{comm} {cmdline.replace(chr(0), ' ').strip()}")
    return sorted(found)


def _paths() -> list[str]:
    found = [path for path in host.FIXED_PATHS if os.path.lexists(path)]
    for directory in _LISTED:
        with contextlib.suppress(OSError):
            found += [str(path) for path in Path(directory).iterdir()]
    found += [str(p) for p in Path("/tmp").glob(f"{_TMP_PREFIX}*")]
    return sorted(set(found))
