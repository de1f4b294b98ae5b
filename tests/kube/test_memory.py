"""What only the in-memory cluster has: its history window, bookmarks on demand, fault injection and
request counts. Its behaviour as a cluster is covered by the contract suite."""

from __future__ import annotations

import threading

import pytest

from hami_core.kube.memory import MemoryCluster, merge_patch
from hami_core.kube.port import Gone, Invalid, Unavailable, WatchEvent


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
    assert list(cluster.watch_nodes(resource_version=cluster.resource_version, timeout_seconds=1)) == []


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
    assert list(cluster.watch_nodes(resource_version=rv, timeout_seconds=1)) == []
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
