"""kubernetes-asyncio without its generated API and model classes, for a dynamic client.

`kubernetes_asyncio/__init__.py` and `kubernetes_asyncio/client/__init__.py` import every generated
model class (hundreds, tens of MiB resident) that a dynamic client never uses. Before anything
imports them, `use_lean_kubernetes_asyncio()` (called when actors.client.config is imported) registers those
two packages, and `client.models`, as lazy packages: their submodules import as usual (the loaders
need `client.configuration`, `client.api_client`, `client.rest`, `client.exceptions`), and the first
read of any other attribute (`from kubernetes_asyncio.client import CoreV1Api`,
`kubernetes_asyncio.watch`) runs the package's real `__init__`, so code elsewhere in the process
that wants the full library still gets it. The version this was written and tested for is pinned by
the lock files (requirements/*.lock); a test checks that the installed version is the pinned one and
that both the lean and the full import work.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from pathlib import Path
from typing import Any

# The kubernetes-asyncio release the lean import was written for (the lock files pin it).
WRITTEN_FOR = "36.1.0"
_LAZY_PACKAGES = ("kubernetes_asyncio", "kubernetes_asyncio.client", "kubernetes_asyncio.client.models")


class _LazyPackage(types.ModuleType):
    """A package whose `__init__` runs only when an attribute other than a submodule is read."""

    def __init__(self, name: str, directory: Path) -> None:
        super().__init__(name)
        self.__path__ = [str(directory)]
        self.__file__ = str(directory / "__init__.py")
        self.__dict__["_lean_loaded"] = False

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        directory = Path(self.__path__[0])
        if (directory / f"{attr}.py").exists() or (directory / attr / "__init__.py").exists():
            return importlib.import_module(f"{self.__name__}.{attr}")
        if not self.__dict__["_lean_loaded"]:
            self.__dict__["_lean_loaded"] = True
            spec = importlib.util.spec_from_file_location(
                self.__name__, self.__file__, submodule_search_locations=list(self.__path__)
            )
            assert spec is not None and spec.loader is not None
            spec.loader.exec_module(self)
            if attr in self.__dict__:
                return self.__dict__[attr]
        raise AttributeError(f"module {self.__name__!r} has no attribute {attr!r}")


def use_lean_kubernetes_asyncio() -> None:
    """Register the lazy packages (idempotent; nothing to do once kubernetes_asyncio is imported)."""
    if "kubernetes_asyncio" in sys.modules:
        return  # imported already (fully, or lazily by us)
    spec = importlib.util.find_spec("kubernetes_asyncio")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("kubernetes_asyncio is not installed")
    root = Path(next(iter(spec.submodule_search_locations)))
    for name in _LAZY_PACKAGES:
        sys.modules[name] = _LazyPackage(name, root.joinpath(*name.split(".")[1:]))
    # What the loaders import from `kubernetes_asyncio.client` itself, without running its __init__.
    from kubernetes_asyncio.client import api_client, configuration, exceptions

    client = sys.modules["kubernetes_asyncio.client"]
    client.Configuration = configuration.Configuration  # type: ignore[attr-defined]
    client.ApiClient = api_client.ApiClient  # type: ignore[attr-defined]
    client.ApiException = exceptions.ApiException  # type: ignore[attr-defined]
