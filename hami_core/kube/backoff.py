"""The one retry backoff policy: per-item exponential delays, in client-go's shape
(``util/workqueue/default_rate_limiters.go``: ``ItemExponentialFailureRateLimiter``).

``when(item)`` counts a failure of ``item`` and returns how long to wait before its next try:
``base * 2**n`` for its n-th failure in a row (n from 0), capped at ``maximum``; ``forget(item)`` after a
success starts it from ``base`` again. With ``jitter`` j the delay is drawn uniformly from
``[d * (1 - j), d]``, so replicas that failed together do not retry in step. The work queue retries each
node with one, the reflector its list and watch as :data:`ONE`; each waits the delays out on its ``Clock``.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

__all__ = ["DEFAULT_BASE", "DEFAULT_MAX", "ONE", "ExponentialBackoff"]

#: The first retry's delay and the cap, in seconds: client-go's reflector backs off up to 30 s.
DEFAULT_BASE = 0.5
DEFAULT_MAX = 30.0
#: The item of a caller that backs off one thing only (the reflector's list and watch).
ONE = "*"

K = TypeVar("K", bound=Hashable)


class ExponentialBackoff(Generic[K]):
    """Per-item exponential backoff (thread-safe). ``rand()`` in [0, 1) draws the jitter."""

    def __init__(
        self,
        base: float = DEFAULT_BASE,
        maximum: float = DEFAULT_MAX,
        *,
        jitter: float = 0.0,
        rand: Callable[[], float] = random.random,
    ) -> None:
        if not base > 0 or not maximum >= base:
            raise ValueError(f"backoff: need 0 < base <= maximum, got base={base!r}, maximum={maximum!r}")
        if not 0.0 <= jitter < 1.0:
            raise ValueError(f"backoff: jitter must be in [0, 1), got {jitter!r}")
        self._base, self._maximum, self._jitter, self._rand = base, maximum, jitter, rand
        self._failures: dict[K, int] = {}
        self._lock = threading.Lock()

    def when(self, item: K) -> float:
        """Count a failure of ``item``; the delay before its next try."""
        with self._lock:
            failures = self._failures.get(item, 0)
            self._failures[item] = failures + 1
        ceiling = min(self._maximum, self._base * 2.0 ** min(failures, 64))
        if not self._jitter:
            return ceiling
        return ceiling * (1.0 - self._jitter + self._jitter * self._rand())

    def forget(self, item: K) -> None:
        """``item`` succeeded: its next failure waits ``base`` again."""
        with self._lock:
            self._failures.pop(item, None)
