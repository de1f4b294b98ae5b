"""The scheduler's work queue, in client-go's shape (``workqueue.TypedRateLimitingInterface``):
deduplicating, one worker per key, delayed adds, per-item retries on ``hami_core.kube.backoff``; all
waiting is on the injected :class:`~hami_core.clock.Clock`.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import deque
from collections.abc import Hashable
from typing import Generic, TypeVar

from hami_core.clock import SYSTEM, Clock
from hami_core.kube.backoff import DEFAULT_BASE, DEFAULT_MAX, ExponentialBackoff

__all__ = ["WorkQueue"]

K = TypeVar("K", bound=Hashable)


class WorkQueue(Generic[K]):
    def __init__(
        self, *, clock: Clock = SYSTEM, base_delay: float = DEFAULT_BASE, max_delay: float = DEFAULT_MAX
    ) -> None:
        self._clock = clock
        self._cond = clock.condition()
        self._ready: deque[K] = deque()
        self._dirty: set[K] = set()
        self._processing: set[K] = set()
        self._delayed: list[tuple[float, int, K]] = []
        self._due: dict[K, float] = {}
        self._seq = itertools.count()
        self._backoff: ExponentialBackoff[K] = ExponentialBackoff(base_delay, max_delay)
        self._closed = False

    # -- adding -----------------------------------------------------------------------------------------

    def add(self, key: K) -> None:
        """Queue ``key`` now, unless it is already waiting."""
        with self._cond:
            self._add_locked(key)

    def add_first(self, key: K) -> None:
        """Queue ``key`` now ahead of every key waiting (moved to the front if it was waiting)."""
        with self._cond:
            self._add_locked(key, first=True)

    def _add_locked(self, key: K, *, first: bool = False) -> None:
        if self._closed:
            return
        if key in self._dirty:
            if not first or key in self._processing:
                return  # waiting already, or queued again by done(), which puts it at the back
            self._ready.remove(key)
        self._dirty.add(key)
        if key in self._processing:
            return  # queued again by done()
        if first:
            self._ready.appendleft(key)
        else:
            self._ready.append(key)
        self._cond.notify()

    def add_after(self, key: K, delay: float) -> None:
        """Queue ``key`` after ``delay`` seconds on the clock; an earlier pending time of the key wins."""
        if delay <= 0:
            self.add(key)
            return
        with self._cond:
            if self._closed:
                return
            when = self._clock.monotonic() + delay
            if self._due.get(key, float("inf")) <= when:
                return  # an earlier (or the same) time is pending already
            self._due[key] = when
            heapq.heappush(self._delayed, (when, next(self._seq), key))
            self._cond.notify()

    def add_rate_limited(self, key: K) -> float:
        """Queue ``key`` again after its per-item backoff; returns the delay chosen."""
        delay = self._backoff.when(key)
        self.add_after(key, delay)
        return delay

    def forget(self, key: K) -> None:
        """``key`` succeeded: its next ``add_rate_limited`` starts from the base delay again."""
        self._backoff.forget(key)

    # -- taking -----------------------------------------------------------------------------------------

    def get(self, timeout: float | None = None) -> K | None:
        """The next due key, waiting up to ``timeout`` seconds on the clock; ``None`` on timeout or after
        shutdown. The caller must call :meth:`done` with it when finished."""
        deadline = math.inf if timeout is None else self._clock.monotonic() + timeout
        with self._cond:
            while True:
                if self._closed:
                    return None
                self._promote_due()
                if self._ready:
                    key = self._ready.popleft()
                    self._dirty.discard(key)
                    self._processing.add(key)
                    return key
                now = self._clock.monotonic()
                if deadline <= now:
                    return None
                end = min(self._delayed[0][0], deadline) if self._delayed else deadline
                self._cond.wait(None if end == math.inf else max(0.0, end - now))

    def done(self, key: K) -> None:
        """The worker finished ``key``; if it was added meanwhile, it is queued again now."""
        with self._cond:
            self._processing.discard(key)
            if key in self._dirty and not self._closed:
                self._ready.append(key)
                self._cond.notify()

    # -- state ------------------------------------------------------------------------------------------

    def __len__(self) -> int:
        """Keys ready to be taken now (the queue depth)."""
        with self._cond:
            self._promote_due()
            return len(self._ready)

    def delayed(self) -> int:
        with self._cond:
            return len(self._due)

    def idle(self) -> bool:
        """Nothing ready, nothing due and nothing being processed (delayed keys may wait for later)."""
        with self._cond:
            self._promote_due()
            return not self._ready and not self._processing

    def shutdown(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def _promote_due(self) -> None:
        now = self._clock.monotonic()
        while self._delayed and self._delayed[0][0] <= now:
            when, _, key = heapq.heappop(self._delayed)
            if self._due.get(key) != when:
                continue  # superseded by an earlier time, already promoted
            del self._due[key]
            self._add_locked(key)
