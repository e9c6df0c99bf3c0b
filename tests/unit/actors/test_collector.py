"""Start-up's objects are frozen: full collections no longer walk them, later objects still are;
each collection's pause is observed by generation."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from actors.observe.metrics import RuntimeMetrics
from actors.process.garbage_collector import (
    YOUNG_THRESHOLD,
    collect_young_less_often,
    freeze_startup_objects,
    observe_collections,
)


@pytest.fixture
def unfrozen_after() -> Iterator[None]:
    yield
    gc.unfreeze()  # the other tests run with the collector as they found it


@pytest.fixture
def thresholds_restored() -> Iterator[None]:
    thresholds = gc.get_threshold()
    yield
    gc.set_threshold(*thresholds)


def _young_collections() -> int:
    return int(gc.get_stats()[0]["collections"])


@pytest.mark.usefixtures("thresholds_restored")
def test_young_collections_wait_for_the_threshold() -> None:
    _, middle, oldest = gc.get_threshold()
    collect_young_less_often()
    assert gc.get_threshold() == (YOUNG_THRESHOLD, middle, oldest)
    gc.collect(0)  # the count of young allocations starts from zero
    before = _young_collections()
    kept: list[list[int]] = [[] for _ in range(YOUNG_THRESHOLD // 2)]  # tracked, alive: counted against the threshold
    assert _young_collections() == before  # 2000 by default: several collections by now
    kept += [[] for _ in range(3 * YOUNG_THRESHOLD)]
    assert _young_collections() > before  # the threshold still triggers them
    del kept


def _tracked(obj: object) -> bool:
    # gc.get_objects() lists generations 0-2; the permanent generation is not among them.
    return any(o is obj for o in gc.get_objects())


@pytest.mark.usefixtures("unfrozen_after")
def test_objects_alive_at_start_up_leave_the_collected_generations() -> None:
    before = {"built": ["at start-up"]}
    assert _tracked(before)
    frozen = freeze_startup_objects()
    after = {"built": ["later"]}
    assert frozen == gc.get_freeze_count() > 0
    assert not _tracked(before)
    assert _tracked(after)


def test_each_collection_is_observed_by_generation_until_stopped() -> None:
    metrics = RuntimeMetrics()

    def count(generation: int) -> float:
        labels = {"generation": str(generation)}
        return metrics.registry.get_sample_value("provider_gc_pause_seconds_count", labels) or 0.0

    stop = observe_collections(metrics.gc_pause_seconds)
    try:
        gc.collect(0)
        gc.collect(2)
    finally:
        stop()
    # Automatic collections may be counted too; the explicit ones are, each in its own generation.
    observed = count(2)
    assert count(0) >= 1 and observed >= 1
    pause = metrics.registry.get_sample_value("provider_gc_pause_seconds_sum", {"generation": "2"})
    assert pause is not None and 0 < pause < 5
    gc.collect(2)
    assert count(2) == observed  # nothing after stop()
