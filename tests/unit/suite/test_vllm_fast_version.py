"""The vLLM CPU image's `vllm` console script (dev/vllm-cpu/fast_version.py): `--version` answers
from the distribution's metadata without importing the CLI's module; anything else runs it."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

SCRIPT = Path(__file__).resolve().parents[3] / "dev" / "vllm-cpu" / "fast_version.py"


def fast_version() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fast_version", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(script), *args], capture_output=True, text=True, timeout=60, check=False)


def test_version_comes_from_the_metadata_without_importing_the_cli(tmp_path: Path) -> None:
    script = tmp_path / "vllm"
    # A module that does not exist: importing it would fail, so an answer proves it was not imported.
    script.write_text(fast_version().shim(sys.executable, "pytest", "no_such_cli.main", "main"))
    for flag in ("--version", "-v"):
        answer = run(script, flag)
        assert (answer.returncode, answer.stdout) == (0, importlib.metadata.version("pytest") + "\n"), answer.stderr
    other = run(script, "serve", "/mnt/models")
    assert other.returncode != 0 and "No module named 'no_such_cli'" in other.stderr


def test_anything_else_runs_the_entry_point_with_its_arguments(tmp_path: Path) -> None:
    script = tmp_path / "vllm"
    (tmp_path / "cli_probe.py").write_text("import sys\n\ndef main():\n    print(sys.argv[1:])\n    return 3\n")
    script.write_text(fast_version().shim(sys.executable, "pytest", "cli_probe", "main"))
    answer = run(script, "serve", "--version-not-alone", "--version")
    assert (answer.returncode, answer.stdout) == (3, "['serve', '--version-not-alone', '--version']\n")


def test_a_process_multiprocessing_spawns_from_it_does_not_run_the_cli_again(tmp_path: Path) -> None:
    """vLLM starts its engine with multiprocessing, whose spawned processes import the program's
    script again (as __mp_main__): the script must not run the CLI there (the cold CI run of
    76d402b: every vLLM engine died at start, `Engine core initialization failed`)."""
    script = tmp_path / "vllm"
    (tmp_path / "cli_probe.py").write_text(
        "import multiprocessing, pathlib, sys\n\n"
        "def child(path):\n"
        "    pathlib.Path(path).write_text('child ran')\n\n"
        "def main():\n"
        "    with open(sys.argv[1], 'a') as log:\n"
        "        log.write('cli ran\\n')\n"
        "    process = multiprocessing.get_context('spawn').Process(target=child, args=(sys.argv[2],))\n"
        "    process.start()\n"
        "    process.join()\n"
        "    return process.exitcode\n"
    )
    script.write_text(fast_version().shim(sys.executable, "pytest", "cli_probe", "main"))
    log, done = tmp_path / "cli.log", tmp_path / "child.done"
    answer = run(script, str(log), str(done))
    assert answer.returncode == 0, answer.stderr
    assert log.read_text() == "cli ran\n"  # once: not again in the spawned process
    assert done.read_text() == "child ran"
