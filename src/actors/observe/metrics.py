"""Prometheus metrics of the runtime, in one registry so tests and benchmarks can read them."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram


class RuntimeMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.reconciles = Counter(
            "provider_reconciles_total", "Reconciles by result", ["result"], registry=self.registry
        )
        self.step_seconds = Histogram(
            "provider_reconcile_step_seconds",
            "Duration of each reconcile step",
            ["step"],
            registry=self.registry,
            buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
        )
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
        self.retries = Counter("provider_retries_total", "Reconciles that will be retried", registry=self.registry)
        self.live_actors = Gauge("provider_live_actors", "Per-Instance actors alive", registry=self.registry)
        self.scheduled_runs = Gauge(
            "provider_scheduled_runs", "Instances with a run scheduled and no live actor", registry=self.registry
        )
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
