"""Make `vllm --version` answer without importing vLLM.

    python fast_version.py          # in the environment whose `vllm` console script to wrap

KServe's LLMInferenceService template runs `vllm --version` before `vllm serve` (to pick flags by
version), in the serving container, on every start of every replica. vLLM's CLI imports torch and
most of vLLM before it parses its arguments: 10-16 s of CPU on this project's 2 cores, each time,
before the model even starts loading (issue 37). The version is the installed distribution's, which
importlib.metadata reads in milliseconds; this rewrites the `vllm` console script so that exactly
`vllm --version` (or `-v`) prints it, as vLLM's own argparse action does, and anything else runs
vLLM's entry point as before.
"""

from __future__ import annotations

import importlib.metadata
import shutil
import sys
from pathlib import Path

SHIM = """#!{python}
# `vllm --version` from the distribution's metadata (fast_version.py); anything else is vLLM's CLI.
# Only as the program: vLLM's engine runs in processes that multiprocessing starts by importing
# this script again (as __mp_main__), which must not start vLLM's CLI a second time.
import sys

if __name__ == "__main__":
    if sys.argv[1:] in (["--version"], ["-v"]):
        from importlib.metadata import version

        print(version("{distribution}"))
        sys.exit(0)

    from {module} import {function}

    sys.exit({function}())
"""


def shim(python: str, distribution: str, module: str, function: str) -> str:
    """The console script: `--version` from `distribution`'s metadata, else `module`.`function`()."""
    return SHIM.format(python=python, distribution=distribution, module=module, function=function)


def main() -> None:
    (entry,) = importlib.metadata.entry_points(group="console_scripts", name="vllm")
    module, _, function = entry.value.partition(":")
    script = shutil.which("vllm")
    if script is None:
        raise SystemExit("no `vllm` console script on PATH")
    Path(script).write_text(shim(sys.executable, "vllm", module, function))
    print(f"{script}: --version from the metadata, {entry.value} otherwise")


if __name__ == "__main__":
    main()
