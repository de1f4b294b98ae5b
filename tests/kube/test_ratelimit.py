"""The client-side token bucket, on a fake clock."""

from __future__ import annotations

import threading

import pytest
from harness.clock import WatchedClock

from hami_core.kube.ratelimit import TokenBucket


def fake() -> WatchedClock:
    """A clock whose sleeps move it at once (the bucket is used from the test's own thread)."""
    return WatchedClock(auto_advance=True)


def test_burst_is_free_then_requests_are_spaced_at_qps() -> None:
    t = fake()
    start = t.monotonic()
    bucket = TokenBucket(qps=5, burst=3, clock=t)
    waits = [bucket.acquire() for _ in range(6)]
    assert waits[:3] == [0.0, 0.0, 0.0]
    assert waits[3:] == pytest.approx([0.2, 0.2, 0.2])
    assert t.monotonic() - start == pytest.approx(0.6)


def test_tokens_refill_over_time_up_to_burst() -> None:
    t = fake()
    bucket = TokenBucket(qps=10, burst=4, clock=t)
    for _ in range(4):
        assert bucket.try_acquire()
    assert not bucket.try_acquire()
    t.advance(0.25)  # 2.5 tokens
    assert bucket.try_acquire() and bucket.try_acquire()
    assert not bucket.try_acquire()
    t.advance(100)  # refilled up to the burst, no further
    assert [bucket.try_acquire() for _ in range(5)] == [True, True, True, True, False]


def test_concurrent_callers_reserve_distinct_slots() -> None:
    bucket = TokenBucket(qps=100, burst=1, clock=WatchedClock())
    delays: list[float] = []
    lock = threading.Lock()

    def take() -> None:
        for _ in range(25):
            delay = bucket.reserve()
            with lock:
                delays.append(delay)

    threads = [threading.Thread(target=take) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # The clock never moved: 100 reservations are spaced 10 ms apart, each slot taken once.
    assert sorted(round(d, 6) for d in delays) == [round(i * 0.01, 6) for i in range(100)]


@pytest.mark.parametrize(("qps", "burst"), [(0, 1), (-1, 1), (1, 0)])
def test_bad_settings_are_refused(qps: float, burst: int) -> None:
    with pytest.raises(ValueError, match="rate limiter"):
        TokenBucket(qps=qps, burst=burst)
