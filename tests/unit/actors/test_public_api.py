"""The runtime's public API (actors/__init__.pyi, loaded by actors/__init__.py): what the provider
may import, and nothing else."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import actors

STUB = Path(actors.__file__).with_suffix(".pyi")


def _stub_imports() -> dict[str, str]:
    """Each name the stub re-exports, with the module it names."""
    tree = ast.parse(STUB.read_text())
    return {
        alias.asname or alias.name: f"actors.{node.module}"
        for node in tree.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }


def test_every_public_name_resolves_to_the_module_the_stub_names() -> None:
    homes = _stub_imports()
    assert set(homes) == set(actors.__all__)
    for name, module in homes.items():
        assert getattr(actors, name) is getattr(importlib.import_module(module), name), name


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        getattr(actors, "Informerz")  # noqa: B009
    except AttributeError as err:
        assert "Informerz" in str(err)
    else:
        raise AssertionError("an unknown name resolved")


def _imported_from_actors(source: str) -> set[str]:
    return {
        alias.name
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ImportFrom) and node.module == "actors" and node.level == 0
        for alias in node.names
    }


def test_every_public_name_is_imported_by_a_provider_or_a_tool() -> None:
    """The face is what providers (ours, the null providers of tests and benchmarks) and the tools
    need: a name nothing outside the runtime imports from `actors` is not exported."""
    root = STUB.parents[2]
    used: set[str] = set()
    for folder in ("src/provider", "tests", "bench", "dev"):
        for path in (root / folder).rglob("*.py"):
            used |= _imported_from_actors(path.read_text())
    # Part of the contract though no provider here needs them yet: what a provider may raise from
    # desired() or cleanup() to be asked again later, and the type of ReconcileContext.key.
    contract = {"WaitFor", "ObjectKey"}
    assert set(actors.__all__) - used - contract == set()
