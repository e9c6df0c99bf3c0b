"""Compare the Python calls two provider processes made for the same work (cProfile stats saved by
`BENCH_CALLS=PREFIX bench/scale.py ...`, one run per checkout).

    .venv/bin/python bench/call_counts.py BEFORE.stats AFTER.stats [--top 20]

Prints both totals, their ratio, and the functions whose call counts moved most. On a machine whose
speed varies from minute to minute, CPU seconds of two interleaved runs can differ by half for the
same code; the calls the same work makes do not (only retries and batching move them).
"""

from __future__ import annotations

import argparse
import pstats
import re
from collections import Counter


def calls_by_function(path: str) -> Counter[str]:
    """Primitive and recursive calls per function, keyed by `module path inside src/:function`
    (a built-in's object address, which differs from process to process, left out)."""
    counts: Counter[str] = Counter()
    for (file, _, function), (_, calls, *_) in pstats.Stats(path).stats.items():  # type: ignore[attr-defined]
        counts[f"{file.rpartition('/src/')[2] or file}:{re.sub(r' at 0x[0-9a-f]+', '', function)}"] += calls
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args()
    before, after = calls_by_function(args.before), calls_by_function(args.after)
    total_before, total_after = sum(before.values()), sum(after.values())
    print(f"calls: before {total_before:,}, after {total_after:,} (x{total_after / total_before:.3f})")
    moved = sorted(set(before) | set(after), key=lambda name: after[name] - before[name])
    for name in [*reversed(moved[-args.top :]), *moved[: args.top // 2]]:
        print(f"{after[name] - before[name]:+12,d}  {before[name]:12,d} -> {after[name]:<12,d} {name}")


if __name__ == "__main__":
    main()
