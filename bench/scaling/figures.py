"""The figures of a bench run, as PNG files drawn by matplotlib's Agg canvas (no display, no
pyplot state): for each size, the converge curve (Instances done over time, each topology beside
the null floor of the same run), and at the steady-state size the distribution of the idle
spec-change latencies."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import FuncFormatter, NullFormatter

Result = dict[str, Any]

# Series kept in the results for the figures, left out of the printed summary of each run.
SERIES = ("converge_created_s", "converge_done_s", "change_samples_ms")

# The floor in grey, the provider's topologies in colours that stay apart in print too.
COLOURS = {"null": "#7f7f7f", "llm": "#1f77b4", "predictor": "#d62728"}
TARGET_P99_MS = 30.0  # issue 18's target for an idle spec change


def _label(r: Result, figure: str, load_key: str) -> str:
    """The run's topology, what the figure says of it, and the machine's 1-min load average when the
    phase began: on a shared machine that says more about a curve than anything in it."""
    name = "null provider (the floor)" if r["topology"] == "null" else f"{r['topology']} (provider-kserve)"
    load = r.get(load_key)
    return ", ".join(part for part in (name, figure, "" if load is None else f"load {load:.1f}") if part)


def _ordered(results: Sequence[Result]) -> list[Result]:
    """The floor first, so that the provider's lines are drawn over it."""
    return sorted(results, key=lambda r: (r["topology"] != "null", r["topology"]))


def _caption(results: Sequence[Result]) -> str:
    first = results[0]
    cache = "on" if first.get("watch_cache") else "off"
    parts = [
        f"bench/scale.py, {first.get('when', 'date not recorded')}",
        f"commit {first['commit']}" if first.get("commit") else "",
        f"{first.get('cores', '?')} cores shared with other work",
        f"API server watch cache {cache}",
        "beside a CPU hog" if first.get("contended") else "",
    ]
    return "; ".join(p for p in parts if p)


def _figure(width: float) -> Figure:
    fig = Figure(figsize=(width, 5.2))
    FigureCanvasAgg(fig)
    return fig


def _finish(fig: Figure, results: Sequence[Result], path: Path) -> Path:
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.text(0.01, 0.01, _caption(results), fontsize=8, color="#555555")
    fig.savefig(path, dpi=120)
    return path


def converge_curve(results: Sequence[Result], path: Path) -> Path:
    """Instances done (our finalizer and a status) against seconds since the first create, with the
    creations as dashed lines: the provider can run no faster than the Instances arrive."""
    n = results[0]["n"]
    fig = _figure(9)
    ax = fig.subplots()
    for r in _ordered(results):
        colour = COLOURS.get(r["topology"], "#2ca02c")
        done, created = r["converge_done_s"], r.get("converge_created_s") or []
        if created:
            ax.step(created, range(1, len(created) + 1), where="post", color=colour, lw=1, ls="--", alpha=0.7)
        label = _label(r, f"all {len(done)} in {done[-1]:.1f} s" if done else "", "load_converge")
        ax.step(done, range(1, len(done) + 1), where="post", color=colour, lw=2.2, label=label)
    ax.plot([], [], color="black", lw=1, ls="--", label="created (the bench's burst, 32 at a time)")
    ax.set(
        title=f"Converging {n} Instances created at once",
        xlabel="seconds since the first create",
        ylabel="Instances converged (finalizer and status written)",
        xlim=(0, None),
        ylim=(0, n * 1.04),
    )
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    return _finish(fig, results, path)


def _percentile(ordered: Sequence[float], q: float) -> float:
    """As the bench's tables compute it (bench/scaling/latency.py)."""
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _histogram(ax: Axes, results: Sequence[Result], top: float) -> None:
    width = next(w for w in (0.5, 1.0, 2.0, 5.0, 10.0, 20.0, 50.0) if top / w <= 100 or w == 50.0)
    bins = [width * i for i in range(int(top / width) + 1)]
    for r in results:
        samples = [min(s, top) for s in r["change_samples_ms"]]
        colour = COLOURS.get(r["topology"], "#2ca02c")
        ax.hist(samples, bins=bins, histtype="stepfilled", alpha=0.25, color=colour)
        ax.hist(samples, bins=bins, histtype="step", lw=1.5, color=colour, label=_label(r, "", "load_steady"))
    ax.set(
        title=f"All changes ({width:g} ms bins)",
        xlabel=f"spec change → derived object updated (ms; longer ones counted at {top:.0f})",
        ylabel="changes",
        xlim=(0, top),
    )
    ax.grid(alpha=0.3)
    ax.legend(loc="upper right")


def _tail(ax: Axes, results: Sequence[Result]) -> None:
    for r in results:
        ordered = sorted(r["change_samples_ms"])
        count = len(ordered)
        slower = [(count - i) / count for i in range(count)]  # share of changes at or above each value
        colour = COLOURS.get(r["topology"], "#2ca02c")
        p50, p99 = _percentile(ordered, 0.5), _percentile(ordered, 0.99)
        label = f"{r['topology']}: p50 {p50:.1f} ms, p99 {p99:.1f} ms"
        ax.step(ordered, slower, where="post", color=colour, lw=2, label=label)
    ax.axhline(0.01, color="black", lw=0.8, ls=":")
    ax.text(0.02, 0.0105, "1 % this slow: the p99", fontsize=8, va="bottom", transform=ax.get_yaxis_transform())
    ax.axvline(TARGET_P99_MS, color="#d62728", lw=1, ls="--")
    ax.text(
        TARGET_P99_MS * 1.04,
        0.02,
        f"target: p99 ≤ {TARGET_P99_MS:.0f} ms",
        fontsize=8,
        color="#d62728",
        va="bottom",
        transform=ax.get_xaxis_transform(),
    )
    ax.set(
        title="The tail",
        xscale="log",
        yscale="log",
        xlabel="spec change → derived object updated (ms, log scale)",
        ylabel="share of changes this slow or slower (log scale)",
        ylim=(0.5 / max(len(r["change_samples_ms"]) for r in results), 1.5),
    )
    longest = max(max(r["change_samples_ms"]) for r in results)
    ticks = [ms for ms in (1, 2, 3, 5, 10, 20, 30, 50, 100, 200, 500, 1000, 10000, 60000) if ms <= 1.5 * longest]
    ax.set_xticks(ticks, [f"{ms:g}" for ms in ticks])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{100 * y:g} %"))
    ax.grid(alpha=0.3, which="both")
    ax.legend(loc="lower left", fontsize=9)


def change_latency(results: Sequence[Result], path: Path) -> Path:
    """The idle spec-change latencies (each change sent once the previous one's status is written,
    N-1 Instances idle): their histogram, and the share slower than each latency on log axes,
    where the p99 and the target can be read."""
    ordered = _ordered(results)
    n, count = ordered[0]["n"], len(ordered[0]["change_samples_ms"])
    everything = sorted(s for r in ordered for s in r["change_samples_ms"])
    top = max(10.0, 5 * round(_percentile(everything, 0.995) / 5 + 1))
    fig = _figure(12)
    left, right = fig.subplots(1, 2)
    _histogram(left, ordered, top)
    _tail(right, ordered)
    fig.suptitle(f"Idle spec-change latency: {count} changes, one at a time, with {n - 1} other Instances idle")
    return _finish(fig, ordered, path)


def draw(results: Sequence[Result], directory: Path) -> list[Path]:
    """Every figure the results have data for, into `directory`: converge-<N>.png per size,
    change-latency-<N>.png at the steady-state size. Results saved before the bench recorded the
    series have none and draw nothing."""
    directory.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    for n in sorted({r["n"] for r in results}):
        at_n = [r for r in results if r["n"] == n]
        if curves := [r for r in at_n if r.get("converge_done_s")]:
            written.append(converge_curve(curves, directory / f"converge-{n}.png"))
        if samples := [r for r in at_n if r.get("change_samples_ms")]:
            written.append(change_latency(samples, directory / f"change-latency-{n}.png"))
    return written
