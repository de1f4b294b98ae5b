"""The reflector's own behaviour on the in-memory cluster with injected faults: backoff, no tight loops,
diff on relist, handler isolation, prompt stop. (Relist against the real server: the contract suite.)"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import attrs
import pytest
from harness.admin import MemoryCluster
from harness.busy_clock import BusyClock
from harness.clock import WatchedClock
from harness.poll import wait_for

from hami_core.kube.backoff import ExponentialBackoff
from hami_core.kube.packed import PackedStrings
from hami_core.kube.port import Lease, NodeSnapshot, TooLarge, WatchEvent
from hami_core.kube.reflector import Reflector, ReflectorConfig

FAST = ReflectorConfig(watch_timeout=(5, 5))
ONE = "x"


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


class Sleeps(WatchedClock):
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
    top: ExponentialBackoff[str] = ExponentialBackoff(0.5, 30.0, jitter=0.5, rand=lambda: 1.0)
    assert [top.when(ONE) for _ in range(9)] == [0.5, 1, 2, 4, 8, 16, 30, 30, 30]
    bottom: ExponentialBackoff[str] = ExponentialBackoff(0.5, 30.0, jitter=0.5, rand=lambda: 0.0)
    assert [bottom.when(ONE) for _ in range(3)] == [0.25, 0.5, 1]
    top.forget(ONE)
    assert top.when(ONE) == 0.5


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
    def watch_nodes(self, **kwargs: Any) -> Any:
        return _EmptyWatch()


def test_a_watch_that_ends_at_once_is_not_a_tight_loop() -> None:
    sleeps = Sleeps(limit=4)
    reflector = Reflector(
        _WatchEndsAtOnce(), Log(), FAST, clock=sleeps, rand=lambda: 0.0, wire_clock=sleeps.monotonic
    )
    sleeps.reflector = reflector
    reflector.run()
    assert sleeps.delays == [0.25, 0.5, 1.0, 2.0]
    # no gap (the server ended each watch), and progress within the deadline: the watch resumes
    assert reflector.lists == 1


def test_relist_after_gone_delivers_only_the_difference() -> None:
    cluster = MemoryCluster()
    a, b, c = (cluster.create_node(n) for n in "abc")
    log = Log()
    reflector = Reflector(cluster, log, FAST, clock=WatchedClock(auto_advance=True))
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


def test_a_dropped_watch_is_a_gap_and_a_list_vouches_for_the_view_again() -> None:
    cluster = MemoryCluster()
    a = cluster.create_node("a")
    log = Log()
    reflector = Reflector(cluster, log, FAST, clock=WatchedClock(auto_advance=True))
    reflector.start()
    try:
        log.wait_for(("synced", False))
        assert reflector.current()
        with cluster._cond:  # the change lands together with the drop: the list after it shows it
            a1 = cluster.patch_node_annotations("a", {"x": "1"})
            cluster.drop_watches()
        log.wait_for(("synced", True))
        assert log.calls[-2:] == [("upsert", a.resource_version, "a", a1.resource_version), ("synced", True)]
        b = cluster.create_node("b")
        log.wait_for(("upsert", None, "b", b.resource_version))
        assert reflector.lists == 2
        assert reflector.snapshot("a") == a1
        assert reflector.current() and reflector.view_state().stale_count == 1
    finally:
        reflector.stop()


def test_pages_are_joined_into_one_list() -> None:
    cluster = MemoryCluster()
    for i in range(7):
        cluster.create_node(f"n{i}")
    log = Log()
    reflector = Reflector(cluster, log, ReflectorConfig(page_size=3), clock=WatchedClock(auto_advance=True))
    log.hook = lambda call: reflector.stop(timeout=0) if call[0] == "synced" else None
    reflector.run()
    assert reflector.names() == [f"n{i}" for i in range(7)]
    assert cluster.request_count("list") == 3
    assert len([c for c in log.calls if c[0] == "upsert"]) == 7


def test_bookmarks_advance_the_resource_version() -> None:
    cluster = MemoryCluster(bookmark_interval=None)
    cluster.create_node("a")
    log = Log()
    reflector = Reflector(cluster, log, FAST, clock=WatchedClock(auto_advance=True))
    reflector.start()
    try:
        log.wait_for(("synced", False))
        lease_rv = cluster.resource_version

        def bookmarked() -> bool:
            cluster.send_bookmarks()
            return reflector.resource_version == cluster.resource_version

        wait_for("a bookmark to reach the reflector", bookmarked, timeout=10, interval=0.02)
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
    reflector = Reflector(cluster, log, FAST, clock=WatchedClock(auto_advance=True))
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
    reflector = Reflector(failing, Log(), config, clock=WatchedClock())
    thread = reflector.start()
    _until(reflector.backing_off)
    reflector.stop(timeout=10)  # the fake clock never moves: only the stop can end the wait
    assert not thread.is_alive()

    idle = MemoryCluster()
    log = Log()
    long_watch = ReflectorConfig(watch_timeout=(300, 300), progress_deadline=400)
    watching = Reflector(idle, log, long_watch, clock=WatchedClock())
    thread = watching.start()
    log.wait_for(("synced", False))
    _until(lambda: idle.open_watches == 1)
    watching.stop(timeout=10)
    assert not thread.is_alive()
    assert idle.open_watches == 0


def _until(predicate: Callable[[], object], timeout: float = 10.0) -> None:
    wait_for("the reflector's state", predicate, timeout, interval=0.005)


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
    clock = WatchedClock()
    reflector = Reflector(cluster, log, FAST, clock=clock, wire_clock=clock.monotonic)
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


# -- whether the view is current (spec 5b) ---------------------------------------------------------------


def _ride_out_backoff(clock: WatchedClock) -> None:
    """The watch failed: let the reflector's backoff (at most 0.5 s for a first failure) pass."""
    assert clock.wait_for_waiting(1)
    clock.advance(1)


def _fake_world(**cluster_options: Any) -> tuple[WatchedClock, MemoryCluster]:
    clock = WatchedClock()
    return clock, MemoryCluster(clock=clock.monotonic, bookmark_interval=None, **cluster_options)


def test_a_silenced_watch_fails_by_its_read_timeout_and_a_list_shows_what_it_missed() -> None:
    clock, cluster = _fake_world()
    log = Log()
    reflector = Reflector(cluster, log, FAST, clock=clock, wire_clock=clock.monotonic)
    reflector.start()
    try:
        log.wait_for(("synced", False))
        _until(lambda: cluster.open_watches == 1)
        cluster.silence_watches()
        late = cluster.create_node("late")  # the silenced watch never delivers it
        clock.advance(5 + 5 - 0.5)  # its timeout (5 s) + the read slack (5 s), not yet
        assert reflector.snapshot("late") is None and reflector.current()
        clock.advance(0.5)
        _ride_out_backoff(clock)
        log.wait_for(("upsert", None, "late", late.resource_version))
        log.wait_for(("synced", True))
        assert reflector.lists == 2 and reflector.current()
        assert reflector.view_state().stale_count == 1
    finally:
        reflector.stop()


class _Forever:
    """A watch that never delivers and never ends until closed (a connection that trickles nothing)."""

    def __init__(self) -> None:
        self.closed = threading.Event()

    def __iter__(self) -> Iterator[WatchEvent]:
        self.closed.wait(30)
        return iter(())

    def close(self) -> None:
        self.closed.set()


class _SilentFirstWatch(MemoryCluster):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.silent: _Forever | None = None

    def watch_nodes(self, **kwargs: Any) -> Any:
        if self.silent is None:
            self.silent = _Forever()
            return self.silent
        return super().watch_nodes(**kwargs)


def test_no_progress_within_the_deadline_makes_the_view_stale_and_the_watch_is_replaced() -> None:
    clock = WatchedClock()
    cluster = _SilentFirstWatch(clock=clock.monotonic, bookmark_interval=None)
    cluster.create_node("a")
    log = Log()
    reflector = Reflector(cluster, log, FAST, clock=clock, wire_clock=clock.monotonic)
    reflector.start()
    try:
        log.wait_for(("synced", False))
        _until(lambda: cluster.silent is not None)
        clock.advance(30)
        assert reflector.current() and not reflector.check_progress()  # at the deadline: still current
        clock.advance(0.5)
        state = reflector.view_state()
        assert not reflector.current() and not state.current
        assert state.stale_because is not None and "no watch progress for 30s" in state.stale_because
        assert reflector.check_progress()  # drops the watch
        assert not reflector.check_progress()  # once
        log.wait_for(("synced", True))
        assert reflector.current() and reflector.lists == 2
        assert cluster.silent is not None and cluster.silent.closed.is_set()
    finally:
        reflector.stop()


def test_a_fresh_list_asked_for_is_served_only_by_a_list_that_starts_after_the_request() -> None:
    clock, cluster = _fake_world()
    log = Log()
    reflector = Reflector(cluster, log, FAST, clock=clock, wire_clock=clock.monotonic)
    reflector.start()
    try:
        log.wait_for(("synced", False))
        assert reflector.current(0)
        ticket = reflector.relist()
        assert ticket == 1
        node = cluster.create_node("meanwhile")
        log.wait_for(("synced", True))
        assert reflector.current(ticket) and not reflector.current(ticket + 1)
        assert reflector.snapshot("meanwhile") == node
        assert reflector.lists == 2
    finally:
        reflector.stop()


def test_a_store_that_moved_backwards_is_listed_again_and_replaces_the_cache() -> None:
    clock, cluster = _fake_world()
    for name in ("a", "b", "c"):
        cluster.create_node(name)
    log = Log()
    reflector = Reflector(cluster, log, FAST, clock=clock, wire_clock=clock.monotonic)
    reflector.start()
    try:
        log.wait_for(("synced", False))
        old_b = reflector.snapshot("b")
        with cluster._cond:  # the restart and the new objects land before the reflector lists again
            cluster.restart_empty()
            b = cluster.create_node("b")
            d = cluster.create_node("d")
        _ride_out_backoff(clock)
        log.wait_for(("synced", True))
        assert reflector.items() == {"b": b, "d": d}
        assert old_b is not None and old_b.uid != b.uid
        assert ("delete", "a") in log.calls and ("delete", "c") in log.calls
        assert reflector.store_rewinds == 1 and reflector.current()
        e = cluster.create_node("e")  # and it watches the new store from its list
        log.wait_for(("upsert", None, "e", e.resource_version))
    finally:
        reflector.stop()


class _TooLargeOnce(MemoryCluster):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.refused = 0

    def watch_nodes(self, **kwargs: Any) -> Any:
        if not self.refused:
            self.refused += 1
            raise TooLarge("watch nodes: 504 Too large resource version: 370, current: 211", status=504)
        return super().watch_nodes(**kwargs)


def test_a_resource_version_too_large_leads_to_a_list_from_the_present() -> None:
    clock = WatchedClock(auto_advance=True)
    cluster = _TooLargeOnce(bookmark_interval=None)
    cluster.create_node("a")
    log = Log()
    reflector = Reflector(cluster, log, FAST, clock=clock)
    reflector.start()
    try:
        log.wait_for(("synced", True))
        assert cluster.refused == 1 and reflector.lists == 2
        _until(reflector.current)
    finally:
        reflector.stop()


def test_the_progress_deadline_must_cover_the_longest_watch() -> None:
    with pytest.raises(ValueError, match="at least the longest watch timeout plus 5 s"):
        ReflectorConfig(watch_timeout=(20, 30), progress_deadline=30)
    with pytest.raises(ValueError, match="watch_timeout must be"):
        ReflectorConfig(watch_timeout=(10, 5))


class _NoBookmarks(MemoryCluster):
    def watch_nodes(self, **kwargs: Any) -> Any:
        kwargs["allow_bookmarks"] = False
        return super().watch_nodes(**kwargs)


def test_a_probe_that_finds_nothing_written_since_is_progress_one_that_finds_more_is_not() -> None:
    clock = WatchedClock()
    cluster = _NoBookmarks(clock=clock.monotonic, bookmark_interval=None)
    cluster.create_node("a")
    log = Log()
    reflector = Reflector(cluster, log, FAST, clock=clock, wire_clock=clock.monotonic)
    reflector.start()

    def next_watch() -> None:
        probes = reflector.probes
        clock.advance(5)  # the watch's timeout: it ends, the next one starts after a probe
        _until(lambda: reflector.probes > probes)

    try:
        log.wait_for(("synced", False))
        for _ in range(8):  # 40 s, past the 30 s deadline: nothing written, each probe shows it
            next_watch()
        assert reflector.current() and reflector.lists == 1
        cluster.create_namespace("elsewhere")
        cluster.create_lease(Lease(name="l", namespace="elsewhere"))  # a write, not to a Node
        for _ in range(7):  # the store moved on: no probe is progress now, and no bookmark comes
            next_watch()
        _until(lambda: reflector.lists == 2)  # past the deadline: listed again
        assert reflector.current()
    finally:
        reflector.stop()


# -- what a list keeps ----------------------------------------------------------------------------------


def _two_nodes(
    value: str, keep: Callable[[NodeSnapshot], NodeSnapshot]
) -> tuple[MemoryCluster, Log, Reflector]:
    """Nodes ``a``, ``b`` holding ``value`` and ``other=1``; a started reflector keeping them by ``keep``."""
    cluster = MemoryCluster()
    for name in ("a", "b"):
        cluster.create_node(name, annotations={"register": value, "other": "1"})
    log = Log()
    reflector = Reflector(cluster, log, FAST, clock=WatchedClock(auto_advance=True), keep=keep)
    reflector.start()
    return cluster, log, reflector


def _parsed_afresh(node: NodeSnapshot) -> NodeSnapshot:
    """``node`` with new string objects, as every read off the wire has (the memory cluster's share)."""
    return attrs.evolve(node, annotations={k: "".join(list(v)) for k, v in node.annotations.items()})


def test_a_relist_keeps_the_objects_of_unchanged_nodes_and_the_unchanged_values_of_changed_ones() -> None:
    cluster, log, reflector = _two_nodes("x" * 100, _parsed_afresh)
    try:
        log.wait_for(("synced", False))
        before = reflector.items()
        with cluster._cond:  # the change and the request land together: the relist shows the change
            b1 = cluster.patch_node_annotations("b", {"other": "2"})
            reflector.relist()
        log.wait_for(("synced", True))
        after = reflector.items()
        assert after["a"] is before["a"]  # the list's own copy of it was let go
        assert after["b"].resource_version == b1.resource_version and after["b"].annotations["other"] == "2"
        assert after["b"].annotations["register"] is before["b"].annotations["register"]
        assert after["b"].name is before["b"].name
    finally:
        reflector.stop()


def _packed(node: NodeSnapshot) -> NodeSnapshot:
    """``node`` with its annotations kept compressed, as the scheduler's trim keeps them."""
    return attrs.evolve(node, annotations=PackedStrings(node.annotations))


def test_packed_annotations_compare_and_share_as_they_are_kept() -> None:
    """A relist keeps the object of a Node it shows unchanged (equal compressed values), and a changed
    Node, by a list or a watch event, holds the store's compressed objects of the values that did not
    change."""
    value = '[{"id":"GPU-0","count":10,"devmem":81920,"type":"NVIDIA-A100","health":true}]' * 4
    cluster, log, reflector = _two_nodes(value, _packed)

    def held(node: str, key: str) -> object:
        annotations = reflector.items()[node].annotations
        assert isinstance(annotations, PackedStrings)
        return annotations._items[key]

    try:
        log.wait_for(("synced", False))
        before = reflector.items()
        register = held("b", "register")
        assert isinstance(register, bytes)  # kept compressed
        with cluster._cond:  # the change and the request land together: the relist shows the change
            cluster.patch_node_annotations("b", {"other": "2"})
            reflector.relist()
        log.wait_for(("synced", True))
        after = reflector.items()
        assert after["a"] is before["a"]
        assert after["b"].annotations["other"] == "2" and after["b"].annotations["register"] == value
        assert held("b", "register") is register
        b = cluster.patch_node_annotations("b", {"other": "3"})  # a watch event
        _until(lambda: reflector.items()["b"].resource_version == b.resource_version)
        assert held("b", "register") is register and reflector.items()["b"].annotations["other"] == "3"
        changed = cluster.patch_node_annotations("b", {"register": value + " "})
        _until(lambda: reflector.items()["b"].resource_version == changed.resource_version)
        assert held("b", "register") is not register
        assert reflector.items()["b"].annotations["register"] == value + " "
    finally:
        reflector.stop()


class _RelistOnEveryPage(MemoryCluster):
    """Asks the reflector for a fresh list after every page it serves."""

    reflector: Reflector | None = None
    tickets: list[int]

    def list_nodes(self, **kwargs: Any) -> Any:
        page = super().list_nodes(**kwargs)
        if self.reflector is not None and kwargs.get("limit") == 2:
            self.tickets.append(self.reflector.relist())
        return page


def test_a_list_starts_over_for_a_fresh_list_asked_for_during_it_at_most_once() -> None:
    cluster = _RelistOnEveryPage()
    cluster.tickets = []
    for i in range(3):
        cluster.create_node(f"n{i}")
    log = Log()
    reflector = Reflector(cluster, log, ReflectorConfig(page_size=2), clock=WatchedClock(auto_advance=True))
    cluster.reflector = reflector
    log.hook = lambda call: reflector.stop(timeout=0) if call[0] == "synced" else None
    reflector.run()
    # Page 1 asked (ticket 1): the list started over and read both pages, asking twice more meanwhile.
    # It was handed over, serving ticket 1 but not the later ones, which a next list serves.
    assert cluster.tickets == [1, 2, 3] and cluster.request_count("list") == 3
    assert log.calls.count(("synced", False)) == 1 and len(log.calls) == 4  # 3 upserts, then synced
    assert reflector.lists == 1 and reflector.listing_due()
    assert reflector.current(1) and not reflector.current(2)


def test_a_driver_moving_the_clock_while_the_reflector_backs_off_never_strands_its_backoff() -> None:
    # As the harness and ``hami simulate`` do: move the fake clock only while the reflector says it backs
    # off. Its backoff's end and its wait come from one reading of the clock, so the wait ends when said.
    clock = BusyClock("hami-node-reflector")
    cluster = MemoryCluster()
    cluster.create_node("n1")
    cluster.fail_next(5, verb="list")
    reflector = Reflector(cluster, Log(), FAST, clock=clock, rand=lambda: 1.0)
    started = clock.monotonic()
    reflector.start()

    def drive() -> bool:
        if reflector.backing_off():
            clock.advance(0.25)
        return reflector.has_synced

    try:
        wait_for("the list after five backoffs, the clock moved only while backing off", drive, interval=0)
    finally:
        reflector.stop(timeout=10)
    assert clock.monotonic() - started == 0.5 + 1 + 2 + 4 + 8  # each backoff ended when it said
