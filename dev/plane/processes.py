"""The control plane's processes: started to die with their parent, stopped with a grace period,
stopped at interpreter exit or SIGTERM, and the work directories of killed runs swept; and the
small helpers the command lines share (free ports, health probes, peak memory, waiting for a
signal)."""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import IO, Protocol

# prctl(2)'s option that delivers a signal to the child when its parent thread dies.
_PR_SET_PDEATHSIG = 1

# Every program the harness runs is a Go program (etcd, kube-apiserver, the controllers, kubelet,
# containerd, KServe's, kwok, Jaeger, Prometheus), and Go's default collector (GOGC=100) costs them
# much of their CPU: a kube-apiserver installing the 34 CRDs spent a third of it collecting (pprof),
# and with GOGC=400 its start and install took 25 CPU-seconds instead of 37 (and 11 s instead of 15);
# through the two heaviest integration tests, a quarter to a third less (docs/ci-time.md). Test and
# dev clusters have the memory to spare; GOMEMLIMIT bounds what the larger heap may take. A value
# set in the environment wins. (Pods do not inherit it: a container's environment is its spec's.)
GO_RUNTIME_DEFAULTS = {"GOGC": "400", "GOMEMLIMIT": "3GiB"}

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


def vm_hwm_kib(pid: int) -> int:
    """The peak resident set (VmHWM) of process `pid` in KiB; 0 once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


@dataclass
class Process:
    """A child process in its own process group, logging to `log`, killed with its parent."""

    name: str
    args: list[str]
    log: Path
    env: dict[str, str] | None = None  # the whole environment (but GO_RUNTIME_DEFAULTS); None: ours
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
            env={**GO_RUNTIME_DEFAULTS, **(os.environ if self.env is None else self.env)},
        )

    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def peak_kib(self) -> int:
        return vm_hwm_kib(self.popen.pid) if self.running() and self.popen else 0

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


_WORKDIR_PREFIX = "provider-kserve-cp-"


def make_workdir() -> Path:
    """A fresh temp dir owned by this process (its pid in `owner.pid`), once the dirs of killed
    owners are removed."""
    _sweep_orphaned_workdirs()
    workdir = Path(tempfile.mkdtemp(prefix=_WORKDIR_PREFIX))
    (workdir / "owner.pid").write_text(str(os.getpid()))
    return workdir


def release_workdir(workdir: Path, *, keep: bool) -> None:
    """Remove `workdir`, or keep it (logs, data) without an owner, so that no later start sweeps it."""
    if keep:
        (workdir / "owner.pid").unlink(missing_ok=True)
    else:
        shutil.rmtree(workdir, ignore_errors=True)


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


class Stoppable(Protocol):
    def stop(self) -> None: ...


# Every running control plane of this process, stopped at exit.
_live: set[Stoppable] = set()
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


def stop_at_exit(plane: Stoppable) -> None:
    """Stop `plane` at interpreter exit, and make SIGTERM exit through `finally` and atexit (when
    called from the main thread and nothing else handles SIGTERM)."""
    with _live_lock:
        _live.add(plane)
    in_main_thread = threading.current_thread() is threading.main_thread()
    if in_main_thread and signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, None):
        signal.signal(signal.SIGTERM, _exit_on_sigterm)


def stopped(plane: Stoppable) -> None:
    """`plane` has stopped: nothing to do for it at exit."""
    with _live_lock:
        _live.discard(plane)


def http_ok(url: str, context: ssl.SSLContext | None = None, headers: dict[str, str] | None = None) -> bool:
    """Whether GET `url` answers 200 within 2 s (a health or readiness probe)."""
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=2, context=context) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError, ValueError):
        return False


# -- command lines ----------------------------------------------------------------------------


def format_rss(peaks: dict[str, int]) -> str:
    """Peak RSS per process (KiB, as peak_rss_kib() returns them) as one line: the total, then each."""
    parts = [f"{name} {kib / 1024:.0f} MiB" for name, kib in sorted(peaks.items())]
    return f"{sum(peaks.values()) / 1024:.0f} MiB ({', '.join(parts)})"


def block_until_signal() -> None:
    """Return on SIGINT, SIGTERM or SIGHUP (a command that keeps a cluster up until stopped)."""
    stop = threading.Event()

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, handler)
    while not stop.wait(3600):
        pass
