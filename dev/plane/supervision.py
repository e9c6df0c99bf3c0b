"""Processes supervised beside the control plane: started, waited for, counted in peak memory.

A mixin of ControlPlane (control_plane.py), which declares the state it uses as dataclass fields.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from plane.constants import ControlPlaneError
from plane.processes import Process


class Supervision:
    workdir: Path
    timings: dict[str, float]
    _procs: dict[str, Process]
    # Started by add_process (a scheduler, kwok, controllers), in start order, with stop graces.
    _extra: dict[str, tuple[Process, float]]
    _peaks: dict[str, int]

    def add_process(
        self,
        name: str,
        args: list[str],
        *,
        env: dict[str, str] | None = None,
        ready: Callable[[], bool] | None = None,
        timeout: float = 120.0,
        grace: float = 5.0,
    ) -> Process:
        """Start one more process beside the control plane and wait until `ready()`. Its log is
        `<workdir>/<name>.log`; it is stopped (SIGTERM, `grace` seconds, SIGKILL) before the
        control plane, and counted in peak_rss_kib()."""
        if name in self._procs or name in self._extra:
            raise ControlPlaneError(f"a process named {name} is already supervised")
        proc = Process(name, args, self.workdir / f"{name}.log", env=env)
        self._extra[name] = (proc, grace)
        started = time.monotonic()
        proc.start()
        if ready is not None:
            self._wait(proc, ready, timeout)
            self.timings[f"{name}_ready"] = time.monotonic() - started
        return proc

    def process(self, name: str) -> Process:
        """A process started by add_process (to restart it, or read its log)."""
        return self._extra[name][0]

    def _stop_extra(self) -> None:
        """Stop what add_process started, the last started first."""
        for extra, grace in reversed(list(self._extra.values())):
            self._sample_peak(extra)
            extra.stop(grace)

    def _wait(self, proc: Process, ready: Callable[[], bool], timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while not ready():
            if not proc.running():
                raise ControlPlaneError(f"{proc.name} exited during startup; log tail:\n{proc.log_tail()}")
            if time.monotonic() > deadline:
                raise ControlPlaneError(f"{proc.name} not ready after {timeout:.0f}s; log tail:\n{proc.log_tail()}")
            time.sleep(0.05)

    def _sample_peak(self, proc: Process) -> None:
        self._peaks[proc.name] = max(self._peaks.get(proc.name, 0), proc.peak_kib())

    def peak_rss_kib(self) -> dict[str, int]:
        """Peak resident set (VmHWM, KiB) per supervised process, kept across restarts."""
        for proc in [*self._procs.values(), *(p for p, _ in self._extra.values())]:
            self._sample_peak(proc)
        return {name: kib for name, kib in self._peaks.items() if kib}
