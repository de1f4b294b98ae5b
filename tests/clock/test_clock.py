"""The fake clock: waits end on the fake time, never on the real one."""

from __future__ import annotations

import threading
from datetime import datetime, timedelta, timezone, tzinfo

import pytest
from harness.clock import WatchedClock
from harness.poll import wait_for

from hami_core import clock as hami_clock
from hami_core.clock import SYSTEM, SystemClock, WallSteps, wait_until


def test_now_and_monotonic_move_together_only_when_advanced() -> None:
    clock = WatchedClock(datetime(2026, 3, 1, 12, 0, 0).astimezone())
    t0, m0 = clock.now(), clock.monotonic()
    assert clock.now() == t0 and clock.monotonic() == m0
    clock.advance(90.5)
    assert (clock.now() - t0).total_seconds() == 90.5
    assert clock.monotonic() - m0 == 90.5
    assert clock.now().tzinfo is not None


def test_time_does_not_go_back() -> None:
    with pytest.raises(ValueError, match="does not go back"):
        WatchedClock().advance(-1)


def _in_thread(target: object) -> tuple[threading.Thread, list[object]]:
    out: list[object] = []
    thread = threading.Thread(target=lambda: out.append(target()), daemon=True)  # type: ignore[operator]
    thread.start()
    return thread, out


def test_a_timed_event_wait_ends_when_the_fake_time_passes_its_deadline() -> None:
    clock = WatchedClock()
    event = clock.event()
    thread, out = _in_thread(lambda: event.wait(10))
    assert clock.wait_for_waiting(1)
    clock.advance(9.9)
    assert clock.wait_for_waiting(1)  # woken by the tick, looked at its deadline, waits again
    assert thread.is_alive()
    clock.advance(0.1)
    thread.join(5)
    assert out == [False]


def test_setting_the_event_ends_the_wait_at_once() -> None:
    clock = WatchedClock()
    event = clock.event()
    thread, out = _in_thread(lambda: event.wait(3600))
    assert clock.wait_for_waiting(1)
    event.set()
    thread.join(5)
    assert out == [True]
    assert clock.waiting() == 0


def test_sleep_returns_after_the_fake_time_passed() -> None:
    clock = WatchedClock()
    start = clock.monotonic()

    def sleep_then_read() -> float:
        clock.sleep(5)
        return clock.monotonic()

    thread, out = _in_thread(sleep_then_read)
    assert clock.wait_for_waiting(1)
    for _ in range(5):
        clock.advance(1)
    thread.join(5)
    assert out == [start + 5]


def test_condition_wait_for_times_out_on_the_fake_clock() -> None:
    clock = WatchedClock()
    cond = clock.condition()

    def waiter() -> object:
        with cond:
            return cond.wait_for(lambda: False, timeout=2)

    thread, out = _in_thread(waiter)
    assert clock.wait_for_waiting(1)
    clock.advance(2)
    thread.join(5)
    assert out == [False]


def test_wait_until_looks_again_after_each_wake_up_and_ends_at_its_absolute_deadline() -> None:
    clock = WatchedClock()
    cond = clock.condition()
    looks: list[float] = []
    deadline = clock.monotonic() + 5

    def done() -> bool:
        looks.append(clock.monotonic())
        return len(looks) > 10

    def waiter() -> object:
        with cond:
            return wait_until(cond, clock.monotonic, deadline, done)

    thread, out = _in_thread(waiter)
    assert clock.wait_for_waiting(1)
    with cond:
        cond.notify_all()  # a wake-up with nothing done: it looks, and waits again to the same deadline
    wait_for("the waiter to look again", lambda: len(looks) == 2)
    assert clock.wait_for_waiting(1)
    clock.advance(4.9)
    assert clock.wait_for_waiting(1)
    assert thread.is_alive()
    clock.advance(0.1)  # returns once the wait due now has ended
    assert clock.waiting() == 0
    thread.join(5)
    assert out == [False]
    assert looks[-1] == deadline
    with cond:  # past the deadline: no wait; no deadline: until done() holds
        assert wait_until(cond, clock.monotonic, deadline, lambda: False) is False
        assert wait_until(cond, clock.monotonic, None, lambda: "done") == "done"


def test_the_system_clock_is_real_time() -> None:
    assert SYSTEM.now().tzinfo is not None
    assert SYSTEM.monotonic() <= SYSTEM.monotonic()
    assert SYSTEM.event().wait(0) is False


def test_the_system_clock_shares_one_zone_object_while_the_offset_holds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The scheduler keeps a timestamp per node and vendor: one zone object for all of them, and a new
    one the moment the machine's zone says another offset (a daylight-saving change)."""
    clock = SystemClock()
    first, second = clock.now(), clock.now()
    assert first.tzinfo is second.tzinfo and first <= second
    assert second.utcoffset() == datetime.now().astimezone().utcoffset()
    shifted = timezone(timedelta(hours=3, minutes=30), "TEST")

    class Shifted(datetime):
        def astimezone(self, tz: tzinfo | None = None) -> datetime:  # type: ignore[override]
            return datetime.now(shifted)

    monkeypatch.setattr(hami_clock, "datetime", Shifted)
    third = clock.now()
    assert third.tzinfo is shifted and third.utcoffset() == timedelta(hours=3, minutes=30)
    assert clock.now().tzinfo is shifted


def test_step_wall_moves_the_wall_clock_alone() -> None:
    clock = WatchedClock()
    wall, mono = clock.now(), clock.monotonic()
    clock.step_wall(3600)
    assert clock.now() - wall == timedelta(hours=1) and clock.monotonic() == mono
    clock.advance(5)
    assert clock.now() - wall == timedelta(hours=1, seconds=5) and clock.monotonic() == mono + 5
    clock.step_wall(-7200)
    assert clock.now() - wall == timedelta(hours=-1, seconds=5)


def test_wall_steps_are_detected_against_the_monotonic_clock() -> None:
    clock = WatchedClock()
    steps = WallSteps()
    assert steps.check(clock.now(), clock.monotonic()) is None  # the first look has nothing to compare
    clock.advance(30)
    assert steps.check(clock.now(), clock.monotonic()) is None  # both moved alike: no step
    clock.step_wall(0.9)  # within the tolerance (NTP slewing): not a step
    assert steps.check(clock.now(), clock.monotonic()) is None and steps.last_step_at is None
    clock.advance(1)
    clock.step_wall(3600)
    assert steps.check(clock.now(), clock.monotonic()) == pytest.approx(3600)
    assert steps.last_step_at == clock.monotonic()
    assert steps.check(clock.now(), clock.monotonic()) is None  # one step is reported once
    clock.advance(10)
    clock.step_wall(-120)
    assert steps.check(clock.now(), clock.monotonic()) == pytest.approx(-120)
    assert steps.last_step_at == clock.monotonic()
