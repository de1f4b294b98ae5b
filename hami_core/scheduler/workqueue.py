"""A deduplicating work queue of node names, with items that become due later.

A node queued twice before the worker takes it is evaluated once. ``add_at`` schedules an evaluation for
the moment a handshake stamp expires; the earliest scheduled time for a node wins.
"""

from __future__ import annotations

import heapq
import threading
import time
from collections import deque
from collections.abc import Callable

__all__ = ["WorkQueue"]


class WorkQueue:
    def __init__(self, *, monotonic: Callable[[], float] = time.monotonic) -> None:
        self._monotonic = monotonic
        self._cond = threading.Condition()
        self._ready: deque[str] = deque()
        self._queued: set[str] = set()
        self._delayed: list[tuple[float, str]] = []
        self._due: dict[str, float] = {}
        self._closed = False

    def __len__(self) -> int:
        with self._cond:
            return len(self._ready)

    def add(self, item: str) -> None:
        """Queue ``item`` now, unless it is already waiting."""
        with self._cond:
            if self._closed or item in self._queued:
                return
            self._queued.add(item)
            self._ready.append(item)
            self._cond.notify()

    def add_at(self, item: str, when: float) -> None:
        """Queue ``item`` at monotonic time ``when`` (or now, if that has passed)."""
        with self._cond:
            if self._closed:
                return
            previous = self._due.get(item)
            if previous is not None and previous <= when:
                return
            self._due[item] = when
            heapq.heappush(self._delayed, (when, item))
            self._cond.notify()

    def add_after(self, item: str, delay: float) -> None:
        self.add_at(item, self._monotonic() + max(0.0, delay))

    def get(self, timeout: float | None = None) -> str | None:
        """The next due item, waiting up to ``timeout`` seconds; ``None`` on timeout or shutdown."""
        deadline = None if timeout is None else self._monotonic() + timeout
        with self._cond:
            while True:
                if self._closed:
                    return None
                self._promote_due()
                if self._ready:
                    item = self._ready.popleft()
                    self._queued.discard(item)
                    return item
                waits = []
                if self._delayed:
                    waits.append(self._delayed[0][0] - self._monotonic())
                if deadline is not None:
                    remaining = deadline - self._monotonic()
                    if remaining <= 0:
                        return None
                    waits.append(remaining)
                self._cond.wait(max(0.0, min(waits)) if waits else None)

    def shutdown(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def _promote_due(self) -> None:
        now = self._monotonic()
        while self._delayed and self._delayed[0][0] <= now:
            when, item = heapq.heappop(self._delayed)
            if self._due.get(item) != when:
                continue  # superseded by an earlier time, already promoted
            del self._due[item]
            if item not in self._queued:
                self._queued.add(item)
                self._ready.append(item)
