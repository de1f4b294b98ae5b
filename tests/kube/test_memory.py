"""What only the in-memory cluster has: its history window, bookmarks on demand, fault injection and
request counts. Its behaviour as a cluster is covered by the contract suite."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from harness.admin import MemoryCluster
from harness.poll import wait_for

from hami_core.clock import FakeClock
from hami_core.kube.memory import merge_patch
from hami_core.kube.port import (
    WATCH_READ_SLACK,
    ClusterError,
    Gone,
    Invalid,
    Unavailable,
    WatchEvent,
    rv_number,
)
from hami_core.scheduler.view import newer


def first(stream: object, count: int) -> list[WatchEvent]:
    events: list[WatchEvent] = []
    for event in stream:  # type: ignore[attr-defined]
        events.append(event)
        if len(events) >= count:
            break
    return events


def test_merge_patch_follows_rfc_7386() -> None:
    target = {"a": "b", "c": {"d": "e", "f": "g"}, "keep": [1, 2]}
    patch = {"a": "z", "c": {"f": None, "new": 1}, "keep": [3], "gone": None}
    assert merge_patch(target, patch) == {"a": "z", "c": {"d": "e", "new": 1}, "keep": [3]}
    assert target == {"a": "b", "c": {"d": "e", "f": "g"}, "keep": [1, 2]}  # not modified
    assert merge_patch({"a": 1}, ["x"]) == ["x"]
    assert merge_patch("text", {"a": None, "b": {"c": None}}) == {"b": {}}


def test_history_window_turns_older_watches_gone() -> None:
    cluster = MemoryCluster(history=3)
    node = cluster.create_node("n1")
    start = node.resource_version
    for i in range(4):  # four more writes: the create falls out of the window of three
        cluster.patch_node_annotations("n1", {"i": str(i)})
    with pytest.raises(Gone, match="too old resource version"):
        first(cluster.watch_nodes(resource_version=start, timeout_seconds=1), 1)
    recent = str(int(start) + 1)
    events = first(cluster.watch_nodes(resource_version=recent, timeout_seconds=1), 2)
    assert [e.node.annotations["i"] for e in events if e.node] == ["1", "2"]


def test_compact_forgets_history() -> None:
    cluster = MemoryCluster()
    before = cluster.resource_version
    cluster.create_node("n1")
    cluster.compact()
    with pytest.raises(Gone):
        first(cluster.watch_nodes(resource_version=before, timeout_seconds=1), 1)
    quiet = cluster.watch_nodes(resource_version=cluster.resource_version, timeout_seconds=1)
    assert [e.type for e in quiet] == ["BOOKMARK"]  # the one before the timeout, as the server sends


def test_bookmarks_on_demand_and_on_interval() -> None:
    cluster = MemoryCluster(bookmark_interval=None)
    rv = cluster.resource_version
    stream = cluster.watch_nodes(resource_version=rv, timeout_seconds=5)
    threading.Timer(0.1, cluster.send_bookmarks).start()
    (bookmark,) = first(stream, 1)
    assert bookmark.type == "BOOKMARK" and bookmark.node is None and bookmark.resource_version == rv
    stream.close()
    no_bookmarks = cluster.watch_nodes(resource_version=rv, timeout_seconds=1, allow_bookmarks=False)
    threading.Timer(0.1, cluster.send_bookmarks).start()
    assert list(no_bookmarks) == []

    ticking = MemoryCluster(bookmark_interval=0.05)
    ticking.create_node("n1")
    events = first(ticking.watch_nodes(resource_version=ticking.resource_version, timeout_seconds=5), 2)
    assert [e.type for e in events] == ["BOOKMARK", "BOOKMARK"]
    assert events[0].resource_version == ticking.resource_version


def test_watch_from_zero_starts_with_the_current_state() -> None:
    cluster = MemoryCluster()
    a = cluster.create_node("a", labels={"pool": "gpu"})
    cluster.create_node("b")
    events = first(cluster.watch_nodes(resource_version="0", label_selector="pool=gpu", timeout_seconds=1), 1)
    assert events == [WatchEvent(type="ADDED", resource_version=a.resource_version, node=a)]


def test_injected_failures_and_request_counts() -> None:
    cluster = MemoryCluster()
    cluster.create_node("n1")
    cluster.reset_request_counts()
    cluster.fail_next(2, verb="patch")
    for _ in range(2):
        with pytest.raises(Unavailable, match="injected"):
            cluster.patch_node_annotations("n1", {"a": "1"})
    cluster.list_nodes()  # other verbs are not affected
    assert cluster.patch_node_annotations("n1", {"a": "1"}).annotations == {"a": "1"}
    assert cluster.request_count("patch") == 3
    assert cluster.request_count("patch", "nodes") == 3
    assert cluster.request_count("get") == 0
    assert cluster.request_count("list") == 1
    cluster.patch_node_status("n1", {"example.com/gpu": "1"})
    assert cluster.request_count("patch", "nodes/status") == 1
    cluster.fail_next()
    with pytest.raises(Unavailable):
        cluster.list_nodes()


def test_dropped_and_forced_gone_watches() -> None:
    cluster = MemoryCluster()
    rv = cluster.resource_version
    stream = cluster.watch_nodes(resource_version=rv, timeout_seconds=5)
    threading.Timer(0.1, cluster.drop_watches).start()
    with pytest.raises(Unavailable, match="dropped"):
        list(stream)
    cluster.force_gone()
    with pytest.raises(Gone):
        list(cluster.watch_nodes(resource_version=rv, timeout_seconds=1))
    assert [e.type for e in cluster.watch_nodes(resource_version=rv, timeout_seconds=1)] == ["BOOKMARK"]
    assert cluster.open_watches == 0


def test_expired_continue_token_is_gone() -> None:
    cluster = MemoryCluster(continue_snapshots=1)
    for name in "abc":
        cluster.create_node(name)
    page = cluster.list_nodes(limit=1)
    cluster.create_node("d")
    cluster.list_nodes(limit=1)  # a newer snapshot evicts the first
    with pytest.raises(Gone, match="continue"):
        cluster.list_nodes(limit=1, continue_token=page.continue_token)
    with pytest.raises(Invalid, match="continue"):
        cluster.list_nodes(limit=1, continue_token="garbage")


def test_bad_input_is_invalid() -> None:
    cluster = MemoryCluster()
    with pytest.raises(Invalid, match="DNS subdomain"):
        cluster.create_node("Not_A_Name")
    with pytest.raises(Invalid, match="label"):
        cluster.create_node("n1", labels={"bad key!": "v"})
    cluster.create_node("n1")
    with pytest.raises(Invalid, match="strings"):
        cluster.merge_patch_node("n1", {"metadata": {"annotations": {"a": 1}}})
    with pytest.raises(Invalid, match="name"):
        cluster.merge_patch_node("n1", {"metadata": {"name": "other"}})


def test_concurrent_writers_get_distinct_resource_versions() -> None:
    cluster = MemoryCluster()
    cluster.create_node("n1")
    versions: list[str] = []
    lock = threading.Lock()

    def write(worker: int) -> None:
        for i in range(50):
            rv = cluster.patch_node_annotations("n1", {f"w{worker}": str(i)}).resource_version
            with lock:
                versions.append(rv)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(set(versions)) == 200
    assert cluster.get_node("n1").annotations == {f"w{w}": "49" for w in range(4)}


def test_a_watch_gets_a_bookmark_two_seconds_before_its_timeout_as_from_the_server() -> None:
    clock = FakeClock()
    cluster = MemoryCluster(bookmark_interval=None, clock=clock.monotonic)
    rv = cluster.resource_version
    stream = iter(cluster.watch_nodes(resource_version=rv, timeout_seconds=10))
    got: list[WatchEvent] = []
    reader = threading.Thread(target=lambda: got.extend(stream))
    reader.start()
    clock.advance(7.9)
    time.sleep(0.6)  # the watch polls its clock twice a second; nothing is due yet
    assert got == []
    clock.advance(0.1)
    _until(lambda: got)
    assert [(e.type, e.resource_version) for e in got] == [("BOOKMARK", rv)]
    clock.advance(2)
    reader.join(10)
    assert not reader.is_alive() and len(got) == 1


def test_a_silenced_watch_delivers_nothing_and_fails_after_its_read_timeout() -> None:
    clock = FakeClock()
    cluster = MemoryCluster(bookmark_interval=None, clock=clock.monotonic)
    silenced = iter(cluster.watch_nodes(resource_version=cluster.resource_version, timeout_seconds=10))
    cluster.silence_watches()
    fresh = cluster.watch_nodes(resource_version=cluster.resource_version, timeout_seconds=10)
    node = cluster.create_node("n1")
    assert next(iter(fresh)).node == node  # a connection opened afterwards works
    errors: list[BaseException] = []

    def read() -> None:
        try:
            list(silenced)
        except Unavailable as exc:
            errors.append(exc)

    reader = threading.Thread(target=read)
    reader.start()
    clock.advance(10 + WATCH_READ_SLACK - 0.5)  # past its timeout: a silent connection never ends by itself
    time.sleep(0.3)
    assert reader.is_alive() and not errors
    clock.advance(0.5)
    reader.join(10)
    assert not reader.is_alive()
    assert len(errors) == 1 and "read timed out" in str(errors[0])


def test_restart_empty_moves_the_store_backwards() -> None:
    cluster = MemoryCluster()
    for name in ("a", "b", "c"):
        cluster.create_node(name)
    before = int(cluster.resource_version)
    stream = cluster.watch_nodes(resource_version=str(before), timeout_seconds=30)
    errors: list[BaseException] = []
    reader = threading.Thread(target=lambda: errors.extend(_failure(stream)))
    reader.start()
    cluster.restart_empty()
    reader.join(10)
    assert len(errors) == 1 and isinstance(errors[0], Unavailable)  # the restart drops the connection
    assert cluster.list_nodes().items == ()
    assert int(cluster.list_nodes().resource_version) < before
    new = cluster.create_node("d")
    assert int(new.resource_version) < before
    # a watch from the old resourceVersion is accepted and delivers nothing, not even a bookmark
    assert list(cluster.watch_nodes(resource_version=str(before), timeout_seconds=1)) == []
    with pytest.raises(ValueError, match="below the current"):
        cluster.restart_empty(start_resource_version=before + 100)


def _failure(stream: Any) -> list[BaseException]:
    try:
        list(stream)
    except ClusterError as exc:
        return [exc]
    return []


def _until(predicate: Any, timeout: float = 10.0) -> None:
    wait_for("the in-memory cluster's state", predicate, timeout)


@pytest.mark.parametrize(
    ("value", "number"), [("0", 0), ("123", 123), ("", None), ("12a", None), ("\u00b2", None), ("-1", None)]
)
def test_a_resource_version_is_a_number_only_in_ascii_digits(value: str, number: int | None) -> None:
    """etcd's revisions, as kube-apiserver serves them; anything else (a superscript two is a digit to
    ``str.isdigit`` and not to ``int``) is only known to differ."""
    assert rv_number(value) == number
    assert newer("2", "10") is False and newer("\u00b2", "1") is True  # a non-number differs
