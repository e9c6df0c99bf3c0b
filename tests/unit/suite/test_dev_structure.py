"""The dev tools' structure beyond what import-linter checks (pyproject.toml: the packages import
one way, none has a cycle): what crosses a module boundary is public, and the commands in dev/
(controlplane.py, scripts/) are run, never imported."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
DEV_PACKAGES = {"plane", "kservestack", "cluster"}
COMMANDS = {"controlplane", "scripts"}


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """(module, names) of each import in `path`; names is empty for `import module`."""
    found: list[tuple[str, list[str]]] = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.module, [alias.name for alias in node.names]))
        elif isinstance(node, ast.Import):
            found.extend((alias.name, []) for alias in node.names)
    return found


def _python_files() -> list[Path]:
    return sorted(path for top in ("dev", "tests", "bench") for path in (ROOT / top).rglob("*.py"))


def test_no_private_name_crosses_a_dev_module() -> None:
    crossings = [
        f"{path.relative_to(ROOT)}: from {module} import {name}"
        for path in _python_files()
        for module, names in _imports(path)
        if module.split(".")[0] in DEV_PACKAGES | COMMANDS
        for name in names
        if name.startswith("_")
    ]
    assert crossings == []


def test_the_dev_commands_are_imported_by_no_module() -> None:
    importers = [
        f"{path.relative_to(ROOT)}: {module}"
        for path in _python_files()
        for module, _ in _imports(path)
        if module.split(".")[0] in COMMANDS
    ]
    assert importers == []
