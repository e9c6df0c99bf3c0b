"""The bench's figures (bench/scaling/figures.py): drawn from the series a run records, and nothing
drawn from results saved before the bench recorded them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bench.scaling.figures import draw

PNG = b"\x89PNG\r\n\x1a\n"


def _run(topology: str, n: int, *, series: bool) -> dict[str, Any]:
    run: dict[str, Any] = {"topology": topology, "n": n, "watch_cache": True, "cores": 2, "when": "2025-01-01 12:00"}
    if series:
        run.update(
            converge_created_s=[i / 200 for i in range(n)],
            converge_done_s=[0.5 + i / 100 for i in range(n)],
            change_samples_ms=[5.0 + (i % 40) / 2 for i in range(n)],
        )
    return run


def test_each_size_gets_its_converge_curve_and_the_steady_size_its_latencies(tmp_path: Path) -> None:
    small, large = _run("null", 100, series=True), _run("llm", 100, series=True)
    no_samples = {k: v for k, v in _run("llm", 300, series=True).items() if k != "change_samples_ms"}
    written = draw([small, large, no_samples], tmp_path / "figures")
    assert [p.name for p in written] == ["converge-100.png", "change-latency-100.png", "converge-300.png"]
    assert all(p.read_bytes().startswith(PNG) for p in written)


def test_results_without_the_series_draw_nothing(tmp_path: Path) -> None:
    assert draw([_run("null", 100, series=False), _run("llm", 100, series=False)], tmp_path) == []
