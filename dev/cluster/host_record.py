"""The record of what a node changes on its host (`HostChanges`), saved before the change and undone
at teardown, or by the next start after a node whose process died (`recover_orphan`)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from dataclasses import asdict, dataclass, field
from pathlib import Path

from cluster.host import FIXED_PATHS, NETNS_DIR, PROC_SYS, SHARED_DIRS, read_sysctls, run, state_dir, write_sysctl
from cluster.iptables import IPTABLES_FAMILIES, iptables_rules, remove_new_empty_tables, remove_new_iptables
from cluster.mounts_cgroups import kill_processes_mentioning, remove_cgroup, unmount_under
from plane import ControlPlaneError


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
            path = PROC_SYS / name
            with contextlib.suppress(FileNotFoundError):  # an interface that went away
                if " ".join(path.read_text().split()) != value:
                    write_sysctl(name, value)

    def _remove_new_paths(self) -> None:
        for name in FIXED_PATHS:
            path = Path(name)
            if name in self.paths or not os.path.lexists(path):
                continue
            if path in SHARED_DIRS:  # only if nothing else is in it
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
