"""Go tools the tests run, built by dev/build-controlplane.sh from their modules (once, cached)."""

from __future__ import annotations

import subprocess
from functools import cache
from pathlib import Path

import pytest

BUILD_SCRIPT = Path(__file__).resolve().parents[2] / "dev" / "build-controlplane.sh"


@cache
def built(target: str, name: str) -> Path:
    """The binary `name` of `dev/build-controlplane.sh target` (built on first use: minutes cold)."""
    try:
        out = subprocess.run(
            ["bash", str(BUILD_SCRIPT), target], check=True, capture_output=True, text=True, timeout=3600
        )
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as err:
        stderr = getattr(err, "stderr", "") or ""
        pytest.fail(f"could not build {target} with {BUILD_SCRIPT}: {err}\n{stderr[-2000:]}", pytrace=False)
    binary = Path(out.stdout.strip().splitlines()[-1]) / name
    if not binary.is_file():
        pytest.fail(f"{BUILD_SCRIPT} {target} did not produce {binary}", pytrace=False)
    return binary
