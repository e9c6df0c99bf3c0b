"""`provider-kserve generate [--check]`: definition/ + parameter models + RBAC rules -> generated files.

Without `--check` it rewrites the generated files that are out of date. With `--check` it writes
nothing and exits 1 when any generated file is stale, printing the diff (CI and the unit tests run
this).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from provider.generate.definition import DefinitionError
from provider.generate.generation import find_root, render, stale_files, write_files


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "generate",
        help="regenerate the Provider spec, RBAC rules and published schemas from definition/",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--check", action="store_true", help="fail (exit 1) if a generated file is stale")
    parser.add_argument(
        "--root",
        type=Path,
        default=None,
        help="repository root (default: the nearest directory above the cwd with definition/provider.yaml)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        root = (args.root or find_root(Path.cwd())).resolve()
        rendered = render(root)
    except DefinitionError as exc:
        print(f"generate: {exc}", file=sys.stderr)
        return 2
    if args.check:
        stale = stale_files(root, rendered)
        for rel, diff in stale.items():
            print(f"stale: {rel}", file=sys.stderr)
            print(diff, file=sys.stderr)
        if stale:
            print("generated files are out of date: run `provider-kserve generate`", file=sys.stderr)
            return 1
        print(f"generated files are up to date ({len(rendered)} files)")
        return 0
    changed = write_files(root, rendered)
    for rel in changed:
        print(f"wrote {rel}")
    if not changed:
        print(f"generated files are up to date ({len(rendered)} files)")
    return 0
