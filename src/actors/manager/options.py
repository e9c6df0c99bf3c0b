"""The Manager's options: the one place every runtime default is defined.

The components take their tunables as required arguments and the Manager builds them from these
options (`provider-kserve run` exposes the ones users tune as flags, with these defaults), so a
component's default can never drift from the Manager's.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass, field

from actors.cache.informer import WatchSettings
from actors.cache.limits import InstanceLimits
from actors.queue.clock import Clock, MonotonicClock
from actors.queue.ratelimit import Backoff, ExponentialBackoff, RateLimiter, TokenBucket
from actors.serve.endpoints import Endpoints


@dataclass
class ManagerOptions:
    namespaces: Sequence[str] = ()  # empty: all namespaces
    # Reconciles at once, over all Instances.
    max_concurrent: int = 16
    # Retries: the global token bucket (client-go's default controller rate limiter: 10 qps, burst
    # 100) and each Instance's own backoff (5 ms doubling to 1000 s, reset on success).
    qps: float = 10.0
    burst: int = 100
    backoff_base: float = 0.005
    backoff_cap: float = 1000.0
    # An Instance's actor exits after this many idle seconds (memory follows the working set).
    idle_timeout: float = 10.0
    # A safety net, not how changes arrive (every derived object is watched): hours, as in
    # controller-runtime (its SyncPeriod defaults to 10 h).
    resync_period: float = 10 * 3600.0
    # Re-run an Instance that is neither Ready nor Suspended after this many seconds; None: never
    # (its derived objects' watch events bring KServe's progress).
    poll_not_ready: float | None = None
    # How often an owned kind whose CRD is absent is looked for again.
    discovery_interval: float = 30.0
    # How long a cache may take to list before start-up fails naming its kind.
    sync_timeout: float = 120.0
    # How long start-up waits for a shared actor's cache (the AI Gateway, namespaces) before going
    # on without it: those are optional, and a missing CRD must only delay start-up.
    shared_sync_timeout: float = 10.0
    # Watches: how long one request lasts, how a failed list or watch backs off, objects per page.
    watch_timeout: int = 300
    watch_backoff_base: float = 0.2
    watch_backoff_cap: float = 30.0
    page_size: int = 500
    # A list is read a page at a time, each about this many bytes of JSON at most, so relisting a
    # namespace of large objects holds a bounded amount of memory.
    page_bytes: int = 4 * 1024 * 1024
    # A derived object is kept in memory whole up to this many bytes of JSON, as a stub beyond
    # (far above what the provider writes for any object: an Instance's spec is at most 64 KiB).
    max_owned_object_bytes: int = 256 * 1024
    # Leader election (client-go's defaults).
    leader_elect: bool = False
    lease_namespace: str = "default"
    lease_name: str = ""
    identity: str = field(default_factory=lambda: f"{socket.gethostname()}-{os.getpid()}")
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    # Events repeating on an Instance are one Event and a series, whose count is written this often
    # (client-go: 30 min) and which is forgotten after this long without a repeat (client-go: 6 min).
    events_flush_interval: float = 60.0
    events_series_window: float = 360.0
    limits: InstanceLimits = field(default_factory=InstanceLimits)
    endpoints: Endpoints = field(default_factory=Endpoints)

    def rate_limiter(self, clock: Clock | None = None) -> RateLimiter:
        return RateLimiter(
            ExponentialBackoff(Backoff(self.backoff_base, self.backoff_cap)),
            TokenBucket(self.qps, self.burst, clock or MonotonicClock()),
        )

    def watch_settings(self) -> WatchSettings:
        return WatchSettings(
            timeout_seconds=self.watch_timeout,
            backoff=Backoff(self.watch_backoff_base, self.watch_backoff_cap, jitter=0.5),
            page_size=self.page_size,
            page_bytes=self.page_bytes,
        )
