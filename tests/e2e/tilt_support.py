"""Helpers of the Tilt end-to-end tests: a clean copy of the repository, the pinned tilt (`dev/tilt`)
run there as a given user, and what Tilt's own API says about its resources."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from plane import free_port
from tests.e2e.support import ROOT

BUILD_SCRIPT = ROOT / "dev" / "build-controlplane.sh"
# The log line the tests edit: the provider's first line when it starts.
RUN_MODULE = Path("src/actors/manager/command.py")
STARTING = 'log.info("starting"'


def built(target: str) -> Path:
    """The directory dev/build-controlplane.sh prints for `target` (cached builds: seconds)."""
    proc = subprocess.run(["bash", str(BUILD_SCRIPT), target], capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        pytest.fail(f"dev/build-controlplane.sh {target} failed:\n{proc.stderr[-3000:]}", pytrace=False)
    return Path(proc.stdout.strip().splitlines()[-1])


def clean_copy(dest: Path) -> Path:
    """The working tree as a fresh clone of it has it: tracked and new files, nothing git ignores
    (no venv, no build/, no vendored chart inputs), so the Tiltfile's own set-up is exercised."""
    names = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        capture_output=True, text=True, check=True,
    ).stdout.split("\0")  # fmt: skip
    for name in filter(None, names):
        source = ROOT / name
        if source.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


def mark_log_line(repo: Path, marker: str) -> None:
    """Edits the provider's start-up log line in `repo`'s src/ to carry `marker` (a save in an editor)."""
    path = repo / RUN_MODULE
    text = path.read_text()
    assert STARTING in text, f"{RUN_MODULE} no longer logs {STARTING}...: update the Tilt test's edit"
    path.write_text(text.replace(STARTING, f'log.info("starting {marker}"', 1))


@dataclass
class Tilt:
    """`dev/tilt` in `repo`, as user `uid` (setpriv) when given, on its own API port."""

    repo: Path
    env: dict[str, str]
    uid: int | None = None
    port: int = field(default_factory=free_port)
    logs: list[Path] = field(default_factory=list)

    def _argv(self, *args: str) -> list[str]:
        user = ["setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups"] if self.uid else []
        return [*user, str(self.repo / "dev" / "tilt"), *args]

    def _log(self, name: str) -> Path:
        path = self.repo.parent / f"tilt-{name}-{len(self.logs)}.log"
        self.logs.append(path)
        return path

    def run(self, *args: str, timeout: float) -> tuple[int, str]:
        """`tilt ARGS`, its exit status and output (also kept in a log file next to the repo)."""
        log = self._log(args[0])
        with log.open("w") as out:
            try:
                proc = subprocess.run(self._argv(*args), cwd=self.repo, env=self.env, stdout=out,
                                      stderr=subprocess.STDOUT, timeout=timeout, check=False)  # fmt: skip
            except subprocess.TimeoutExpired:
                return 124, log.read_text(errors="replace")
        return proc.returncode, log.read_text(errors="replace")

    def must(self, *args: str, timeout: float) -> str:
        status, output = self.run(*args, timeout=timeout)
        if status != 0:
            pytest.fail(f"tilt {' '.join(args)} exited {status}; its output ends:\n{output[-6000:]}", pytrace=False)
        return output

    def ci(self, timeout: float = 2400.0) -> str:
        return self.must("ci", f"--port={self.port}", f"--timeout={int(timeout)}s", timeout=timeout + 120)

    @contextlib.contextmanager
    def up(self) -> Iterator[subprocess.Popen[bytes]]:
        """`tilt up` streaming its log in the background until the block ends (then SIGINT, as Ctrl-C)."""
        log = self._log("up")
        with log.open("wb") as out:
            proc = subprocess.Popen(self._argv("up", f"--port={self.port}", "--stream"), cwd=self.repo, env=self.env,
                                    stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)  # fmt: skip
            try:
                yield proc
            except BaseException:
                # What the session says of its resources and its output (the log file goes with its
                # directory): a wait that timed out names no cause by itself.
                tail = log.read_text(errors="replace")[-8000:]
                sys.stderr.write(f"--- tilt up: resources {self.statuses()}; its output ({log}) ends:\n{tail}\n")
                raise
            finally:
                proc.send_signal(signal.SIGINT)
                try:
                    proc.wait(90)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()

    def api(self, *args: str) -> str:
        """A `tilt` client command against the running session (get, logs, ...): "" on failure."""
        try:
            proc = subprocess.run(self._argv(*args, f"--port={self.port}"), cwd=self.repo, env=self.env,
                                  capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
        except subprocess.TimeoutExpired:
            return ""  # callers poll, and `up` reports a failure with it: its own error must stand
        return proc.stdout if proc.returncode == 0 else ""

    def get(self, kind: str, name: str) -> dict[str, Any]:
        out = self.api("get", kind, name, "-o", "json")
        return json.loads(out) if out else {}

    def statuses(self) -> dict[str, str]:
        """Each resource's update and runtime status, as Tilt's UI shows them."""
        out = self.api("get", "uiresource", "-o", "json")
        statuses = {}
        for item in json.loads(out)["items"] if out else []:
            status = item.get("status") or {}
            statuses[item["metadata"]["name"]] = f"{status.get('updateStatus', '?')}/{status.get('runtimeStatus', '?')}"
        return statuses

    def resource_ready(self, name: str) -> bool:
        """The UIResource is up to date and running (Tilt's UI shows it green)."""
        status = self.get("uiresource", name).get("status") or {}
        return status.get("updateStatus") in ("ok", "not_applicable") and status.get("runtimeStatus") in (
            "ok",
            "not_applicable",
        )


def base_env(**extra: str) -> dict[str, str]:
    """The environment of a tilt session: free ports for what the Tiltfile forwards or serves."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("TILT_", "KUBECONFIG"))}
    for name in ("METRICS_PORT", "HEALTH_PORT", "VALIDATION_PORT", "API_PROXY_PORT"):
        env[name] = str(free_port())
    return {**env, **extra}
