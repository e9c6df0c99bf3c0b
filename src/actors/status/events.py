"""Kubernetes Events on an Instance (events.k8s.io/v1): what a user must know, in `kubectl describe`.

Recorded the way client-go's event recorder does: Events that say the same thing about the same
Instance (type, reason and action; the note may differ) are one Event and a series. The first
occurrence creates it, the second gives it a series (count 2), and later ones only count in memory
until the next flush writes the series' count and last time (`flush_interval`); a series not seen
again for `series_window` is forgotten, and a later occurrence starts a new Event. So a condition
that repeats on every retry (a writer fighting the provider, an apply the API server refuses) costs
a handful of writes, not one per retry. Recording never fails a reconcile: a refused Event is
logged and dropped.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, Literal

import structlog
from opentelemetry import trace

from actors.client import ApiError, KubeClient, TransportError, WriteWithheld
from actors.client.known_resources import EVENTS
from actors.interface import KubeObject
from actors.observe.tracing import span
from actors.queue.clock import Clock, MonotonicClock

log = structlog.get_logger(__name__)
tracer = trace.get_tracer(__name__)

EventType = Literal["Normal", "Warning"]
# events.k8s.io/v1's bounds on a note, a reason and an action.
NOTE_MAX: Final = 1024
NAME_MAX: Final = 128


def _micro_time() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _bounded(text: str, limit: int) -> str:
    encoded = text.encode()
    return text if len(encoded) <= limit else encoded[: limit - 3].decode(errors="ignore") + "..."


@dataclass
class _Series:
    namespace: str
    name: str
    count: int
    last_observed: str
    seen_at: float
    dirty: bool = False


@dataclass
class EventRecorder:
    client: KubeClient
    # events.k8s.io's reportingController and reportingInstance: the provider, and the pod.
    controller: str
    instance: str
    flush_interval: float
    series_window: float
    clock: Clock = field(default_factory=MonotonicClock)
    _series: dict[tuple[str, str, str, str], _Series] = field(default_factory=dict)
    written: int = 0

    async def record(self, regarding: KubeObject, type_: EventType, reason: str, note: str, action: str) -> None:
        """An Event about the Instance `regarding`, or one more of its series."""
        meta = regarding["metadata"]
        key = (str(meta.get("uid", "")), type_, reason, action)
        now = self.clock.now()
        series = self._series.get(key)
        if series is not None and now - series.seen_at <= self.series_window:
            series.count += 1
            series.last_observed = _micro_time()
            series.seen_at = now
            if series.count == 2:
                await self._write_series(series)
            else:
                series.dirty = True
            return
        name = f"{meta['name']}.{secrets.token_hex(8)}"
        event_time = _micro_time()
        event = {
            "apiVersion": EVENTS.api_version,
            "kind": EVENTS.kind,
            "metadata": {"name": name, "namespace": meta["namespace"]},
            "eventTime": event_time,
            "reportingController": self.controller,
            "reportingInstance": _bounded(self.instance, NAME_MAX),
            "action": _bounded(action, NAME_MAX),
            "reason": _bounded(reason, NAME_MAX),
            "type": type_,
            "note": _bounded(note, NOTE_MAX),
            "regarding": {
                "apiVersion": regarding.get("apiVersion", ""),
                "kind": regarding.get("kind", ""),
                "namespace": meta["namespace"],
                "name": meta["name"],
                "uid": meta.get("uid", ""),
                "resourceVersion": meta.get("resourceVersion", ""),
            },
        }
        if await self._send(name, lambda: self.client.create(EVENTS, event)):
            self._series[key] = _Series(meta["namespace"], name, 1, event_time, now)

    async def flush(self) -> None:
        """Write the count of every series that grew since its last write; forget old ones."""
        now = self.clock.now()
        for key, series in list(self._series.items()):
            if series.dirty:
                await self._write_series(series)
            if now - series.seen_at > self.series_window:
                del self._series[key]

    async def run(self) -> None:
        while True:
            await self.clock.sleep(self.flush_interval)
            await self.flush()

    async def _write_series(self, series: _Series) -> None:
        body: dict[str, Any] = {"series": {"count": series.count, "lastObservedTime": series.last_observed}}
        series.dirty = False
        await self._send(series.name, lambda: self.client.patch(EVENTS, series.namespace, series.name, body))

    async def _send(self, name: str, request: Callable[[], Awaitable[Any]]) -> bool:
        # A span of its own: the write is the pass's (or the flush's), not the step's that noticed.
        try:
            with span(tracer, "event", {"k8s.kind": EVENTS.kind, "k8s.name": name}):
                await request()
        except (ApiError, TransportError, WriteWithheld) as err:
            log.warning("event not recorded", error=str(err)[:300])
            return False
        self.written += 1
        return True
