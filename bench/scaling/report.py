"""The tables: every figure of the issue's targets for each topology beside the null-provider floor
of the same run (and its ratio to it), then the details of each run, then ratios to a baseline."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Result = dict[str, Any]


@dataclass(frozen=True)
class Figure:
    label: str
    value: Callable[[Result], float | None]
    target: str = ""
    met: Callable[[Result, float], bool] | None = None


def _get(key: str, scale: float = 1.0) -> Callable[[Result], float | None]:
    return lambda r: None if r.get(key) is None else float(r[key]) * scale


def _per_instance(r: Result) -> float:
    return float(1000 * r["cpu_seconds"] / r["n"])


def _within(limit: float) -> Callable[[Result, float], bool]:
    return lambda r, v: v <= limit


def requests_total(r: Result) -> float:
    return float(sum(r["requests"].values()))


def _per_1000(r: Result, results: list[Result]) -> float | None:
    """RSS growth per extra 1000 Instances between the smallest size >= 1000 and this one."""
    sizes = [x for x in results if x["topology"] == r["topology"] and 1000 <= x["n"] < r["n"]]
    if not sizes:
        return None
    base = min(sizes, key=lambda x: x["n"])
    return float((r["rss"] - base["rss"]) / ((r["n"] - base["n"]) / 1000))


def figures(results: list[Result]) -> list[Figure]:
    return [
        Figure("converge wall (s)", _get("seconds")),
        Figure("converge CPU per Instance (ms)", _per_instance, "<= 4", lambda r, v: v <= 4),
        Figure("API requests per Instance", requests_total),
        Figure("failed reconciles (retried)", _get("errors"), "0", lambda r, v: v == 0),
        Figure("process exited during converge", lambda r: float(r["exited"]), "0", lambda r, v: v == 0),
        Figure("spec change p99, N idle (ms)", _get("change_p99_ms"), "<= 30", lambda r, v: v <= 30),
        Figure("spec change p50, N idle (ms)", _get("change_p50_ms")),
        # An idle change in two parts (percentiles of each: they need not add up to the whole's).
        Figure("  to the Instance's watch event, p99", _get("change_api_p99_ms")),
        Figure("  from it to the derived object, p99", _get("change_provider_p99_ms")),
        Figure("  to the Instance's watch event, p50", _get("change_api_p50_ms")),
        Figure("  from it to the derived object, p50", _get("change_provider_p50_ms")),
        Figure("spec change p99 during converge (ms)", _get("converge_change_p99_ms"), "<= 1000", _within(1000)),
        Figure("forced resync: writes", _get("resync_writes"), "0", lambda r, v: v == 0),
        Figure("restart over N: writes", _get("restart_writes"), "0", lambda r, v: v == 0),
        Figure("restart over N: CPU (s)", _get("restart_cpu")),
        Figure("idle CPU (s/min)", _get("idle_cpu_per_min"), "<= 0.1", lambda r, v: v <= 0.1),
        Figure("idle API requests (per min)", lambda r: _idle_requests_per_min(r)),
        Figure("churn: applies per Instance (10 edits)", _get("churn_applies_per_instance")),
        Figure("RSS after converge (MiB)", _get("rss"), "<= 200", lambda r, v: v <= 200),
        Figure("RSS per extra 1000 Instances (MiB)", lambda r: _per_1000(r, results), "<= 16", lambda r, v: v <= 16),
        Figure("delete all: wall (s)", _get("delete_seconds"), "<= converge", lambda r, v: v <= r["seconds"]),
        Figure("delete all: CPU (s)", _get("delete_cpu")),
    ]


def _idle_requests_per_min(r: Result) -> float | None:
    if "idle_requests" not in r or not r.get("idle_seconds"):
        return None
    return float(sum(r["idle_requests"].values()) * 60 / r["idle_seconds"])


def _cell(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.2f}"


def summary(results: list[Result]) -> None:
    floor = {r["n"]: r for r in results if r["topology"] == "null"}
    for r in results:
        if r["topology"] == "null":
            continue
        f = floor.get(r["n"])
        print(f"\n{r['topology']} N={r['n']} (null floor of the same run: {'yes' if f else 'not run'})")
        print(f"{'figure':<40} {'null':>9} {r['topology']:>9} {'ratio':>7}  {'target':<12} met")
        for fig in figures(results):
            value = fig.value(r)
            base = fig.value(f) if f else None
            ratio = f"{value / base:.2f}" if value is not None and base else "-"
            met = "" if fig.met is None or value is None else ("yes" if fig.met(r, value) else "NO")
            print(f"{fig.label:<40} {_cell(base):>9} {_cell(value):>9} {ratio:>7}  {fig.target:<12} {met}")


def details(results: list[Result]) -> None:
    print(
        f"\n{'topology':<10} {'N':>5} {'s':>7} {'inst/s':>7} {'cpu s':>6} {'rec/inst':>8}"
        f" {'RSS0':>6} {'RSS':>6} {'peak':>6} {'del s':>6}  requests/Instance"
    )
    for r in results:
        verbs = " ".join(f"{k}={v:.2f}" for k, v in r["requests"].items())
        print(
            f"{r['topology']:<10} {r['n']:>5} {r['seconds']:>7.1f} {r['per_second']:>7.1f} {r['cpu_seconds']:>6.1f}"
            f" {r['reconciles_per_instance']:>8.2f} {r['rss_start']:>6.1f} {r['rss']:>6.1f}"
            f" {r.get('rss_peak', 0):>6.1f} {r.get('delete_seconds', 0):>6.1f}  {verbs}"
        )
    for r in results:
        where = ", ".join(f"{k} {v:.2f}" for k, v in sorted((r.get("where") or {}).items()))
        print(f"{r['topology']} N={r['n']}: during the converge, {where}")
        if "change_where" in r:
            idle = ", ".join(f"{k} {v:.2f}" for k, v in sorted(r["change_where"].items()))
            print(f"{r['topology']} N={r['n']}: spec changes one at a time, N-1 idle, {idle}")
        if "restart_verbs" in r:
            print(
                f"{r['topology']} N={r['n']}: restart → requests {r['restart_verbs']},"
                f" {r['restart_reconciles']:.0f} reconciles in {r['restart_seconds']:.1f} s;"
                f" idle {r.get('idle_seconds', 0):.0f} s → requests {r.get('idle_requests')},"
                f" {r['idle_reconciles']:.0f} reconciles"
            )


def baseline_ratios(results: list[Result], baseline: list[Result]) -> None:
    before = {(b["topology"], b["n"]): b for b in baseline}
    if not before:
        return
    print("\nafter / before (baseline file)")
    for r in results:
        if b := before.get((r["topology"], r["n"])):
            cells = []
            for fig in figures(results):
                value, old = fig.value(r), fig.value(b)
                if value is not None and old:
                    cells.append(f"{fig.label}: {_cell(old)} → {_cell(value)} (x{value / old:.2f})")
            print(f"{r['topology']} N={r['n']}:\n  " + "\n  ".join(cells))


def print_tables(results: list[Result], baseline: list[Result]) -> None:
    load = ", ".join(
        f"{r['topology']}/{r['n']}: converge {r.get('load_converge', 0):.1f}, idle {r.get('load_idle', 0):.1f}"
        for r in results
    )
    cache = {"on" if r.get("watch_cache") else "off" for r in results}
    print(f"\nmachine: {os.cpu_count()} cores; 1-min load average: {load}; API server watch cache {'/'.join(cache)}")
    summary(results)
    details(results)
    baseline_ratios(results, baseline)
