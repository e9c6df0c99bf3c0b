"""Loggers and tracers are named by their module (`__name__`), so that a span's scope or a log line
leads to the module that wrote it, also after a module moves (names written out by hand kept the
names of modules that had been renamed: actors.status.compose logged for actors.status.writer)."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[3] / "src"
NAMED = {"get_logger", "get_tracer"}


def named_by_hand(source: str) -> list[int]:
    """Lines of `source` naming a logger or tracer with anything but `__name__`."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in NAMED:
            first = node.args[0] if node.args else None
            if not (isinstance(first, ast.Name) and first.id == "__name__"):
                found.append(node.lineno)
    return found


def test_every_logger_and_tracer_is_named_by_its_module() -> None:
    found = [
        f"{path.relative_to(SRC)}:{line}"
        for path in sorted(SRC.rglob("*.py"))
        for line in named_by_hand(path.read_text())
    ]
    assert found == []


def test_the_check_finds_a_name_written_by_hand() -> None:
    assert named_by_hand('log = structlog.get_logger("actors.old")\ntracer = trace.get_tracer(__name__)') == [1]
    assert named_by_hand("log = structlog.get_logger()") == [1]
