"""The garbage collector of a long-lived server: start-up's objects frozen, pauses measured.

Everything imported and built at start-up (modules, pydantic's validators, the CRD schemas, the
provider's tables: tens of thousands of tracked objects) lives as long as the process, yet every
full collection walks all of it again, with the event loop stopped. `gc.freeze()` moves what
exists then to a permanent generation that collections skip (what CPython's documentation suggests
for long-lived servers); what is created later is collected as before.

The youngest generation is collected after 2000 net allocations of tracked objects by default;
a reconcile allocates thousands (decoded events, rendered manifests, pydantic models), nearly all
freed by reference counting alone, so most of those collections find nothing to free yet still
walk what is young. So it is collected after YOUNG_THRESHOLD allocations: far fewer collections
that find nothing to free, each still a few milliseconds. (What each change bought, measured:
docs/performance.md.)
"""

from __future__ import annotations

import gc
import time
from collections.abc import Callable
from typing import Any, Final

from prometheus_client import Histogram

YOUNG_THRESHOLD: Final = 10_000


def freeze_startup_objects() -> int:
    """Collect once, then freeze every surviving object; how many are frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


def collect_young_less_often(threshold: int = YOUNG_THRESHOLD) -> None:
    """Collect the youngest generation after `threshold` net allocations, the older generations'
    thresholds kept."""
    _, middle, oldest = gc.get_threshold()
    gc.set_threshold(threshold, middle, oldest)


def observe_collections(pauses: Histogram) -> Callable[[], None]:
    """Observe each collection's pause in `pauses` (labelled by generation), as Go's runtime
    reports `go_gc_duration_seconds`; returns what stops observing."""
    children = [pauses.labels(generation=str(generation)) for generation in range(3)]
    started = 0.0

    def callback(phase: str, info: dict[str, Any]) -> None:
        nonlocal started
        if phase == "start":
            started = time.perf_counter()
        else:
            children[info["generation"]].observe(time.perf_counter() - started)

    gc.callbacks.append(callback)
    return lambda: gc.callbacks.remove(callback)
