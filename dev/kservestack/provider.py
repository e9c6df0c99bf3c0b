"""`provider-kserve run` as a child process against a local cluster (the demo, the recorder)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

from plane import ControlPlane

_REPO_ROOT = Path(__file__).resolve().parents[2]


@contextlib.contextmanager
def provider_process(
    plane: ControlPlane, log: Path, *extra_args: str, env: Mapping[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    """The provider with the examples' LoRA catalog, watching every namespace, logging to `log`
    (`env` added to its environment); SIGTERM (then SIGKILL after 10 s) on exit."""
    env = {
        **os.environ,
        **(env or {}),
        "LORA_ADAPTER_CATALOG": (_REPO_ROOT / "examples" / "lora-catalog.json").read_text(),
        "PYTHONPATH": str(_REPO_ROOT / "src"),
    }
    args = [sys.executable, "-m", "provider.cli", "run", "--kubeconfig", str(plane.kubeconfig), "--no-leader-elect",
            "--metrics-port", "0", "--health-port", "0", "--validation-port", "0", *extra_args]  # fmt: skip
    with log.open("wb") as sink:
        proc = subprocess.Popen(args, env=env, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        yield proc
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
