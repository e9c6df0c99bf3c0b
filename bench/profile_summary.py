"""Summarise a py-spy profile in collapsed-stack form (`py-spy record --format raw`).

    .venv/bin/python bench/profile_summary.py /tmp/provider-profile.txt [--top 25] [--match TEXT]

Prints the functions with the most samples on the stack (inclusive) and at the top of it (self),
as percentages of all samples; `--match` keeps only stacks through a frame containing TEXT (e.g.
`actors/` for the runtime, or a function name) to see what one path spends its time in.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path


def frame_name(frame: str) -> str:
    """`function (path/to/module.py:LINE)` → `function (module.py)`: one entry per function."""
    function, _, location = frame.partition(" (")
    path = location.rstrip(")").rsplit(":", 1)[0]
    return f"{function} ({'/'.join(Path(path).parts[-2:])})" if path else function


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("profile", type=Path)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--match", default="")
    args = parser.parse_args()
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    total = 0
    for line in args.profile.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit() or args.match not in stack:
            continue
        count = int(count_text)
        frames = [frame_name(f) for f in stack.split(";") if f]
        total += count
        own[frames[-1]] += count
        for name in set(frames):
            inclusive[name] += count
    print(f"{total} samples{f' through {args.match!r}' if args.match else ''}")
    for title, counter in (("inclusive", inclusive), ("self", own)):
        print(f"\n{title}:")
        for name, count in counter.most_common(args.top):
            print(f"{100 * count / total:6.1f}%  {name}")


if __name__ == "__main__":
    main()
