"""The test suite's own shape: no module imports a test module or a conftest, and what tests share
lives in tests/support (the end-to-end tests' own helpers in tests/e2e, beside them)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
PYTHON_DIRS = ("tests", "bench", "dev")
SHARED = "tests.support"
# The end-to-end tests keep helpers that only they use (the node-mode cluster, Tilt) beside them.
E2E = "tests.e2e"


def imports(source: str) -> Iterator[tuple[int, str]]:
    """(line, imported module) for each import in `source`; a relative import as its dots and name."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            yield node.lineno, module
            # `from tests.support import gen` imports the module tests.support.gen.
            yield from ((node.lineno, f"{module}.{alias.name}") for alias in node.names if node.level == 0)


def is_test_or_conftest(module: str) -> bool:
    """A test module or conftest of this repository's (a library's own `test_utils` is not one)."""
    last = module.rsplit(".", 1)[-1]
    return module.startswith("tests.") and (last.startswith("test_") or last == "conftest")


def problems(source: str, where: Path) -> list[str]:
    """What is wrong with the imports of `source`, the module at `where` (relative to the root): the
    first problem of each import statement."""
    found: dict[int, str] = {}
    for line, module in imports(source):
        problem = None
        if module.startswith("."):
            problem = f"relative import {module} (shared helpers go in {SHARED})"
        elif is_test_or_conftest(module):
            problem = f"imports {module}, a test module or conftest"
        elif module.startswith("tests.") and not module.startswith(SHARED):
            e2e_helper = where.parts[:2] == ("tests", "e2e") and module.startswith(E2E + ".")
            if not e2e_helper:
                problem = f"imports {module}; what tests share lives in {SHARED}"
        if problem is not None:
            found.setdefault(line, f"{where}:{line}: {problem}")
    return list(found.values())


def python_files() -> list[Path]:
    return sorted(p for d in PYTHON_DIRS for p in (ROOT / d).rglob("*.py") if ".venv" not in p.parts)


def test_no_module_imports_a_test_module_a_conftest_or_another_folders_helper() -> None:
    found = [problem for path in python_files() for problem in problems(path.read_text(), path.relative_to(ROOT))]
    assert found == [], "\n".join(found)


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ("from tests.integration.test_llm_crd import first_difference", "a test module or conftest"),
        ("import tests.e2e.conftest", "a test module or conftest"),
        ("from tests.support import test_helpers", "a test module or conftest"),
        ("from .builders import instance", "relative import .builders"),
        ("from tests.unit.llm.builders import CATALOG", "what tests share lives in tests.support"),
    ],
)
def test_the_check_finds_each_kind_of_import(source: str, problem: str) -> None:
    (found,) = problems(source, Path("tests/unit/probe.py"))
    assert problem in found


def test_the_end_to_end_tests_may_share_their_own_helpers_only() -> None:
    assert problems("from tests.e2e.support import wait_for", Path("tests/e2e/test_x.py")) == []
    assert problems("from tests.e2e.support import wait_for", Path("tests/integration/test_x.py")) != []
    assert problems("from tests.e2e.conftest import ROOT", Path("tests/e2e/test_x.py")) != []
