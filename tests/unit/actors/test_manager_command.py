"""The runtime's command line (actors.manager.command): its flags are ManagerOptions' own, and a
process that cannot start says why in one line, never a traceback."""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

from actors import ManagerOptions, add_manager_arguments
from actors.manager.command import options_from

ROOT = Path(__file__).resolve().parents[3]


def parsed(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_manager_arguments(parser, name="example")
    return parser.parse_args(argv)


def test_no_flags_are_the_options_defaults_but_the_lease_name() -> None:
    options = options_from(parsed())
    defaults = ManagerOptions()
    assert options.lease_name == "example-leader"
    assert options.endpoints == defaults.endpoints
    for field in ("max_concurrent", "qps", "burst", "backoff_base", "backoff_cap", "idle_timeout", "resync_period"):
        assert getattr(options, field) == getattr(defaults, field), field
    assert options.limits == defaults.limits
    assert options.poll_not_ready is None


def test_flags_reach_the_options() -> None:
    options = options_from(
        parsed("--namespace", "a", "--namespace", "b", "--max-concurrent", "3", "--metrics-port", "0")
    )
    assert list(options.namespaces) == ["a", "b"]
    assert options.max_concurrent == 3
    assert options.endpoints.metrics_port is None  # 0 turns /metrics off


def test_a_kubeconfig_that_cannot_be_read_is_one_line_and_exit_1(tmp_path: Path) -> None:
    missing = tmp_path / "missing.kubeconfig"
    result = subprocess.run(
        [sys.executable, "-m", "provider.cli", "run", "--kubeconfig", str(missing), "--leader-elect"],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"},
        check=False,
        timeout=120,
    )
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert "start-up failed" in result.stderr and "cannot load the configuration of the API server" in result.stderr
