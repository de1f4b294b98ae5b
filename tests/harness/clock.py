"""The fake clock as tests drive it: ``hami_core.clock.FakeClock`` plus what only a test asks of it (how
many threads wait on it, a step of the wall clock alone, and waits that pass at once)."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta

from hami_core.clock import ClockCondition, FakeClock, _FakeCondition

__all__ = ["WatchedClock"]


class WatchedClock(FakeClock):
    """``FakeClock`` whose waits a test can count (``waiting()``) and whose wall clock it can step alone
    (``step_wall()``). With ``auto_advance`` a timed wait moves the time by its timeout at once, recorded
    in ``slept`` (one-thread loops)."""

    def __init__(self, start: datetime | None = None, *, auto_advance: bool = False) -> None:
        super().__init__(start)
        self.auto_advance = auto_advance
        self.slept: list[float] = []
        #: How far the wall clock was stepped from where the elapsed time puts it.
        self._wall_step = 0.0

    def now(self) -> datetime:
        with self._lock:
            step = self._wall_step
        return super().now() + timedelta(seconds=step)

    def step_wall(self, seconds: float) -> None:
        """Step the wall clock alone (back when negative), waking nothing, as NTP stepping it does."""
        with self._lock:
            self._wall_step += seconds

    def condition(self, lock: threading.Lock | threading.RLock | None = None) -> ClockCondition:
        return _PassingCondition(self, lock) if self.auto_advance else super().condition(lock)

    def _slept(self, seconds: float) -> None:
        self.slept.append(seconds)
        with self._lock:
            self._elapsed += seconds

    def waiting(self) -> int:
        """How many threads are blocked in a timed wait on this clock now."""
        with self._lock:
            return len(self._deadlines)

    def wait_for_waiting(self, count: int, timeout: float = 10.0) -> bool:
        """Block (in real time, up to ``timeout``) until at least ``count`` threads wait on this clock."""
        with self._blocked_changed:
            return self._blocked_changed.wait_for(lambda: len(self._deadlines) >= count, timeout)


class _PassingCondition(_FakeCondition):
    """A condition whose timed waits move the clock by their timeout at once and time out."""

    def __init__(self, clock: WatchedClock, lock: threading.Lock | threading.RLock | None) -> None:
        super().__init__(clock, lock)
        self._watched = clock

    def wait(self, timeout: float | None = None) -> bool:
        if timeout is None:
            return super().wait()
        if timeout > 0:
            self._watched._slept(timeout)
        return False
