"""The real `provider-kserve run` as a child process (to be SIGKILLed, or looked at from outside: its
memory), and the admin kubeconfig it runs with."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import resource
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

PROVIDER_BIN = Path(sys.executable).parent / "provider-kserve"


@dataclass
class ProviderProcess:
    """`provider-kserve run` against `kubeconfig`, watching one namespace, logging to `log`."""

    kubeconfig: Path
    namespace: str
    log: Path
    env: dict[str, str] = field(default_factory=dict)
    # More `run` flags, after the defaults (so a later `--health-port N` wins).
    args: list[str] = field(default_factory=list)
    # The process's file-descriptor limit (RLIMIT_NOFILE), when not the test's own.
    nofile: int | None = None
    process: asyncio.subprocess.Process | None = None
    starts: int = 0

    async def start(self) -> None:
        assert self.process is None, "already running"
        env = {k: v for k, v in os.environ.items() if k != "KUBERNETES_SERVICE_HOST"}
        # PROVIDER_SRC: another checkout's src/ (e.g. a `git worktree` of an older commit) runs in
        # place of this one's, for before/after figures of the same test.
        if os.environ.get("PROVIDER_SRC"):
            env["PYTHONPATH"] = os.environ["PROVIDER_SRC"]
        env.update(self.env)
        with self.log.open("ab") as sink:
            self.process = await asyncio.create_subprocess_exec(
                str(PROVIDER_BIN),
                "run",
                "--kubeconfig",
                str(self.kubeconfig),
                "--no-leader-elect",
                "--namespace",
                self.namespace,
                "--metrics-port",
                "0",
                "--health-port",
                "0",
                "--validation-port",
                "0",
                *self.args,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=sink,
                stderr=asyncio.subprocess.STDOUT,
                env=env,
                preexec_fn=None if self.nofile is None else functools.partial(_limit_files, self.nofile),
            )
        self.starts += 1

    async def kill(self) -> int:
        """SIGKILL: no cleanup, no last status write, sockets dropped mid-request."""
        process, self.process = self.process, None
        assert process is not None, "not running"
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGKILL)
        return await process.wait()

    async def stop(self) -> None:
        if self.process is not None and self.process.returncode is None:
            await self.kill()
        self.process = None

    def alive(self) -> bool:
        return self.process is not None and self.process.returncode is None


def _limit_files(count: int) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (count, count))


def write_kubeconfig(controlplane: Any, path: Path, server: str | None = None) -> Path:
    """The admin kubeconfig, optionally pointing at another address (a proxy)."""
    controlplane.write_kubeconfig(path, controlplane.admin_token, user="admin")
    if server is not None:
        config = yaml.safe_load(path.read_text())
        config["clusters"][0]["cluster"]["server"] = server
        path.write_text(yaml.safe_dump(config))
    return path


def vm_hwm_mib(pid: int) -> float:
    """Peak resident memory of a process (VmHWM), MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def vm_rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0
