"""The control plane's processes: started to die with their parent, stopped with a grace period,
and the work directories of killed runs swept."""

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

from plane.constants import _PR_SET_PDEATHSIG

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
    env: dict[str, str] | None = None  # the whole environment; None inherits ours
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
            env=self.env,
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


class _Stoppable(Protocol):
    def stop(self) -> None: ...


# Every running control plane of this process, stopped at exit.
_live: set[_Stoppable] = set()
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


def _block_until_signal() -> None:
    stop = threading.Event()

    def handler(signum: int, frame: FrameType | None) -> None:
        stop.set()

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, handler)
    while not stop.wait(3600):
        pass
