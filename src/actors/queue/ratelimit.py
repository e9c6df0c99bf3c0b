"""Retry pacing: exponential backoff, per key or for one loop, and a global token bucket.

The rate limiter has the shape of client-go's default controller rate limiter: one failing Instance
backs off on its own (reset on success), while the bucket keeps a storm of failures across many
Instances from hammering the API server; a retry waits for the longer of the two. Informers back
off from a failed list or watch with the same `Backoff`, stretched by a random jitter so that many
of them do not retry in step. The values are the Manager's options (actors.manager.options).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from actors.queue.clock import Clock, MonotonicClock


@dataclass(frozen=True)
class Backoff:
    """`base` seconds doubling with each failure up to `cap`, then stretched by up to `jitter` (a
    fraction: 0.5 waits between 1 and 1.5 times the delay)."""

    base: float
    cap: float
    jitter: float = 0.0

    def delay(self, failures: int) -> float:
        """The wait after `failures` earlier failures in a row (0 for the first failure)."""
        # 2**exponent overflows float for absurd failure counts; the cap is reached long before.
        delay = min(self.cap, self.base * float(2 ** min(failures, 64)))
        return delay * (1 + random.random() * self.jitter) if self.jitter else delay


@dataclass
class ExponentialBackoff:
    """A `Backoff` per key, counting each key's failures until it is forgotten (a success)."""

    backoff: Backoff
    _failures: dict[str, int] = field(default_factory=dict)

    def when(self, key: str) -> float:
        """Delay before the next retry of `key`, counting this failure."""
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        return self.backoff.delay(failures)

    def failures(self, key: str) -> int:
        return self._failures.get(key, 0)

    def forget(self, key: str) -> None:
        self._failures.pop(key, None)


@dataclass
class TokenBucket:
    """Reservation-style bucket: asking always succeeds and returns how long to wait."""

    rate: float
    burst: int
    clock: Clock = field(default_factory=MonotonicClock)
    _tokens: float = field(init=False)
    _updated: float = field(init=False)

    def __post_init__(self) -> None:
        self._tokens = float(self.burst)
        self._updated = self.clock.now()

    def reserve(self) -> float:
        now = self.clock.now()
        self._tokens = min(float(self.burst), self._tokens + (now - self._updated) * self.rate)
        self._updated = now
        self._tokens -= 1.0
        if self._tokens >= 0:
            return 0.0
        return -self._tokens / self.rate


@dataclass
class RateLimiter:
    backoff: ExponentialBackoff
    bucket: TokenBucket

    def when(self, key: str) -> float:
        return max(self.backoff.when(key), self.bucket.reserve())

    def failures(self, key: str) -> int:
        return self.backoff.failures(key)

    def forget(self, key: str) -> None:
        self.backoff.forget(key)
