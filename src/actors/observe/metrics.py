"""Prometheus metrics of the runtime, in one registry so tests and benchmarks can read them.

The registry also carries prometheus-client's process and platform collectors (resident memory,
CPU seconds, open file descriptors, the Python version), which its default registry has and a
registry of our own does not.
"""

from __future__ import annotations

import time
from collections import Counter as Tally
from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector


class InstancePhases(Collector):
    """The phase the runtime last gave each Instance on status, and since when: read at scrape time
    as Instances per phase and, per phase, how long the Instance longest in it has been there
    (the "not Ready for too long" alert). The times are this process's: a restart starts them
    again, from the first status pass of each Instance."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._phases: dict[str, tuple[str, float]] = {}

    def record(self, key: str, phase: str) -> None:
        current = self._phases.get(key)
        if current is None or current[0] != phase:
            self._phases[key] = (phase, self._clock())

    def forget(self, key: str) -> None:
        self._phases.pop(key, None)

    def collect(self) -> Iterator[GaugeMetricFamily]:
        now = self._clock()
        counts: Tally[str] = Tally()
        entered: dict[str, float] = {}
        for phase, since in list(self._phases.values()):
            counts[phase] += 1
            entered[phase] = min(since, entered.get(phase, since))
        instances = GaugeMetricFamily(
            "provider_instances", "Instances by the phase the provider last wrote on their status", labels=["phase"]
        )
        longest = GaugeMetricFamily(
            "provider_instance_phase_longest_seconds",
            "How long the Instance longest in each phase has been in it",
            labels=["phase"],
        )
        for phase in sorted(counts):
            instances.add_metric([phase], counts[phase])
            longest.add_metric([phase], now - entered[phase])
        yield instances
        yield longest


class RuntimeMetrics:
    """The runtime's Prometheus metrics, in a registry of their own (the /metrics endpoint's)."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        # The process's own figures (process_resident_memory_bytes, process_cpu_seconds_total, ...)
        # and python_info; both are in prometheus-client's default registry, not in a new one.
        ProcessCollector(registry=self.registry)
        PlatformCollector(registry=self.registry)
        self.instance_phases = InstancePhases()
        self.registry.register(self.instance_phases)
        self.leader = Gauge(
            "provider_leader", "1 while this process leads (reconciles), 0 while it stands by", registry=self.registry
        )
        self._reconcile_metrics()
        self._queue_metrics()
        self._api_and_process_metrics()

    def _reconcile_metrics(self) -> None:
        """What the reconciles did, and how long their steps and they took."""
        self.reconciles = Counter(
            "provider_reconciles_total",
            "Reconciles by result: success, error, gone (the Instance was deleted), cancelled (cut short by shutdown)",
            ["result"],
            registry=self.registry,
        )
        self.step_seconds = Histogram(
            "provider_reconcile_step_seconds",
            "Duration of each reconcile step",
            ["step"],
            registry=self.registry,
            buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
        )
        self.step_errors = Counter(
            "provider_reconcile_step_errors_total",
            "Reconcile steps that ended in an error (the reconcile is retried)",
            ["step"],
            registry=self.registry,
        )
        self.reconcile_seconds = Histogram(
            "provider_reconcile_seconds",
            "Duration of a whole reconcile (holding its slot), by priority as for the queue wait",
            ["priority"],
            registry=self.registry,
            buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
        )
        self._reconcile_run = {
            urgent: self.reconcile_seconds.labels(priority="urgent" if urgent else "bulk") for urgent in (True, False)
        }
        self.retries = Counter("provider_retries_total", "Reconciles that will be retried", registry=self.registry)

    def _queue_metrics(self) -> None:
        """What waits to reconcile, and for how long."""
        self.queue_depth = Gauge("provider_queue_depth", "Instances waiting to reconcile", registry=self.registry)
        self.queue_wait_seconds = Histogram(
            "provider_queue_wait_seconds",
            "From the first event a reconcile answers to its start (settle window and slot wait), by "
            "priority: urgent for a user's change to an existing Instance, bulk otherwise",
            ["priority"],
            registry=self.registry,
            buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
        )
        self._queue_wait = {
            urgent: self.queue_wait_seconds.labels(priority="urgent" if urgent else "bulk") for urgent in (True, False)
        }
        self.live_actors = Gauge("provider_live_actors", "Per-Instance actors alive", registry=self.registry)
        self.scheduled_runs = Gauge(
            "provider_scheduled_runs", "Instances with a run scheduled and no live actor", registry=self.registry
        )

    def _api_and_process_metrics(self) -> None:
        """The requests to the API server, and the garbage collector's pauses."""
        self.api_requests = Counter(
            "provider_api_requests_total",
            "Requests to the Kubernetes API server",
            ["verb", "resource", "code"],
            registry=self.registry,
        )
        self.api_seconds = Histogram(
            "provider_api_request_seconds", "Kubernetes API request latency", ["verb"], registry=self.registry
        )
        self.gc_pause_seconds = Histogram(
            "provider_gc_pause_seconds",
            "Pauses of the garbage collector (the event loop stopped), by generation: 2 is a full collection",
            ["generation"],
            registry=self.registry,
            buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25),
        )
        self._request_children: dict[tuple[str, str, int], tuple[Counter, Histogram]] = {}

    def observe_queue_wait(self, seconds: float, urgent: bool) -> None:
        self._queue_wait[urgent].observe(seconds)

    def observe_reconcile(self, seconds: float, urgent: bool) -> None:
        self._reconcile_run[urgent].observe(seconds)

    def observe_request(self, verb: str, resource: str, code: int, seconds: float) -> None:
        # The labelled children are kept: `labels()` checks and joins its arguments on every call.
        key = (verb, resource, code)
        if (children := self._request_children.get(key)) is None:
            children = self._request_children[key] = (
                self.api_requests.labels(verb=verb, resource=resource, code=str(code)),
                self.api_seconds.labels(verb=verb),
            )
        children[0].inc()
        children[1].observe(seconds)
