"""Helm for the tests: the pinned build from dev/build-controlplane.sh (built once, cached), or the
binary named by `HELM`."""

from __future__ import annotations

import os
import subprocess
from functools import cache
from pathlib import Path

import pytest

BUILD_SCRIPT = Path(__file__).resolve().parents[2] / "dev" / "build-controlplane.sh"


@cache
def helm_binary() -> str:
    """`HELM`, else the pinned build from dev/build-controlplane.sh (built once, cached)."""
    if override := os.environ.get("HELM"):
        return override
    try:
        out = subprocess.run(
            ["bash", str(BUILD_SCRIPT), "helm"], check=True, capture_output=True, text=True, timeout=1800
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as err:
        stderr = getattr(err, "stderr", "") or ""
        pytest.fail(f"could not build helm with {BUILD_SCRIPT}: {err}\n{stderr[-2000:]}", pytrace=False)
    helm = Path(out.stdout.strip().splitlines()[-1]) / "helm"
    if not helm.is_file():
        pytest.fail(f"{BUILD_SCRIPT} helm did not produce {helm}", pytrace=False)
    return str(helm)


def helm(
    *args: str, check: bool = True, kubeconfig: Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KUBECONFIG": str(kubeconfig)} if kubeconfig else None
    proc = subprocess.run([helm_binary(), *args], capture_output=True, text=True, timeout=timeout, env=env)
    if check and proc.returncode != 0:
        raise AssertionError(f"helm {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}")
    return proc
