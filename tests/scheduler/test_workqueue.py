"""The work queue in client-go's shape: dedup, one worker per key, delayed adds, per-item backoff."""

from __future__ import annotations

import threading

from harness.clock import WatchedClock

from hami_core.scheduler.workqueue import WorkQueue


def take(q: WorkQueue[str]) -> str | None:
    """Take the next key now and finish it at once."""
    key = q.get(0)
    if key is not None:
        q.done(key)
    return key


def test_a_key_queued_twice_is_taken_once() -> None:
    q: WorkQueue[str] = WorkQueue(clock=WatchedClock())
    q.add("a")
    q.add("b")
    q.add("a")
    assert [take(q), take(q), take(q)] == ["a", "b", None]


def test_a_key_added_while_processed_waits_for_done() -> None:
    q: WorkQueue[str] = WorkQueue(clock=WatchedClock())
    q.add("a")
    assert q.get(0) == "a"
    q.add("a")
    q.add("a")
    assert q.get(0) is None  # one worker per key: not handed out again while being processed
    assert not q.idle()
    q.done("a")
    assert q.get(0) == "a"  # queued again, once
    q.done("a")
    assert q.get(0) is None and q.idle()


def test_delayed_key_becomes_due_at_its_time_and_the_earliest_time_wins() -> None:
    clock = WatchedClock()
    q: WorkQueue[str] = WorkQueue(clock=clock)
    q.add_after("a", 10)
    q.add_after("a", 5)
    q.add_after("a", 20)
    assert take(q) is None and q.delayed() == 1 and q.idle()
    clock.advance(4.999)
    assert take(q) is None
    clock.advance(0.001)
    assert not q.idle()
    assert take(q) == "a"
    clock.advance(100)
    assert take(q) is None  # the later times were superseded


def test_a_due_key_already_waiting_is_not_duplicated() -> None:
    clock = WatchedClock()
    q: WorkQueue[str] = WorkQueue(clock=clock)
    q.add_after("a", 1)
    q.add("a")
    clock.advance(2)
    assert take(q) == "a"
    assert take(q) is None


def test_rate_limited_retries_back_off_per_key_until_forgotten() -> None:
    clock = WatchedClock()
    q: WorkQueue[str] = WorkQueue(clock=clock, base_delay=0.5, max_delay=4.0)
    delays = [q.add_rate_limited("a") for _ in range(5)]
    assert delays == [0.5, 1.0, 2.0, 4.0, 4.0]
    assert q.add_rate_limited("b") == 0.5  # per key
    q.forget("a")
    assert q.add_rate_limited("a") == 0.5  # from the base delay again


def test_get_waits_on_the_clock_and_shutdown_wakes_waiters() -> None:
    clock = WatchedClock()
    q: WorkQueue[str] = WorkQueue(clock=clock)
    got: list[str | None] = []
    t = threading.Thread(target=lambda: got.append(q.get(60)))
    t.start()
    q.add_after("x", 30)
    assert clock.wait_for_waiting(1)
    clock.advance(30)
    t.join(5)
    assert got == ["x"]
    t2 = threading.Thread(target=lambda: got.append(q.get(None)))
    t2.start()
    q.shutdown()
    t2.join(5)
    assert got == ["x", None]
    assert not t2.is_alive()


def test_add_first_goes_ahead_of_every_waiting_key_once() -> None:
    q: WorkQueue[str] = WorkQueue(clock=WatchedClock())
    for key in ("a", "b", "c"):
        q.add(key)
    q.add_first("term")
    q.add_first("c")  # already waiting: moved to the front, not queued twice
    assert [take(q) for _ in range(5)] == ["c", "term", "a", "b", None]


def test_add_first_of_a_key_being_processed_waits_for_done() -> None:
    q: WorkQueue[str] = WorkQueue(clock=WatchedClock())
    q.add("term")
    q.add("a")
    assert q.get(0) == "term"
    q.add_first("term")
    q.add_first("term")
    assert take(q) == "a"  # not taken again while it is processed
    q.done("term")
    assert [take(q), take(q)] == ["term", None]
