"""A client-side token bucket for API requests (client-go's ``QPS`` and ``Burst``): at most ``burst``
tokens, refilled at ``qps`` per second. Waiters reserve their token under the lock and sleep outside it, so
concurrent callers are served in arrival order at exactly ``qps`` once the burst is spent.
"""

from __future__ import annotations

import threading

from hami_core.clock import SYSTEM, Clock

__all__ = ["TokenBucket"]


class TokenBucket:
    """Thread-safe token bucket, waiting on the injected clock."""

    def __init__(self, qps: float, burst: int, *, clock: Clock = SYSTEM) -> None:
        if not qps > 0:
            raise ValueError(f"rate limiter: qps must be > 0, got {qps!r}")
        if burst < 1:
            raise ValueError(f"rate limiter: burst must be >= 1, got {burst!r}")
        self.qps = float(qps)
        self.burst = burst
        self._clock = clock.monotonic
        self._sleep = clock.sleep
        self._lock = threading.Lock()
        self._tokens = float(burst)
        self._last = clock.monotonic()

    def _refill(self, now: float) -> None:
        elapsed = max(0.0, now - self._last)
        self._tokens = min(float(self.burst), self._tokens + elapsed * self.qps)
        self._last = now

    def reserve(self) -> float:
        """Take one token now and return how many seconds the caller must wait before using it."""
        with self._lock:
            self._refill(self._clock())
            self._tokens -= 1.0
            return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def acquire(self) -> float:
        """Take one token, sleeping until it is available. Returns the time waited, in seconds."""
        delay = self.reserve()
        if delay > 0:
            self._sleep(delay)
        return delay

    def try_acquire(self) -> bool:
        """Take one token if one is available right now; never waits."""
        with self._lock:
            self._refill(self._clock())
            if self._tokens >= 1.0:
                self._tokens -= 1.0
                return True
            return False
