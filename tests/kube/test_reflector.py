"""The reflector's own behaviour on the in-memory cluster with injected faults: backoff, no tight loops,
diff on relist, handler isolation, prompt stop. (Relist against the real server: the contract suite.)"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from hami_core.clock import FakeClock
from hami_core.kube.memory import MemoryCluster
from hami_core.kube.port import NodeSnapshot, WatchEvent
from hami_core.kube.reflector import Backoff, Reflector, ReflectorConfig

FAST = ReflectorConfig(watch_timeout=(5, 5))


class Log:
    """Handler that records calls and can run a hook on each."""

    def __init__(self, hook: Callable[[tuple[Any, ...]], None] | None = None) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.hook = hook
        self.cond = threading.Condition()

    def _add(self, call: tuple[Any, ...]) -> None:
        with self.cond:
            self.calls.append(call)
            self.cond.notify_all()
        if self.hook is not None:
            self.hook(call)

    def on_upsert(self, old: NodeSnapshot | None, new: NodeSnapshot) -> None:
        self._add(("upsert", old.resource_version if old else None, new.name, new.resource_version))

    def on_delete(self, last: NodeSnapshot) -> None:
        self._add(("delete", last.name))

    def on_synced(self, *, relisted: bool) -> None:
        self._add(("synced", relisted))

    def wait_for(self, call: tuple[Any, ...], timeout: float = 10.0) -> None:
        with self.cond:
            assert self.cond.wait_for(lambda: call in self.calls, timeout), self.calls


class Sleeps(FakeClock):
    """A fake clock whose waits pass at once: records the backoff delays, and stops the reflector after
    ``limit`` of them."""

    def __init__(self, limit: int) -> None:
        super().__init__(auto_advance=True)
        self.limit = limit
        self.reflector: Reflector | None = None

    @property
    def delays(self) -> list[float]:
        return self.slept

    def _slept(self, seconds: float) -> None:
        super()._slept(seconds)
        if len(self.slept) >= self.limit and self.reflector is not None:
            self.reflector.stop(timeout=0)


def test_backoff_doubles_with_jitter_up_to_the_cap() -> None:
    top = Backoff(0.5, 30.0, rand=lambda: 1.0)
    assert [top.next_delay() for _ in range(9)] == [0.5, 1, 2, 4, 8, 16, 30, 30, 30]
    bottom = Backoff(0.5, 30.0, rand=lambda: 0.0)
    assert [bottom.next_delay() for _ in range(3)] == [0.25, 0.5, 1]
    top.reset()
    assert top.next_delay() == 0.5


def test_list_failures_back_off_then_sync() -> None:
    cluster = MemoryCluster()
    cluster.create_node("n1")
    cluster.fail_next(3, verb="list")
    sleeps = Sleeps(limit=100)
    log = Log()
    reflector = Reflector(cluster, log, FAST, clock=sleeps, rand=lambda: 1.0)
    log.hook = lambda call: reflector.stop(timeout=0) if call[0] == "synced" else None
    reflector.run()  # returns once stopped by the hook
    assert sleeps.delays == [0.5, 1.0, 2.0]
    assert reflector.has_synced and reflector.names() == ["n1"]
    assert log.calls == [("upsert", None, "n1", cluster.get_node("n1").resource_version), ("synced", False)]


def test_a_watch_that_is_always_gone_is_not_a_tight_loop() -> None:
    cluster = MemoryCluster()
    cluster.force_gone(1000)
    sleeps = Sleeps(limit=5)
    reflector = Reflector(cluster, Log(), FAST, clock=sleeps, rand=lambda: 1.0)
    sleeps.reflector = reflector
    reflector.run()
    assert sleeps.delays == [0.5, 1.0, 2.0, 4.0, 8.0]
    assert reflector.lists == 5


class _EmptyWatch:
    def __iter__(self) -> Iterator[WatchEvent]:
        return iter(())

    def close(self) -> None:
        pass


class _WatchEndsAtOnce(MemoryCluster):
    def watch_nodes(self, **kwargs: Any) -> Any:  # type: ignore[override]
        return _EmptyWatch()


def test_a_watch_that_ends_at_once_is_not_a_tight_loop() -> None:
    sleeps = Sleeps(limit=4)
    reflector = Reflector(_WatchEndsAtOnce(), Log(), FAST, clock=sleeps, rand=lambda: 0.0)
    sleeps.reflector = reflector
    reflector.run()
    assert sleeps.delays == [0.25, 0.5, 1.0, 2.0]
    assert reflector.lists == 1


def test_relist_after_gone_delivers_only_the_difference() -> None:
    cluster = MemoryCluster()
    a, b, c = (cluster.create_node(n) for n in "abc")
    log = Log()
    reflector = Reflector(cluster, log, FAST, clock=FakeClock(auto_advance=True))
    reflector.start()
    try:
        log.wait_for(("synced", False))
        a1 = cluster.patch_node_annotations("a", {"x": "1"})
        log.wait_for(("upsert", a.resource_version, "a", a1.resource_version))
        mark = len(log.calls)
        with cluster._cond:  # all of this happens while the reflector cannot see it
            b1 = cluster.patch_node_annotations("b", {"x": "1"})
            cluster.delete_node("c")
            d = cluster.create_node("d")
            cluster.compact()  # the watch's history is gone: it must relist
        log.wait_for(("synced", True))
        assert sorted(log.calls[mark:-1], key=str) == sorted(
            [
                ("upsert", b.resource_version, "b", b1.resource_version),
                ("delete", "c"),
                ("upsert", None, "d", d.resource_version),
            ],
            key=str,
        )
        assert reflector.items() == {n.name: n for n in cluster.list_nodes().items}
        d1 = cluster.patch_node_annotations("d", {"y": "1"})
        log.wait_for(("upsert", d.resource_version, "d", d1.resource_version))
        assert c.name not in reflector.names()
    finally:
        reflector.stop()


def test_dropped_watch_resumes_from_the_last_version_without_a_list() -> None:
    cluster = MemoryCluster()
    a = cluster.create_node("a")
    log = Log()
    reflector = Reflector(cluster, log, FAST, clock=FakeClock(auto_advance=True))
    reflector.start()
    try:
        log.wait_for(("synced", False))
        with cluster._cond:  # the change lands together with the drop: it arrives after the resume
            a1 = cluster.patch_node_annotations("a", {"x": "1"})
            cluster.drop_watches()
        log.wait_for(("upsert", a.resource_version, "a", a1.resource_version))
        b = cluster.create_node("b")
        log.wait_for(("upsert", None, "b", b.resource_version))
        assert reflector.lists == 1
        assert reflector.snapshot("a") == a1
    finally:
        reflector.stop()


def test_pages_are_joined_into_one_list() -> None:
    cluster = MemoryCluster()
    for i in range(7):
        cluster.create_node(f"n{i}")
    log = Log()
    reflector = Reflector(cluster, log, ReflectorConfig(page_size=3), clock=FakeClock(auto_advance=True))
    log.hook = lambda call: reflector.stop(timeout=0) if call[0] == "synced" else None
    reflector.run()
    assert reflector.names() == [f"n{i}" for i in range(7)]
    assert cluster.request_count("list") == 3
    assert len([c for c in log.calls if c[0] == "upsert"]) == 7


def test_bookmarks_advance_the_resource_version() -> None:
    cluster = MemoryCluster(bookmark_interval=None)
    cluster.create_node("a")
    log = Log()
    reflector = Reflector(cluster, log, FAST, clock=FakeClock(auto_advance=True))
    reflector.start()
    try:
        log.wait_for(("synced", False))
        lease_rv = cluster.resource_version
        deadline = time.monotonic() + 10
        while reflector.resource_version != cluster.resource_version and time.monotonic() < deadline:
            cluster.send_bookmarks()
            time.sleep(0.02)
        assert int(reflector.resource_version) >= int(lease_rv)
        assert log.calls == [("upsert", None, "a", cluster.get_node("a").resource_version), ("synced", False)]
    finally:
        reflector.stop()


def test_a_failing_handler_does_not_stop_the_reflector() -> None:
    cluster = MemoryCluster()
    log = Log()

    def explode(call: tuple[Any, ...]) -> None:
        if call[0] == "upsert" and call[2] == "bad":
            raise RuntimeError("handler bug")

    log.hook = explode
    reflector = Reflector(cluster, log, FAST, clock=FakeClock(auto_advance=True))
    reflector.start()
    try:
        log.wait_for(("synced", False))
        cluster.create_node("bad")
        good = cluster.create_node("good")
        log.wait_for(("upsert", None, "good", good.resource_version))
        assert reflector.names() == ["bad", "good"]
    finally:
        reflector.stop()


def test_stop_ends_a_backoff_and_a_watch_at_once() -> None:
    failing = MemoryCluster()
    failing.fail_next(10_000)
    config = ReflectorConfig(backoff_initial=20, backoff_max=20)
    reflector = Reflector(failing, Log(), config, clock=FakeClock())
    thread = reflector.start()
    _until(reflector.backing_off)
    reflector.stop(timeout=10)  # the fake clock never moves: only the stop can end the wait
    assert not thread.is_alive()

    idle = MemoryCluster()
    log = Log()
    watching = Reflector(idle, log, ReflectorConfig(watch_timeout=(300, 300)), clock=FakeClock())
    thread = watching.start()
    log.wait_for(("synced", False))
    _until(lambda: idle.open_watches == 1)
    watching.stop(timeout=10)
    assert not thread.is_alive()
    assert idle.open_watches == 0


def _until(predicate: Callable[[], object], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


@pytest.mark.parametrize("selector", ["pool=gpu"])
def test_a_node_leaving_the_selector_is_deleted_from_the_store(selector: str) -> None:
    cluster = MemoryCluster()
    a = cluster.create_node("a", labels={"pool": "gpu"})
    cluster.create_node("b", labels={"pool": "cpu"})
    log = Log()
    reflector = Reflector(cluster, log, ReflectorConfig(label_selector=selector, watch_timeout=(5, 5)))
    reflector.start()
    try:
        log.wait_for(("synced", False))
        assert reflector.names() == ["a"]
        cluster.merge_patch_node("a", {"metadata": {"labels": {"pool": "cpu"}}})
        log.wait_for(("delete", "a"))
        assert reflector.names() == [] and reflector.snapshot("a") is None
        back = cluster.merge_patch_node("a", {"metadata": {"labels": {"pool": "gpu"}}})
        log.wait_for(("upsert", None, "a", back.resource_version))
        assert a.resource_version != back.resource_version
    finally:
        reflector.stop()


def test_progress_is_stamped_by_lists_and_events() -> None:
    cluster = MemoryCluster()
    log = Log()
    clock = FakeClock()
    reflector = Reflector(cluster, log, FAST, clock=clock)
    assert reflector.last_progress == clock.monotonic()
    clock.advance(1)
    reflector.start()
    try:
        log.wait_for(("synced", False))
        after_list = reflector.last_progress
        assert after_list == clock.monotonic()
        clock.advance(1)
        node = cluster.create_node("n1")
        log.wait_for(("upsert", None, "n1", node.resource_version))
        assert reflector.last_progress > after_list
    finally:
        reflector.stop()
