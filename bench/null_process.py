"""`provider-kserve run` with the null provider in place of KServe's: the floor for bench/scale.py.

    PYTHONPATH=src:. python bench/null_process.py run --kubeconfig ... (the same arguments as `run`)

The process is the real one (signals, SIGHUP resync, metrics, client, actors); only the provider
that `run` builds is swapped for tests.support.null_provider, so the difference between the two
processes is the KServe knowledge alone.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from typing import Any

import provider.kserve
from actors.manager.shared import SharedActors
from provider.cli import main
from tests.support.null_provider import NullProvider


def build_null_provider(environ: Mapping[str, str], client: Any = None) -> tuple[NullProvider, SharedActors]:
    return NullProvider(), SharedActors()


if __name__ == "__main__":
    # `run` looks build_provider up at call time, so replacing it here swaps the provider only.
    provider.kserve.build_provider = build_null_provider  # type: ignore[assignment]
    sys.exit(main())
