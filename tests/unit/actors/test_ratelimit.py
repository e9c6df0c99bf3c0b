from __future__ import annotations

import pytest

from actors.queue.ratelimit import ExponentialBackoff, RateLimiter, TokenBucket
from tests.support.clock import FakeClock


def test_backoff_doubles_from_5ms_and_caps_at_1000s() -> None:
    backoff = ExponentialBackoff()
    delays = [backoff.when("a") for _ in range(20)]
    assert delays[:4] == pytest.approx([0.005, 0.01, 0.02, 0.04])
    assert delays[17] == pytest.approx(0.005 * 2**17)  # 655.36 s, still under the cap
    assert delays[18] == 1000.0
    assert delays[19] == 1000.0


def test_backoff_is_per_key_and_reset_by_forget() -> None:
    backoff = ExponentialBackoff()
    backoff.when("a")
    backoff.when("a")
    assert backoff.when("b") == pytest.approx(0.005)
    backoff.forget("a")
    assert backoff.failures("a") == 0
    assert backoff.when("a") == pytest.approx(0.005)


def test_backoff_survives_absurd_failure_counts() -> None:
    backoff = ExponentialBackoff()
    for _ in range(5000):
        delay = backoff.when("k")
    assert delay == 1000.0


async def test_token_bucket_allows_burst_then_paces_at_rate() -> None:
    clock = FakeClock()
    bucket = TokenBucket(rate=10.0, burst=100, clock=clock.now)
    assert [bucket.reserve() for _ in range(100)] == [0.0] * 100
    assert bucket.reserve() == pytest.approx(0.1)
    assert bucket.reserve() == pytest.approx(0.2)
    await clock.advance(1.0)  # 10 tokens refill: pays back the 2 borrowed, 8 left
    assert [bucket.reserve() for _ in range(8)] == [0.0] * 8
    assert bucket.reserve() == pytest.approx(0.1)


async def test_token_bucket_never_exceeds_burst() -> None:
    clock = FakeClock()
    bucket = TokenBucket(rate=10.0, burst=5, clock=clock.now)
    await clock.advance(3600)
    assert [bucket.reserve() for _ in range(5)] == [0.0] * 5
    assert bucket.reserve() > 0


def test_rate_limiter_is_the_maximum_of_both() -> None:
    clock = FakeClock()
    limiter = RateLimiter(ExponentialBackoff(), TokenBucket(rate=1.0, burst=1, clock=clock.now))
    assert limiter.when("a") == pytest.approx(0.005)  # bucket has a token; backoff wins
    assert limiter.when("b") == pytest.approx(1.0)  # bucket empty: 1 s beats 5 ms
    limiter.forget("a")
    assert limiter.failures("a") == 0
