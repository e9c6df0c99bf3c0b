"""The node-mode cluster in the background, for Tilt (the Tiltfile's `local` target):

    python -m cluster identity --state-dir D          # print the kubeconfig of D's kept identity
    python -m cluster start --state-dir D             # start in the background; no-op when running
    python -m cluster import --state-dir D ARCHIVE [--content-tag]   # into its containerd
    python -m cluster stop --state-dir D              # stop it; the host is restored

Why in the background: `tilt ci` exits once everything is up, and the cluster must outlive it for
the next `tilt up` until `tilt down` stops it (as a k3d cluster outlives Tilt). Why a kept identity:
Tilt loads its kubeconfig once, when it starts, before the Tiltfile could start anything; so the
API server's address, port, CA and admin token are kept in D (ControlPlane.identity_dir) and the
kubeconfig made with them is valid for every cluster started from D, before and after it runs.

D holds `identity/` (the kept identity), `cluster.json` (the running cluster: pid, work directory,
containerd; written once it is up, removed when it stops) and `cluster.log`.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import IO, Any

from cluster import host_record
from cluster.node import NodeCluster
from cluster.node_config import NODE_IP
from cluster.runtime import Containerd
from plane import ControlPlaneError, kept_identity

_RUNNING = "cluster.json"
_LOG = "cluster.log"


def identity_dir(state_dir: Path) -> Path:
    return state_dir / "identity"


def identity_kubeconfig(state_dir: Path) -> Path:
    """The admin kubeconfig of the cluster started from `state_dir` (made now if need be)."""
    return kept_identity(identity_dir(state_dir), NODE_IP).kubeconfig


@dataclass(frozen=True)
class Running:
    pid: int
    workdir: str
    containerd: dict[str, str]

    def runtime(self) -> Containerd:
        return Containerd(**{key: Path(value) for key, value in self.containerd.items()})


@contextlib.contextmanager
def recorded(state_dir: Path, cluster: NodeCluster) -> Iterator[None]:
    """Record `cluster` (started by this process) as running from `state_dir` while in the block."""
    runtime = {f.name: str(getattr(cluster.containerd, f.name)) for f in fields(cluster.containerd) if f.init}
    record = state_dir / _RUNNING
    tmp = record.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(Running(os.getpid(), str(cluster.workdir), runtime))))
    tmp.replace(record)
    try:
        yield
    finally:
        record.unlink(missing_ok=True)


def running(state_dir: Path) -> Running | None:
    """The cluster running from `state_dir`, if its process is alive."""
    try:
        record = Running(**json.loads((state_dir / _RUNNING).read_text()))
    except (OSError, ValueError, TypeError):
        return None
    return record if _alive(record.pid) else None


def start(state_dir: Path, images: list[Path], timeout: float) -> Running:
    """Start `python -m cluster up` for `state_dir` in its own session (so it outlives its caller)
    and return once it is up, streaming its log meanwhile; a cluster already running is kept."""
    if (already := running(state_dir)) is not None:
        print(f"# node-mode cluster of {state_dir} already running (pid {already.pid})", flush=True)
        return already
    identity_kubeconfig(state_dir)
    (state_dir / _RUNNING).unlink(missing_ok=True)
    log_path = state_dir / _LOG
    log_path.write_bytes(b"")
    command = [sys.executable, "-m", "cluster", "up", "--state-dir", str(state_dir)]
    command += [arg for image in images for arg in ("--image", str(image))]
    with log_path.open("ab") as log, log_path.open("rb") as follow:
        proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)  # fmt: skip
        deadline = time.monotonic() + timeout
        while (up := running(state_dir)) is None:
            _copy_new(follow, sys.stdout)
            if proc.poll() is not None:
                raise ControlPlaneError(f"the node-mode cluster exited (status {proc.returncode}); log: {log_path}")
            if time.monotonic() > deadline:
                _terminate(proc.pid, 120.0)
                raise ControlPlaneError(f"the node-mode cluster was not up after {timeout:.0f}s; log: {log_path}")
            time.sleep(0.5)
        _copy_new(follow, sys.stdout)
    return up


def stop(state_dir: Path, timeout: float) -> None:
    """Stop the cluster running from `state_dir` (its teardown restores the host) and wait for it."""
    record = running(state_dir)
    if record is None:
        print(f"# no node-mode cluster runs from {state_dir}", flush=True)
        return
    log_path = state_dir / _LOG
    with log_path.open("rb") as follow:
        follow.seek(0, os.SEEK_END)
        stopped = _terminate(record.pid, timeout, lambda: _copy_new(follow, sys.stdout))
        _copy_new(follow, sys.stdout)
    if not stopped:
        raise ControlPlaneError(f"the node-mode cluster (pid {record.pid}) did not stop in {timeout:.0f}s")
    left = host_record.HostChanges.load()
    if left is not None and left.workdir == record.workdir:
        raise ControlPlaneError(
            f"the cluster's teardown left host changes behind (log: {log_path}); "
            "run `PYTHONPATH=dev .venv/bin/python -m cluster cleanup`"
        )
    print(f"# node-mode cluster of {state_dir} stopped, host restored", flush=True)


def import_image(state_dir: Path, archive: Path, content_tag: bool) -> list[str]:
    """Import `archive` into the running cluster's containerd. With `content_tag`, each image it
    brought is also tagged `tilt-<digest>`; returns those tags (else the names imported). (A
    buildah archive brings each image under two names, `localhost/` and the Docker Hub form.)"""
    record = running(state_dir)
    if record is None:
        raise ControlPlaneError(f"no node-mode cluster runs from {state_dir}: `python -m cluster start` it first")
    runtime = record.runtime()
    out = runtime.ctr("images", "import", str(archive))
    imported = re.findall(r"^unpacking (\S+) \((sha256:[0-9a-f]{64})\)", out, flags=re.MULTILINE)
    if not imported:
        raise ControlPlaneError(f"importing {archive} brought no image:\n{out}")
    if not content_tag:
        return [name for name, _ in imported]
    tags: dict[str, None] = {}
    for name, digest in imported:
        tag = f"tilt-{digest.removeprefix('sha256:')[:16]}"
        runtime.ctr("images", "tag", "--force", name, f"{name.rsplit(':', 1)[0]}:{tag}")
        tags[tag] = None
    return list(tags)


def command(args: Any) -> int:
    """The `identity`, `start`, `stop` and `import` subcommands."""
    state_dir: Path = args.state_dir.resolve()
    state_dir.mkdir(parents=True, exist_ok=True)
    if args.command == "identity":
        print(identity_kubeconfig(state_dir))
    elif args.command == "start":
        start(state_dir, args.image, args.timeout)
    elif args.command == "stop":
        stop(state_dir, args.timeout)
    else:
        for line in import_image(state_dir, args.archive, args.content_tag):
            print(line)
    return 0


def _copy_new(source: IO[bytes], sink: IO[str]) -> None:
    chunk = source.read()
    if chunk:
        sink.write(chunk.decode(errors="replace"))
        sink.flush()


def _terminate(pid: int, timeout: float, tick: Any = None) -> bool:
    """SIGTERM `pid` and wait up to `timeout` for it to be gone; True when it is."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while _alive(pid):
        if tick is not None:
            tick()
        if time.monotonic() > deadline:
            return False
        time.sleep(0.5)
    return True


def _alive(pid: int) -> bool:
    """Running (a zombie whose parent has not reaped it yet counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")
