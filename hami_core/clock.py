"""Time as an input: every loop reads the time and waits through a ``Clock``: ``SYSTEM``, or a
``FakeClock`` that moves only on ``advance()`` (tests, ``hami simulate``), whose timed waits end when the
fake time passes their deadline (client-go's ``fakeclock``)."""

from __future__ import annotations

import threading
import time
import weakref
from collections.abc import Callable
from datetime import datetime, timedelta, tzinfo
from types import TracebackType
from typing import Protocol

__all__ = [
    "STEP_TOLERANCE",
    "SYSTEM",
    "Clock",
    "ClockCondition",
    "ClockEvent",
    "FakeClock",
    "SystemClock",
    "WallSteps",
    "wait_until",
]


class ClockEvent(Protocol):
    """``threading.Event``'s shape: a flag whose ``wait(timeout)`` runs on the clock that made it."""

    def set(self) -> None: ...

    def is_set(self) -> bool: ...

    def wait(self, timeout: float | None = None) -> bool: ...


class ClockCondition(Protocol):
    """``threading.Condition``'s shape, with ``wait(timeout)`` measured on the clock that made it."""

    def __enter__(self) -> bool: ...

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None, /
    ) -> None: ...

    def wait(self, timeout: float | None = None) -> bool: ...

    def wait_for(self, predicate: Callable[[], object], timeout: float | None = None) -> object: ...

    def notify(self, n: int = 1) -> None: ...

    def notify_all(self) -> None: ...


class Clock(Protocol):
    """Wall time for stamps, monotonic time for intervals, and waits measured on the same clock."""

    def now(self) -> datetime:
        """The wall time, aware, in the local zone (the zone stamps are written in)."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes back; for intervals and deadlines."""

    def sleep(self, seconds: float) -> None: ...

    def event(self) -> ClockEvent: ...

    def condition(self, lock: threading.Lock | threading.RLock | None = None) -> ClockCondition: ...


class SystemClock:
    """The real clock: the machine's wall time and ``time.monotonic``."""

    def __init__(self) -> None:
        self._zone: tzinfo | None = None

    def now(self) -> datetime:
        """The local time, sharing one zone object while the offset stays (about 1 MB at 10,000 nodes)."""
        current = datetime.now().astimezone()
        zone = self._zone
        if zone is not None and current.tzinfo == zone and current.tzname() == zone.tzname(None):
            return current.replace(tzinfo=zone)
        self._zone = current.tzinfo
        return current

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            time.sleep(seconds)

    def event(self) -> ClockEvent:
        return threading.Event()

    def condition(self, lock: threading.Lock | threading.RLock | None = None) -> ClockCondition:
        return threading.Condition(lock)


SYSTEM: Clock = SystemClock()


def wait_until(
    cond: ClockCondition, monotonic: Callable[[], float], deadline: float | None, done: Callable[[], object]
) -> object:
    """Wait on ``cond`` (its lock held) until ``done()`` holds or ``monotonic()`` reaches the absolute
    ``deadline`` (``None``: never), looking again after every wake-up; returns ``done()``'s last value."""
    while not (result := done()):
        left = None if deadline is None else deadline - monotonic()
        if left is not None and left <= 0:
            break
        cond.wait(left)
    return result


#: How far the wall clock may move against the monotonic one between two looks before it counts as a
#: step, in seconds. NTP slews a clock by at most 0.5 ms a second, and a look is never minutes apart.
STEP_TOLERANCE = 1.0


class WallSteps:
    """Steps of the wall clock (NTP, ``date -s``, a resumed VM): the offset from the monotonic clock moving
    by more than ``STEP_TOLERANCE`` between two looks. Not thread-safe: one looker."""

    def __init__(self) -> None:
        self._offset: float | None = None
        #: The monotonic time of the last step detected (``None``: none yet).
        self.last_step_at: float | None = None

    def check(self, wall: datetime, mono: float) -> float | None:
        """The step in seconds (forward > 0) since the previous look, else ``None``."""
        offset = wall.timestamp() - mono
        previous, self._offset = self._offset, offset
        if previous is None or abs(offset - previous) <= STEP_TOLERANCE:
            return None
        self.last_step_at = mono
        return offset - previous


#: Where a ``FakeClock`` starts unless told otherwise: a fixed moment, so runs repeat exactly.
_FAKE_START = datetime(2026, 1, 1, 0, 0, 0)


class _FakeCondition:
    """A condition whose timed waits end when the fake clock passes their deadline (or on a notify)."""

    def __init__(self, clock: FakeClock, lock: threading.Lock | threading.RLock | None) -> None:
        self._clock = clock
        self._cond = threading.Condition(lock)
        self._notified = 0

    def __enter__(self) -> bool:
        return self._cond.__enter__()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None, /
    ) -> None:
        self._cond.__exit__(exc_type, exc, tb)

    def notify(self, n: int = 1) -> None:
        self._notified += 1
        self._cond.notify(n)

    def notify_all(self) -> None:
        self._notified += 1
        self._cond.notify_all()

    def _tick(self) -> None:
        """The fake time moved: wake the timed waiters so they look at their deadlines."""
        with self._cond:
            self._cond.notify_all()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for a notify, or until the fake time reaches now + ``timeout``; False on timeout."""
        seen = self._notified
        if timeout is None:
            self._cond.wait()
            return True
        deadline = self._clock.monotonic() + timeout
        if timeout <= 0:
            return False
        self._clock._waiting(deadline)
        try:
            while True:
                self._cond.wait()
                if self._notified != seen:
                    return True
                if self._clock.monotonic() >= deadline:
                    return False
        finally:
            self._clock._done_waiting(deadline)

    def wait_for(self, predicate: Callable[[], object], timeout: float | None = None) -> object:
        deadline = None if timeout is None else self._clock.monotonic() + timeout
        return wait_until(self, self._clock.monotonic, deadline, predicate)


class _FakeEvent:
    def __init__(self, clock: FakeClock) -> None:
        self._cond = clock.condition()
        self._flag = False

    def set(self) -> None:
        with self._cond:
            self._flag = True
            self._cond.notify_all()

    def is_set(self) -> bool:
        return self._flag

    def wait(self, timeout: float | None = None) -> bool:
        with self._cond:
            return bool(self._cond.wait_for(lambda: self._flag, timeout))


class FakeClock:
    """Time that moves only on ``advance()``, from 2026-01-01 00:00:00 local (or ``start``); what only
    tests ask of it (the waits on it, a wall clock step) is ``tests/harness/clock.py``'s."""

    def __init__(self, start: datetime | None = None) -> None:
        start = start if start is not None else _FAKE_START
        self._start = start if start.tzinfo is not None else start.astimezone()
        self._lock = threading.Lock()
        self._elapsed = 0.0
        #: The deadline of every timed wait in progress.
        self._deadlines: list[float] = []
        self._blocked_changed = threading.Condition(self._lock)
        self._conditions: weakref.WeakSet[_FakeCondition] = weakref.WeakSet()

    def now(self) -> datetime:
        with self._lock:
            elapsed = self._elapsed
        return (self._start + timedelta(seconds=elapsed)).astimezone(self._start.tzinfo)

    def monotonic(self) -> float:
        with self._lock:
            return 1000.0 + self._elapsed

    def sleep(self, seconds: float) -> None:
        self.event().wait(seconds)  # an event no one sets: it waits out the fake time

    def event(self) -> ClockEvent:
        return _FakeEvent(self)

    def condition(self, lock: threading.Lock | threading.RLock | None = None) -> ClockCondition:
        cond = _FakeCondition(self, lock)
        with self._lock:
            self._conditions.add(cond)
        return cond

    def advance(self, seconds: float) -> None:
        """Move the time forward; returns once every wait now due has ended (up to 10 s of real time)."""
        if seconds < 0:
            raise ValueError(f"FakeClock.advance: time does not go back ({seconds}s)")
        with self._lock:
            self._elapsed += seconds
            conditions = list(self._conditions)
        for cond in conditions:
            cond._tick()
        with self._blocked_changed:
            now = 1000.0 + self._elapsed
            self._blocked_changed.wait_for(lambda: all(deadline > now for deadline in self._deadlines), 10.0)

    def _waiting(self, deadline: float) -> None:
        with self._blocked_changed:
            self._deadlines.append(deadline)
            self._blocked_changed.notify_all()

    def _done_waiting(self, deadline: float) -> None:
        with self._blocked_changed:
            self._deadlines.remove(deadline)
            self._blocked_changed.notify_all()
