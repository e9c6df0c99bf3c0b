"""Retry pacing: per-key exponential backoff combined, as the maximum, with a global token bucket.

The same shape as client-go's default controller rate limiter: one failing Instance backs off on
its own (5 ms doubling to 1000 s, reset on success), while the bucket (10 qps, burst 100) keeps a
storm of failures across many Instances from hammering the API server.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

Clock = Callable[[], float]


@dataclass
class ExponentialBackoff:
    base: float = 0.005
    cap: float = 1000.0
    _failures: dict[str, int] = field(default_factory=dict)

    def when(self, key: str) -> float:
        """Delay before the next retry of `key`, counting this failure."""
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        # 2**exponent overflows float for absurd failure counts; the cap is reached long before.
        return min(self.cap, self.base * float(2 ** min(failures, 64)))

    def failures(self, key: str) -> int:
        return self._failures.get(key, 0)

    def forget(self, key: str) -> None:
        self._failures.pop(key, None)


@dataclass
class TokenBucket:
    """Reservation-style bucket: asking always succeeds and returns how long to wait."""

    rate: float = 10.0
    burst: int = 100
    clock: Clock = time.monotonic
    _tokens: float = field(init=False)
    _updated: float = field(init=False)

    def __post_init__(self) -> None:
        self._tokens = float(self.burst)
        self._updated = self.clock()

    def reserve(self) -> float:
        now = self.clock()
        self._tokens = min(float(self.burst), self._tokens + (now - self._updated) * self.rate)
        self._updated = now
        self._tokens -= 1.0
        if self._tokens >= 0:
            return 0.0
        return -self._tokens / self.rate


@dataclass
class RateLimiter:
    backoff: ExponentialBackoff = field(default_factory=ExponentialBackoff)
    bucket: TokenBucket = field(default_factory=TokenBucket)

    def when(self, key: str) -> float:
        return max(self.backoff.when(key), self.bucket.reserve())

    def failures(self, key: str) -> int:
        return self.backoff.failures(key)

    def forget(self, key: str) -> None:
        self.backoff.forget(key)
