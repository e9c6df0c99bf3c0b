"""The `provider-kserve` console script: one verb per module in `provider.commands`."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

# Each module exposes `register(subparsers)`, which adds its verb and sets `func` to a callable
# taking the parsed namespace and returning the exit code.
COMMANDS = (
    "provider.commands.run",
    "provider.commands.render",
    "provider.commands.generate",
    "provider.commands.doctor",
    "provider.commands.inspect",
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="provider-kserve", description=__doc__)
    subparsers = parser.add_subparsers(dest="command", required=True)
    for module_name in COMMANDS:
        importlib.import_module(module_name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    code: int = args.func(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
