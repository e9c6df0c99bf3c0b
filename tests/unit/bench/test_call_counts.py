"""bench/call_counts.py: the calls two profiled runs made, per function and in all."""

from __future__ import annotations

import cProfile
from pathlib import Path

from bench.call_counts import calls_by_function


def _work(times: int) -> None:
    for _ in range(times):
        sorted([3, 1, 2])


def _profiled(path: Path, times: int) -> str:
    profile = cProfile.Profile()
    profile.runcall(_work, times)
    profile.dump_stats(path)
    return str(path)


def test_counts_calls_per_function_whatever_the_run_took(tmp_path: Path) -> None:
    before = calls_by_function(_profiled(tmp_path / "before", 10))
    after = calls_by_function(_profiled(tmp_path / "after", 25))
    assert before["~:<built-in method builtins.sorted>"] == 10
    assert after["~:<built-in method builtins.sorted>"] == 25
    work = next(name for name in after if name.endswith(":_work"))
    assert before[work] == after[work] == 1
