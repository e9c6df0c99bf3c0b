"""The client boundary's packaging: the lock files, and the lean import of kubernetes-asyncio."""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

from actors.client import lean_import

ROOT = Path(__file__).resolve().parents[3]


def pins(lock: Path) -> dict[str, str]:
    """name → exact version, from a `uv pip compile` lock file (one `name==version \\` line per
    package, its `--hash=` lines and `# via` comment below it)."""
    out = {}
    for line in lock.read_text().splitlines():
        requirement = line.split("#", 1)[0].removesuffix("\\").strip()
        if requirement and not requirement.startswith("--"):
            name, _, version = requirement.partition("==")
            out[name.strip().lower().replace("_", "-")] = version.strip()
    return out


def test_every_lock_file_pins_each_package_with_the_hashes_of_its_files() -> None:
    """pip and uv check what they download against these (`--require-hashes`)."""
    locks = [*(ROOT / "requirements").glob("*.lock"), *(ROOT / "dev").glob("*/requirements.lock")]
    assert len(locks) == 6, locks
    for lock in locks:
        lines = lock.read_text().splitlines()
        packages = [line for line in lines if line and not line[0].isspace() and not line.startswith("#")]
        assert packages, lock
        for line in packages:
            assert line.endswith(" \\"), f"{lock.name}: {line!r} has no hashes: run `make lock`"


def declared(extras: tuple[str, ...] = ()) -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for extra in extras:
        reqs += project["optional-dependencies"][extra]
    return [Requirement(r) for r in reqs]


def test_lock_files_pin_every_declared_dependency_within_its_range() -> None:
    for lock, extras in (("runtime.lock", ()), ("dev.lock", ("dev", "bench"))):
        pinned = pins(ROOT / "requirements" / lock)
        for requirement in declared(extras):
            name = requirement.name.lower().replace("_", "-")
            assert name in pinned, f"{lock} does not pin {name}: run `make lock`"
            assert requirement.specifier.contains(pinned[name]), f"{lock}: {name}=={pinned[name]} not in {requirement}"
    runtime, dev = pins(ROOT / "requirements/runtime.lock"), pins(ROOT / "requirements/dev.lock")
    assert {k: dev[k] for k in runtime} == runtime, "the dev lock resolves the runtime packages differently"


def test_the_lean_import_is_written_for_the_locked_and_installed_version() -> None:
    locked = pins(ROOT / "requirements/runtime.lock")["kubernetes-asyncio"]
    assert locked == lean_import.WRITTEN_FOR
    assert importlib.metadata.version("kubernetes_asyncio") == locked


def test_lean_import_loads_no_models_and_the_full_library_still_imports() -> None:
    probe = """
import sys
import actors.client  # installs the lean import: the library registered, none of it run
assert sys.modules["kubernetes_asyncio"].__dict__.get("_lean_loaded") is False, "kubernetes-asyncio loaded"
from actors.client.config import load_configuration
from kubernetes_asyncio.config import kube_config
assert not [m for m in sys.modules if m.startswith("kubernetes_asyncio.client.models.")], "models loaded"
assert not [m for m in sys.modules if m.startswith("kubernetes_asyncio.client.api.")], "API classes loaded"
from kubernetes_asyncio.client import CoreV1Api, V1ObjectMeta
import kubernetes_asyncio
assert kubernetes_asyncio.watch.Watch and CoreV1Api.list_namespaced_pod
assert V1ObjectMeta(name="x").name == "x"
print("ok")
"""
    result = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT / "src")},
        check=False,
    )
    assert result.stdout.strip() == "ok", result.stderr
