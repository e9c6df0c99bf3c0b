"""Delete the NVIDIA libraries that nothing in the environment links against.

    python prune_cuda_libs.py          # in the environment to prune (needs pyelftools)

The package index's torch is a CUDA build: even its CPU library (libtorch_cpu.so) links CUDA's
runtime, and libtorch_python.so links libtorch_cuda.so and through it cuBLAS, cuFFT, NCCL, ...,
so `import torch` needs those libraries on disk although vLLM's CPU platform never calls them.
What no shared object links (DT_NEEDED, followed transitively from every library outside
site-packages/nvidia) is only ever dlopen'ed by CUDA code paths (cuDNN's engines, cuSOLVER's
multi-GPU library, NVRTC's alternative build, the profiler's, NVSHMEM's transports, ...): those go.
torch's own preloading of CUDA libraries tolerates a missing one (it is best effort once
libtorch_global_deps.so has loaded).
"""

from __future__ import annotations

import sysconfig
from collections.abc import Iterator
from pathlib import Path

from elftools.common.exceptions import ELFError
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile


def shared_objects(root: Path) -> Iterator[Path]:
    for path in root.rglob("*.so*"):
        if path.is_file() and not path.is_symlink():
            yield path


def needed(path: Path) -> list[str]:
    """The DT_NEEDED names of an ELF file ([] for anything that is not one)."""
    try:
        with path.open("rb") as stream:
            elf = ELFFile(stream)
            return [
                tag.needed
                for section in elf.iter_sections()
                if isinstance(section, DynamicSection)
                for tag in section.iter_tags()
                if tag.entry.d_tag == "DT_NEEDED"
            ]
    except ELFError:
        return []


def main() -> None:
    site = Path(sysconfig.get_paths()["purelib"])
    nvidia = site / "nvidia"
    by_name: dict[str, list[Path]] = {}
    for path in shared_objects(nvidia):
        by_name.setdefault(path.name, []).append(path)
    todo = [path for path in shared_objects(site) if nvidia not in path.parents]
    linked: set[Path] = set()
    while todo:
        for name in needed(todo.pop()):
            for library in by_name.get(name, []):
                if library not in linked:
                    linked.add(library)
                    todo.append(library)
    unused = [path for paths in by_name.values() for path in paths if path not in linked]
    freed = sum(path.stat().st_size for path in unused)
    for path in unused:
        path.unlink()
    kept = sum(path.stat().st_size for path in linked)
    print(f"NVIDIA libraries: kept {len(linked)} ({kept >> 20} MiB), deleted {len(unused)} ({freed >> 20} MiB)")


if __name__ == "__main__":
    main()
