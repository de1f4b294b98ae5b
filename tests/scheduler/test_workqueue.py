import threading

from hami_core.scheduler.workqueue import WorkQueue


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_an_item_queued_twice_is_taken_once() -> None:
    q = WorkQueue()
    q.add("a")
    q.add("b")
    q.add("a")
    assert [q.get(0), q.get(0), q.get(0)] == ["a", "b", None]


def test_an_item_taken_can_be_queued_again() -> None:
    q = WorkQueue()
    q.add("a")
    assert q.get(0) == "a"
    q.add("a")
    assert q.get(0) == "a"


def test_delayed_item_becomes_due_at_its_time() -> None:
    clock = FakeClock()
    q = WorkQueue(monotonic=clock)
    q.add_at("a", 105.0)
    assert q.get(0) is None
    clock.now = 104.999
    assert q.get(0) is None
    clock.now = 105.0
    assert q.get(0) == "a"
    assert q.get(0) is None


def test_earliest_scheduled_time_wins() -> None:
    clock = FakeClock()
    q = WorkQueue(monotonic=clock)
    q.add_at("a", 110.0)
    q.add_at("a", 105.0)
    q.add_at("a", 120.0)
    clock.now = 105.0
    assert q.get(0) == "a"
    clock.now = 200.0
    # the later wake-ups were superseded: an evaluation schedules its own next one
    assert q.get(0) is None


def test_due_item_already_waiting_is_not_duplicated() -> None:
    clock = FakeClock()
    q = WorkQueue(monotonic=clock)
    q.add_at("a", 101.0)
    q.add("a")
    clock.now = 102.0
    assert q.get(0) == "a"
    assert q.get(0) is None


def test_get_blocks_until_an_item_arrives_and_shutdown_wakes_waiters() -> None:
    q = WorkQueue()
    got: list[str | None] = []
    t = threading.Thread(target=lambda: got.append(q.get(5)))
    t.start()
    q.add("x")
    t.join(5)
    assert got == ["x"]
    t2 = threading.Thread(target=lambda: got.append(q.get(None)))
    t2.start()
    q.shutdown()
    t2.join(5)
    assert got == ["x", None]
    assert not t2.is_alive()
