"""The runtime's public API (actors/__init__.py): what the provider may import, and nothing else."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import actors

INIT = Path(actors.__file__)


def _type_checking_names() -> set[str]:
    """The names the `if TYPE_CHECKING:` block re-exports for type checkers."""
    tree = ast.parse(INIT.read_text())
    block = next(node for node in tree.body if isinstance(node, ast.If))
    imports = [node for node in block.body if isinstance(node, ast.ImportFrom)]
    return {alias.asname or alias.name for node in imports for alias in node.names}


def test_every_public_name_resolves_to_its_module() -> None:
    for name in actors.__all__:
        value = getattr(actors, name)
        home = importlib.import_module(actors._HOME[name])
        assert value is getattr(home, name), name


def test_type_checkers_see_exactly_the_public_names() -> None:
    assert _type_checking_names() == set(actors.__all__)


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        actors.Informerz  # noqa: B018
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
    root = INIT.parents[2]
    used: set[str] = set()
    for folder in ("src/provider", "tests", "bench", "dev"):
        for path in (root / folder).rglob("*.py"):
            used |= _imported_from_actors(path.read_text())
    # Part of the contract though no provider here needs them yet: what a provider may raise from
    # desired() or cleanup() to be asked again later, and the type of ReconcileContext.key.
    contract = {"WaitFor", "ObjectKey"}
    assert set(actors.__all__) - used - contract == set()
