"""The cluster contract: one suite, run unchanged against the in-memory cluster and the real API server.

Where the two disagree, the in-memory cluster is wrong. Nodes are cluster-scoped, so every test names its
Nodes uniquely and selects them by a label of its own.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import attrs
import pytest
from harness.admin import AdminKubeCluster, MemoryCluster
from harness.poll import wait_for

from hami_core.kube.client import KubeCluster
from hami_core.kube.port import (
    Conflict,
    Gone,
    Invalid,
    Lease,
    NodeList,
    NodeSnapshot,
    NotFound,
    Unavailable,
    WatchEvent,
    WatchStream,
)
from hami_core.kube.reflector import Reflector, ReflectorConfig
from hami_core.protocol.codecs import MAX_ANNOTATION_BYTES

WAIT = 15.0


def node_name(prefix: str = "node") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def selector_of(labels: Mapping[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in labels.items())


def collect(cluster: Any, resource_version: str, selector: str, count: int) -> list[WatchEvent]:
    """The first ``count`` non-bookmark events of a watch from ``resource_version``."""
    stream = cluster.watch_nodes(
        resource_version=resource_version, label_selector=selector, timeout_seconds=int(WAIT)
    )
    watchdog = threading.Timer(WAIT, stream.close)
    watchdog.start()
    events: list[WatchEvent] = []
    try:
        for event in stream:
            if event.type != "BOOKMARK":
                events.append(event)
            if len(events) >= count:
                break
    finally:
        watchdog.cancel()
        stream.close()
    return events


def summary(events: list[WatchEvent]) -> list[tuple[str, str]]:
    return [(e.type, e.node.name if e.node else "") for e in events]


# -- writes ---------------------------------------------------------------------------------------------


def test_create_get_and_delete(cluster: Any, test_label: dict[str, str]) -> None:
    name = node_name()
    created = cluster.create_node(name, labels=test_label, annotations={"a": "1"})
    assert created.name == name and created.uid and created.resource_version
    assert created.labels == test_label and created.annotations == {"a": "1"}
    assert cluster.get_node(name) == created
    with pytest.raises(Conflict):
        cluster.create_node(name)
    cluster.delete_node(name)
    with pytest.raises(NotFound):
        cluster.get_node(name)
    with pytest.raises(NotFound):
        cluster.delete_node(name)
    with pytest.raises(NotFound):
        cluster.patch_node_annotations(name, {"a": "2"})


def test_merge_patch_null_deletes_one_key_and_leaves_the_rest(cluster: Any) -> None:
    name = node_name()
    cluster.create_node(name, annotations={"keep": "k", "drop": "d", "change": "1"})
    patched = cluster.patch_node_annotations(name, {"drop": None, "change": "2", "new": "n"})
    assert patched.annotations == {"keep": "k", "change": "2", "new": "n"}
    assert cluster.get_node(name).annotations == patched.annotations
    again = cluster.patch_node_annotations(name, {"absent": None})
    assert again.annotations == patched.annotations
    cluster.delete_node(name)


def test_each_annotation_is_owned_by_the_field_manager_that_last_changed_it(cluster: Any) -> None:
    name = node_name()
    cluster.create_node(name, annotations={"created": "c"})
    cluster.patch_node_annotations(
        name, {"ours": "1", "both": "1", "taken": "1"}, field_manager="hami-core-a"
    )
    # "both" written again unchanged keeps its owner; "taken" changed moves to the other manager
    cluster.patch_node_annotations(name, {"both": "1", "taken": "2", "theirs": "t"}, field_manager="other-b")
    cluster.patch_node_annotations(name, {"ours": None, "ours-again": "x"}, field_manager="hami-core-a")
    owners = cluster.node_annotation_managers(name)
    assert owners.node == cluster.get_node(name)
    assert dict(owners.managers) == {
        "created": ("OpenAPI-Generator",),  # the kubernetes client's default: its User-Agent's product
        "both": ("hami-core-a",),
        "taken": ("other-b",),
        "theirs": ("other-b",),
        "ours-again": ("hami-core-a",),
    }
    with pytest.raises(NotFound):
        cluster.node_annotation_managers(node_name("ghost"))
    cluster.delete_node(name)


def test_a_node_created_bare_has_no_owners_until_a_field_is_owned(cluster: Any) -> None:
    # No kubelet creates a Node so (it sets labels and status); an object without managedFields is not
    # tracked by an Update operation either, so its annotations have no manager on record.
    name = node_name()
    cluster.create_node(name)
    cluster.patch_node_annotations(name, {"a": "1"}, field_manager="hami-core-a")
    assert dict(cluster.node_annotation_managers(name).managers) == {"a": ()}
    cluster.delete_node(name)
    labelled = node_name()
    cluster.create_node(labelled, labels={"role": "gpu"})
    cluster.patch_node_annotations(labelled, {"a": "1"}, field_manager="hami-core-a")
    assert dict(cluster.node_annotation_managers(labelled).managers) == {"a": ("hami-core-a",)}
    cluster.delete_node(labelled)


def test_leases_are_found_by_name_in_every_namespace(cluster: Any, namespace: str) -> None:
    name = f"find-{uuid.uuid4().hex[:8]}"
    assert cluster.find_leases(name) == ()
    created = cluster.create_lease(_lease(namespace, name, "replica-1"))
    cluster.create_lease(_lease(namespace, f"{name}-other", "replica-1"))
    assert cluster.find_leases(name) == (created,)
    cluster.delete_lease(namespace, name)
    cluster.delete_lease(namespace, f"{name}-other")


def test_resource_version_changes_on_every_write(cluster: Any) -> None:
    name = node_name()
    seen = [cluster.create_node(name).resource_version]
    seen.append(cluster.patch_node_annotations(name, {"a": "1"}).resource_version)
    seen.append(cluster.patch_node_annotations(name, {"a": "2"}).resource_version)
    seen.append(cluster.patch_node_status(name, {"example.com/gpu": "2"}).resource_version)
    seen.append(cluster.patch_node_annotations(name, {"a": None}).resource_version)
    assert len(set(seen)) == len(seen)
    assert [int(rv) for rv in seen] == sorted(int(rv) for rv in seen)
    cluster.delete_node(name)


def test_stale_resource_version_precondition_is_a_conflict(cluster: Any) -> None:
    name = node_name()
    first = cluster.create_node(name)
    second = cluster.patch_node_annotations(name, {"a": "1"}, resource_version=first.resource_version)
    assert second.annotations == {"a": "1"}
    with pytest.raises(Conflict):
        cluster.patch_node_annotations(name, {"a": "2"}, resource_version=first.resource_version)
    assert cluster.get_node(name).annotations == {"a": "1"}
    third = cluster.patch_node_annotations(name, {"a": "3"}, resource_version=second.resource_version)
    assert third.annotations == {"a": "3"}
    cluster.delete_node(name)


def test_a_stale_precondition_refuses_a_delete_and_even_a_patch_that_changes_nothing(cluster: Any) -> None:
    """A cleanup's delete carries the version judged: any write since (a report) makes it a conflict, and
    nothing of it lands, not even a key it would add; the precondition is checked before the server
    finds the patch a no-op."""
    name = node_name()
    judged = cluster.create_node(name, annotations={"hs": "Requesting_1"})
    report = cluster.patch_node_annotations(name, {"hs": "Reported_2"})
    with pytest.raises(Conflict):
        cluster.patch_node_annotations(
            name, {"hs": None, "marker": "m"}, resource_version=judged.resource_version
        )
    after = cluster.get_node(name)
    assert after.annotations == {"hs": "Reported_2"} and after.resource_version == report.resource_version
    with pytest.raises(Conflict):
        cluster.patch_node_annotations(name, {"gone": None}, resource_version=judged.resource_version)
    assert cluster.get_node(name).resource_version == report.resource_version
    done = cluster.patch_node_annotations(
        name, {"hs": None, "marker": "m"}, resource_version=report.resource_version
    )
    assert done.annotations == {"marker": "m"}
    cluster.delete_node(name)


def test_annotations_beyond_the_size_limit_are_invalid(cluster: Any) -> None:
    name = node_name()
    cluster.create_node(name)
    with pytest.raises(Invalid):
        cluster.patch_node_annotations(name, {"big": "x" * MAX_ANNOTATION_BYTES})
    assert cluster.get_node(name).annotations == {}
    cluster.delete_node(name)


@pytest.mark.parametrize(
    "labels",
    [{"pool": "a,b"}, {"pool": "x" * 64}, {"bad key": "v"}, {"pool": "-edge"}],
)
def test_invalid_labels_are_refused(cluster: Any, labels: dict[str, str]) -> None:
    with pytest.raises(Invalid):
        cluster.create_node(node_name(), labels=labels)


def test_invalid_annotation_keys_are_refused(cluster: Any) -> None:
    name = node_name()
    cluster.create_node(name, annotations={"Example.COM/Mixed-Case": "fine"})
    with pytest.raises(Invalid):
        cluster.patch_node_annotations(name, {"not a key": "v"})
    cluster.delete_node(name)


def test_allocatable_lives_in_status_and_changes_only_through_the_status_subresource(cluster: Any) -> None:
    name = node_name()
    cluster.create_node(name)
    node = cluster.patch_node_status(name, {"example.com/gpu": "4", "cpu": "2"})
    assert node.allocatable == {"example.com/gpu": "4", "cpu": "2"}
    after_annotations = cluster.patch_node_annotations(name, {"a": "1"})
    assert after_annotations.allocatable == {"example.com/gpu": "4", "cpu": "2"}
    ignored = cluster.merge_patch_node(
        name, {"metadata": {"annotations": {"b": "2"}}, "status": {"allocatable": {"example.com/gpu": "9"}}}
    )
    assert ignored.annotations == {"a": "1", "b": "2"}
    assert ignored.allocatable == {"example.com/gpu": "4", "cpu": "2"}
    removed = cluster.patch_node_status(name, {"example.com/gpu": None})
    assert removed.allocatable == {"cpu": "2"}
    assert removed.annotations == {"a": "1", "b": "2"}
    cluster.delete_node(name)


def test_capacity_lives_in_status_beside_allocatable_and_is_read_back(cluster: Any) -> None:
    """HAMi computes several vendors' devices from ``status.capacity``, which may differ from the
    allocatable; both are read from every Node the cluster returns (get, list, watch, patch replies)."""
    name = node_name()
    cluster.create_node(name)
    node = cluster.patch_node_status(
        name, {"example.com/gpu": "2"}, capacity={"example.com/gpu": "4", "example.com/vcore": "400"}
    )
    assert (node.allocatable, node.capacity) == (
        {"example.com/gpu": "2"},
        {"example.com/gpu": "4", "example.com/vcore": "400"},
    )
    assert cluster.get_node(name).capacity == node.capacity
    listed = [n for n in cluster.list_nodes(limit=500).items if n.name == name]
    assert [n.capacity for n in listed] == [node.capacity]
    annotated = cluster.patch_node_annotations(name, {"a": "1"})
    assert annotated.capacity == node.capacity
    same = cluster.patch_node_status(name, {"example.com/gpu": "1"})
    assert same.capacity == {"example.com/gpu": "1", "example.com/vcore": "400"}, "capacity=None: the same"
    gone = cluster.patch_node_status(name, {}, capacity={"example.com/vcore": None})
    assert gone.capacity == {"example.com/gpu": "1"}
    cluster.delete_node(name)


def test_quantities_are_stored_in_canonical_form(cluster: Any) -> None:
    name = node_name()
    cluster.create_node(name)
    node = cluster.patch_node_status(
        name,
        {
            "example.com/a": "1000m",
            "example.com/b": "1e3",
            "example.com/c": "2k",
            "cpu": "0.5",
            "memory": "2048Ki",
        },
    )
    assert node.allocatable == {
        "example.com/a": "1",
        "example.com/b": "1e3",
        "example.com/c": "2k",
        "cpu": "500m",
        "memory": "2Mi",
    }
    with pytest.raises(Invalid):
        cluster.patch_node_status(name, {"example.com/gpu": "500m"})  # extended resources are integers
    with pytest.raises(Invalid):
        cluster.patch_node_status(name, {"example.com/gpu": "-1"})
    with pytest.raises(Invalid):
        cluster.patch_node_status(name, {"example.com/gpu": "four"})
    cluster.delete_node(name)


STORED_AS_WRITTEN_OR_NOT = {
    "+4": "+4",  # already canonical: the server keeps the text as given
    "4.": "4.",
    "007": "007",
    "1E3": "1E3",
    "1e0": "1e0",
    "1.5e7": "1.5e7",
    "8Ki": "8Ki",  # a multiple of 8: rewritten, to the same text
    "1e19": "10e18",  # decimal quantities are not capped at 2^63-1
    "1000E": "1",  # past "E" Go finds no suffix and writes none
    "12e2": "1200",
    "Ki": "0",
    " 2 ": "2",
}


def test_quantities_are_stored_exactly_as_the_api_server_stores_them(cluster: Any) -> None:
    name = node_name()
    cluster.create_node(name)
    given = {f"example.com/q{i}": text for i, text in enumerate(STORED_AS_WRITTEN_OR_NOT)}
    node = cluster.patch_node_status(name, given)
    assert node.allocatable == {key: STORED_AS_WRITTEN_OR_NOT[text] for key, text in given.items()}
    assert cluster.get_node(name).allocatable == node.allocatable
    for bad in ("\t2", "\u00a02", "1.5.5", "e-10"):
        with pytest.raises(Invalid):
            cluster.patch_node_status(name, {"example.com/bad": bad})
    cluster.delete_node(name)


# -- lists ----------------------------------------------------------------------------------------------


def test_pagination_serves_one_consistent_snapshot(cluster: Any, test_label: dict[str, str]) -> None:
    names = sorted(node_name() for _ in range(5))
    for name in names:
        cluster.create_node(name, labels=test_label)
    selector = selector_of(test_label)
    first: NodeList = cluster.list_nodes(label_selector=selector, limit=2)
    assert len(first.items) <= 2 and first.continue_token
    late = node_name("late")
    cluster.create_node(late, labels=test_label)
    seen = [node.name for node in first.items]
    token = first.continue_token
    while token:
        page = cluster.list_nodes(label_selector=selector, limit=2, continue_token=token)
        assert len(page.items) <= 2
        assert page.resource_version == first.resource_version
        seen.extend(node.name for node in page.items)
        token = page.continue_token
    assert seen == names  # sorted by name, each once, and the later Node is not in the snapshot
    fresh = cluster.list_nodes(label_selector=selector)
    assert sorted(node.name for node in fresh.items) == sorted([*names, late])
    assert fresh.continue_token is None
    for name in [*names, late]:
        cluster.delete_node(name)


def test_label_selectors_in_lists(cluster: Any, test_label: dict[str, str]) -> None:
    """Equality terms, ANDed: what is ever sent (the rest of the grammar is the real server's, unused)."""
    gpu, cpu = node_name("gpu"), node_name("cpu")
    cluster.create_node(gpu, labels={**test_label, "pool": "gpu", "zone": "a"})
    cluster.create_node(cpu, labels={**test_label, "pool": "cpu"})
    base = selector_of(test_label)

    def names(extra: str) -> list[str]:
        return sorted(n.name for n in cluster.list_nodes(label_selector=f"{base},{extra}").items)

    assert names("pool=gpu") == [gpu]
    assert names("pool==cpu") == [cpu]
    assert names(" pool = gpu , zone=a") == [gpu]
    assert names("pool=gpu,zone=b") == []
    assert names("pool=gpu,pool=cpu") == []
    assert sorted(n.name for n in cluster.list_nodes(label_selector=base).items) == sorted([gpu, cpu])
    with pytest.raises(Invalid):
        cluster.list_nodes(label_selector="pool=in valid")
    cluster.delete_node(gpu)
    cluster.delete_node(cpu)


def test_watch_delivers_changes_in_order_from_a_resource_version(
    cluster: Any, test_label: dict[str, str]
) -> None:
    name, other = node_name(), node_name()
    before = cluster.create_node(other, labels=test_label)
    start = cluster.list_nodes(label_selector=selector_of(test_label)).resource_version
    created = cluster.create_node(name, labels=test_label)
    modified = cluster.patch_node_annotations(name, {"a": "1"})
    status = cluster.patch_node_status(name, {"example.com/gpu": "1"})
    cluster.delete_node(name)
    events = collect(cluster, start, selector_of(test_label), 4)
    assert summary(events) == [("ADDED", name), ("MODIFIED", name), ("MODIFIED", name), ("DELETED", name)]
    assert [e.node for e in events[:3]] == [created, modified, status]
    deleted = events[3]
    assert deleted.node is not None and deleted.node.annotations == {"a": "1"}
    assert int(deleted.resource_version) > int(status.resource_version)
    assert deleted.node.resource_version == deleted.resource_version
    assert [e.resource_version for e in events] == sorted((e.resource_version for e in events), key=int)
    assert all(e.node is not None and e.node.name != before.name for e in events)
    cluster.delete_node(other)


def test_watch_from_an_old_resource_version_replays_everything_since(
    cluster: Any, test_label: dict[str, str]
) -> None:
    """A watch from a resourceVersion older than the latest replays every change since, in order, as long
    as the server's window still holds it (the API server's watch cache keeps at least 75 s of events).
    ``Gone`` needs a window that has moved on: see the in-memory history tests and the reflector tests.
    (Not resourceVersion "1": that replays only on a server younger than its window, which depends on
    when the session's server started.)"""
    before = cluster.list_nodes(label_selector=selector_of(test_label), limit=1).resource_version
    name = node_name()
    created = cluster.create_node(name, labels=test_label)
    for i in range(3):
        cluster.patch_node_annotations(name, {"a": str(i)})
    events = collect(cluster, before, selector_of(test_label), 4)
    assert summary(events) == [("ADDED", name)] + [("MODIFIED", name)] * 3
    assert events[0].node == created
    cluster.delete_node(name)


@pytest.mark.parametrize("resource_version", ["abc", "-5"])
def test_watch_from_an_unparsable_resource_version_fails_in_the_stream(
    cluster: Any, resource_version: str
) -> None:
    with pytest.raises(Unavailable, match="500"):
        list(cluster.watch_nodes(resource_version=resource_version, timeout_seconds=2))


def test_watch_with_a_label_selector_sees_objects_enter_and_leave(
    cluster: Any, test_label: dict[str, str]
) -> None:
    name = node_name()
    selector = selector_of({**test_label, "pool": "gpu"})
    created = cluster.create_node(name, labels={**test_label, "pool": "cpu"})
    start = created.resource_version
    cluster.merge_patch_node(name, {"metadata": {"labels": {"pool": "gpu"}}})  # starts matching
    cluster.patch_node_annotations(name, {"a": "1"})  # matches before and after
    left = cluster.merge_patch_node(name, {"metadata": {"labels": {"pool": "cpu"}}})  # stops matching
    cluster.patch_node_annotations(name, {"a": "2"})  # matches neither before nor after
    cluster.merge_patch_node(name, {"metadata": {"labels": {"pool": "gpu"}}})  # matches again
    cluster.delete_node(name)
    events = collect(cluster, start, selector, 5)
    assert summary(events) == [
        ("ADDED", name),
        ("MODIFIED", name),
        ("DELETED", name),
        ("ADDED", name),
        ("DELETED", name),
    ]
    gone = events[2].node
    assert gone is not None
    assert gone.labels["pool"] == "gpu"  # the last state that matched, at the version that left
    assert gone.annotations == {"a": "1"}
    assert gone.resource_version == left.resource_version
    assert events[3].node is not None and events[3].node.annotations == {"a": "2"}


def test_watch_ends_at_its_timeout(cluster: Any) -> None:
    rv = cluster.list_nodes(label_selector="hami-test=nothing-matches").resource_version
    stream = cluster.watch_nodes(
        resource_version=rv, label_selector="hami-test=nothing-matches", timeout_seconds=1
    )
    started = time.monotonic()
    events = [e for e in stream if e.type != "BOOKMARK"]
    assert events == []
    assert time.monotonic() - started < 10


def test_close_from_another_thread_ends_the_watch(cluster: Any) -> None:
    rv = cluster.list_nodes(label_selector="hami-test=nothing-matches").resource_version
    stream = cluster.watch_nodes(
        resource_version=rv, label_selector="hami-test=nothing-matches", timeout_seconds=60
    )
    timer = threading.Timer(0.5, stream.close)
    timer.start()
    started = time.monotonic()
    events = [e for e in stream if e.type != "BOOKMARK"]
    timer.join()
    assert events == []
    assert time.monotonic() - started < 10


# -- the reflector over both ---------------------------------------------------------------------------


class Recorder:
    """A reflector handler that logs every call."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str | None, str | None]] = []
        self._cond = threading.Condition()

    def _add(self, call: tuple[str, str | None, str | None]) -> None:
        with self._cond:
            self.calls.append(call)
            self._cond.notify_all()

    def on_upsert(self, old: NodeSnapshot | None, new: NodeSnapshot) -> None:
        self._add(("upsert", old.resource_version if old else None, new.name + "@" + new.resource_version))

    def on_delete(self, last: NodeSnapshot) -> None:
        self._add(("delete", last.name, None))

    def on_synced(self, *, relisted: bool) -> None:
        self._add(("synced", str(relisted), None))

    def wait_for(self, call: tuple[str, str | None, str | None]) -> int:
        """Wait until ``call`` was made; its index in the log."""
        with self._cond:
            assert self._cond.wait_for(lambda: call in self.calls, WAIT), f"never saw {call}: {self.calls}"
            return self.calls.index(call)


class _GoneStream:
    def __iter__(self) -> Iterator[WatchEvent]:
        raise Gone("watch nodes: too old resource version (injected by the test)", status=410)

    def close(self) -> None:
        pass


class Interposer:
    """Passes every call through to a cluster, except that a test can end the open watch, make the next
    watch ``Gone`` and hold the next list until released."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.gone_next = False
        self.list_gate = threading.Event()
        self.list_gate.set()
        self.list_waiting = threading.Event()
        self.current: WatchStream | None = None
        self.watches = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def list_nodes(self, **kwargs: Any) -> NodeList:
        if not self.list_gate.is_set():
            self.list_waiting.set()
            assert self.list_gate.wait(WAIT)
        result: NodeList = self.inner.list_nodes(**kwargs)
        return result

    def watch_nodes(self, **kwargs: Any) -> WatchStream:
        self.watches += 1
        if self.gone_next:
            self.gone_next = False
            return _GoneStream()
        self.current = self.inner.watch_nodes(**kwargs)
        return self.current


def test_reflector_relists_after_gone_without_losing_or_repeating_anything(
    cluster: Any, test_label: dict[str, str]
) -> None:
    a, b, c, d = (node_name(x) for x in "abcd")
    created = {name: cluster.create_node(name, labels=test_label) for name in (a, b, c)}
    proxy = Interposer(cluster)
    recorder = Recorder()
    reflector = Reflector(proxy, recorder, ReflectorConfig(label_selector=selector_of(test_label)))
    reflector.start()
    try:
        assert reflector.wait_for_sync(WAIT)
        first_sync = recorder.wait_for(("synced", "False", None))
        assert sorted(recorder.calls[:first_sync]) == sorted(
            ("upsert", None, f"{n.name}@{n.resource_version}") for n in created.values()
        )
        a1 = cluster.patch_node_annotations(a, {"x": "1"})
        recorder.wait_for(("upsert", created[a].resource_version, f"{a}@{a1.resource_version}"))

        # Lose the watch: the next one is Gone, and the relist waits until the world has moved on.
        proxy.list_gate.clear()
        proxy.gone_next = True
        assert proxy.current is not None
        proxy.current.close()
        assert proxy.list_waiting.wait(WAIT)
        mark = len(recorder.calls)
        b1 = cluster.patch_node_annotations(b, {"x": "1"})
        cluster.delete_node(c)
        d1 = cluster.create_node(d, labels=test_label)
        proxy.list_gate.set()
        recorder.wait_for(("synced", "True", None))
        after = recorder.calls[mark:]
        assert sorted(after[:-1], key=str) == sorted(
            [
                ("upsert", created[b].resource_version, f"{b}@{b1.resource_version}"),
                ("delete", c, None),
                ("upsert", None, f"{d}@{d1.resource_version}"),
            ],
            key=str,
        )
        # ... and it carries on watching from the new list.
        d2 = cluster.patch_node_annotations(d, {"y": "2"})
        recorder.wait_for(("upsert", d1.resource_version, f"{d}@{d2.resource_version}"))
        truth = {n.name: n for n in cluster.list_nodes(label_selector=selector_of(test_label)).items}
        assert reflector.items() == truth
        assert reflector.lists == 2
    finally:
        reflector.stop()
    for name in (a, b, d):
        cluster.delete_node(name)


class _RelistDuringFirstList:
    """Passes every call through, asking the reflector for a fresh list while it reads its first page."""

    def __init__(self, inner: Any, page_size: int) -> None:
        self.inner = inner
        self.page_size = page_size
        self.reflector: Reflector | None = None
        self.tickets: list[int] = []
        self.pages = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def list_nodes(self, **kwargs: Any) -> NodeList:
        result: NodeList = self.inner.list_nodes(**kwargs)
        if kwargs.get("limit") == self.page_size:  # a page of a full list, not the probe before a watch
            self.pages += 1
            if self.pages == 1 and self.reflector is not None:
                self.tickets.append(self.reflector.relist())  # a term starting during the first list
        return result


def test_a_fresh_list_asked_for_during_the_first_list_restarts_it_and_a_relist_keeps_the_nodes(
    cluster: Any, test_label: dict[str, str]
) -> None:
    names = [node_name(x) for x in "abcde"]
    created = {name: cluster.create_node(name, labels=test_label) for name in names}
    proxy = _RelistDuringFirstList(cluster, page_size=2)
    recorder = Recorder()
    reflector = Reflector(
        proxy, recorder, ReflectorConfig(label_selector=selector_of(test_label), page_size=2)
    )
    proxy.reflector = reflector
    reflector.start()
    try:
        synced = recorder.wait_for(("synced", "False", None))
        # The ticket asked for during the first page is served by the one list handed over: each Node
        # is delivered once; the list started over after its first page (1 page, then all 3).
        assert len(proxy.tickets) == 1 and reflector.current(proxy.tickets[0])
        assert sorted(recorder.calls[:synced]) == sorted(
            ("upsert", None, f"{n.name}@{n.resource_version}") for n in created.values()
        )
        assert reflector.lists == 1 and proxy.pages == 4
        held = reflector.items()

        changed = cluster.patch_node_annotations(names[0], {"x": "1"})
        recorder.wait_for(
            ("upsert", created[names[0]].resource_version, f"{names[0]}@{changed.resource_version}")
        )
        held[names[0]] = reflector.items()[names[0]]
        ticket = reflector.relist()
        recorder.wait_for(("synced", "True", None))
        assert reflector.current(ticket) and reflector.lists == 2
        # A Node the relist shows unchanged stays the very object the store held: one copy, not two.
        after = reflector.items()
        assert after == held
        assert all(after[name] is held[name] for name in names)
    finally:
        reflector.stop()
    for name in names:
        cluster.delete_node(name)


def test_reflector_resumes_after_its_watch_times_out_without_listing_again(
    cluster: Any, test_label: dict[str, str]
) -> None:
    recorder = Recorder()
    config = ReflectorConfig(label_selector=selector_of(test_label), watch_timeout=(1, 1))
    proxy = Interposer(cluster)
    reflector = Reflector(proxy, recorder, config)
    reflector.start()
    try:
        recorder.wait_for(("synced", "False", None))
        # the first watch times out after 1 s; wait for the next one
        wait_for("a second watch", lambda: proxy.watches >= 2, timeout=30, interval=0.05)
        name = node_name()
        node = cluster.create_node(name, labels=test_label)
        recorder.wait_for(("upsert", None, f"{name}@{node.resource_version}"))
        assert proxy.watches >= 2  # the first watch timed out; a later one saw the Node
        assert reflector.lists == 1
        assert reflector.names() == [name]
    finally:
        reflector.stop()
    cluster.delete_node(name)


# -- leases ---------------------------------------------------------------------------------------------


def _lease(namespace: str, name: str, holder: str, **changes: Any) -> Lease:
    now = datetime(2026, 11, 29, 18, 4, 5, 123456, tzinfo=UTC)
    return Lease(
        name=name,
        namespace=namespace,
        holder_identity=holder,
        lease_duration_seconds=15,
        acquire_time=now,
        renew_time=now,
        **changes,
    )


def test_lease_create_get_update_with_compare_and_swap(cluster: Any, namespace: str) -> None:
    with pytest.raises(NotFound):
        cluster.get_lease(namespace, "hami-scheduler")
    created = cluster.create_lease(_lease(namespace, "hami-scheduler", "replica-1"))
    assert created.resource_version
    assert created.holder_identity == "replica-1" and created.lease_duration_seconds == 15
    assert created.renew_time == datetime(2026, 11, 29, 18, 4, 5, 123456, tzinfo=UTC)
    assert cluster.get_lease(namespace, "hami-scheduler") == created
    with pytest.raises(Conflict):
        cluster.create_lease(_lease(namespace, "hami-scheduler", "replica-2"))
    renewed_at = datetime(2026, 11, 29, 18, 4, 7, 654321, tzinfo=UTC)
    renewed = cluster.update_lease(attrs.evolve(created, renew_time=renewed_at))
    assert renewed.renew_time == renewed_at and renewed.resource_version != created.resource_version
    with pytest.raises(Conflict):  # the stale version loses
        cluster.update_lease(attrs.evolve(created, holder_identity="replica-2", lease_transitions=1))
    assert cluster.get_lease(namespace, "hami-scheduler") == renewed
    with pytest.raises(Invalid):  # an update must carry the version it replaces
        cluster.update_lease(attrs.evolve(renewed, resource_version=""))
    # Leases allow create-on-update: replacing a missing one creates it, whatever the precondition.
    other = cluster.update_lease(attrs.evolve(created, name="other"))
    assert other.holder_identity == "replica-1" and other.resource_version != created.resource_version
    assert cluster.get_lease(namespace, "other") == other


def test_lease_delete_removes_it_and_a_missing_one_is_not_found(cluster: Any, namespace: str) -> None:
    created = cluster.create_lease(_lease(namespace, "gone-soon", "replica-1"))
    assert cluster.get_lease(namespace, "gone-soon") == created
    cluster.delete_lease(namespace, "gone-soon")
    with pytest.raises(NotFound):
        cluster.get_lease(namespace, "gone-soon")
    with pytest.raises(NotFound):
        cluster.delete_lease(namespace, "gone-soon")
    again = cluster.create_lease(_lease(namespace, "gone-soon", "replica-2"))  # the name is free again
    assert again.holder_identity == "replica-2"


def test_lease_create_race_has_exactly_one_winner(cluster: Any, namespace: str) -> None:
    contenders = 6
    barrier = threading.Barrier(contenders)
    outcomes: dict[str, str] = {}

    def contend(identity: str) -> None:
        barrier.wait()
        try:
            cluster.create_lease(_lease(namespace, "race", identity))
            outcomes[identity] = "won"
        except Conflict:
            outcomes[identity] = "conflict"

    threads = [threading.Thread(target=contend, args=(f"replica-{i}",)) for i in range(contenders)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT)
    winners = [identity for identity, outcome in outcomes.items() if outcome == "won"]
    assert len(outcomes) == contenders and len(winners) == 1
    assert cluster.get_lease(namespace, "race").holder_identity == winners[0]


@pytest.mark.parametrize(
    "changes",
    [
        {"lease_duration_seconds": 0},
        {"lease_duration_seconds": -5},
        {"lease_transitions": -1},
        {"name": "Not_A_DNS_Name"},
    ],
)
def test_invalid_leases_are_refused(cluster: Any, namespace: str, changes: dict[str, Any]) -> None:
    bad = attrs.evolve(_lease(namespace, "hami-scheduler", "replica-1"), **changes)
    for write in (cluster.create_lease, cluster.update_lease):  # update of a missing Lease creates it
        with pytest.raises(Invalid) as refused:
            write(bad)
        assert refused.value.status == 422
    held = cluster.create_lease(_lease(namespace, "held", "replica-1"))
    if "name" not in changes:
        with pytest.raises(Invalid) as refused:
            cluster.update_lease(attrs.evolve(held, **changes))
        assert refused.value.status == 422
    assert cluster.get_lease(namespace, "held") == held
    with pytest.raises(NotFound):
        cluster.get_lease(namespace, "hami-scheduler")


# -- events ---------------------------------------------------------------------------------------------


def test_nothing_is_created_in_a_namespace_that_does_not_exist(cluster: Any) -> None:
    missing = f"missing-{uuid.uuid4().hex[:8]}"
    with pytest.raises(NotFound, match="not found"):
        cluster.create_lease(_lease(missing, "hami-scheduler", "replica-1"))
    with pytest.raises(NotFound, match="not found"):
        cluster.update_lease(_lease(missing, "hami-scheduler", "replica-1"))
    pod_event = {
        "metadata": {"generateName": "p."},
        "reason": "R",
        "message": "m",
        "type": "Warning",
        "involvedObject": {"kind": "Pod", "name": "p", "namespace": missing},
    }
    with pytest.raises(NotFound, match="not found"):
        cluster.create_event(missing, pod_event)
    with pytest.raises(NotFound):
        cluster.get_lease(missing, "hami-scheduler")


def test_a_namespace_is_created_once_and_then_holds_leases(cluster: Any) -> None:
    made = f"ns-{uuid.uuid4().hex[:8]}"
    with pytest.raises(NotFound):
        cluster.create_lease(_lease(made, "hami-scheduler", "replica-1"))
    cluster.create_namespace(made)
    assert cluster.create_lease(_lease(made, "hami-scheduler", "replica-1")).namespace == made
    with pytest.raises(Conflict, match="already exists"):
        cluster.create_namespace(made)
    with pytest.raises(Invalid):
        cluster.create_namespace("Not_A_Namespace")


def test_events_are_stored(cluster: Any, namespace: str) -> None:
    reason = f"Reason{uuid.uuid4().hex[:6]}"
    body = {
        "metadata": {"generateName": "node-x."},
        "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": "node-x", "uid": "u-1"},
        "reason": reason,
        "message": "register annotation does not decode",
        "type": "Warning",
        "source": {"component": "hami-scheduler"},
        "count": 1,
    }
    cluster.create_event("default", body)  # a Node has no namespace: its Events live in "default"
    stored = [e for e in cluster.events("default") if e.get("reason") == reason]
    assert len(stored) == 1
    assert stored[0]["metadata"]["name"].startswith("node-x.")
    assert stored[0]["involvedObject"]["name"] == "node-x"
    with pytest.raises(Invalid, match="namespace"):
        cluster.create_event(namespace, body)
    with pytest.raises(Invalid):
        cluster.create_event("default", {"reason": reason, "involvedObject": {"kind": "Node", "name": "n"}})
    pod_event = {**body, "involvedObject": {"kind": "Pod", "name": "p", "namespace": namespace}}
    cluster.create_event(namespace, pod_event)
    assert [e["involvedObject"]["name"] for e in cluster.events(namespace)] == ["p"]


def test_a_patch_that_changes_nothing_writes_nothing(cluster: Any) -> None:
    name = node_name()
    cluster.create_node(name, annotations={"a": "1"})
    first = cluster.patch_node_annotations(name, {"a": "2"})
    same = cluster.patch_node_annotations(name, {"a": "2", "absent": None})
    assert same.resource_version == first.resource_version
    status = cluster.patch_node_status(name, {"example.com/gpu": "2"})
    again = cluster.patch_node_status(name, {"example.com/gpu": "2"})
    assert again.resource_version == status.resource_version
    cluster.delete_node(name)


def test_a_patch_that_only_removes_absent_keys_writes_nothing(
    cluster: Any, test_label: dict[str, str]
) -> None:
    """An emptied map is left out of the stored object, so deleting a key from a Node that has no
    annotations (or no allocatable) leaves it byte for byte the same: no new resourceVersion, no event."""
    name = node_name()
    created = cluster.create_node(name, labels=test_label)
    same = cluster.patch_node_annotations(name, {"absent": None})
    assert same.resource_version == created.resource_version and same.annotations == {}
    same_labels = cluster.merge_patch_node(name, {"metadata": {"labels": {"absent": None}}})
    assert same_labels.resource_version == created.resource_version
    same_status = cluster.patch_node_status(name, {"example.com/gpu": None})
    assert same_status.resource_version == created.resource_version and same_status.allocatable == {}
    written = cluster.patch_node_annotations(name, {"a": "1"})
    events = collect(cluster, created.resource_version, selector_of(test_label), 1)
    assert summary(events) == [("MODIFIED", name)]
    assert events[0].resource_version == written.resource_version
    cluster.delete_node(name)


# -- faults the reflector must see through (spec 5b), reproduced on both ---------------------------------


@pytest.fixture(params=["memory", "apiserver"])
def silenceable(request: pytest.FixtureRequest) -> Iterator[tuple[Any, Any, Callable[[], None]]]:
    """(the admin's cluster, the reflector's cluster, a way to make the reflector's open connections go
    silent): in memory ``silence_watches``; on the real server a proxy freezing the open connections."""
    if request.param == "memory":
        memory = MemoryCluster()
        yield memory, memory, memory.silence_watches
        return
    from urllib.parse import urlsplit

    from harness.tcpproxy import TcpProxy

    server = request.getfixturevalue("apiserver")
    url = urlsplit(server.url)
    proxy = TcpProxy(url.hostname or "127.0.0.1", url.port or 443)
    proxy.start()
    config = json.loads(Path(server.kubeconfig("admin")).read_text())
    config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{proxy.port}"
    path = Path(server.kubeconfig("admin")).with_name(f"proxy-{proxy.port}.kubeconfig")
    path.write_text(json.dumps(config))
    admin = AdminKubeCluster.from_kubeconfig(server.kubeconfig("admin"))
    through = KubeCluster.from_kubeconfig(str(path), request_timeout=5.0, connect_timeout=2.0)
    try:

        def freeze() -> None:
            assert proxy.freeze() >= 1

        yield admin, through, freeze
    finally:
        through.close()
        admin.close()
        proxy.cut()


def test_a_quiet_watch_keeps_the_view_current_without_listing_again(
    cluster: Any, test_label: dict[str, str]
) -> None:
    """Nothing changes in the selected Nodes: each 3 s watch still shows progress (the server's bookmark
    before its timeout, after the reflector's probe; or the probe itself), so a view that must show
    progress every 8 s stays current for 20 s without a second list."""
    config = ReflectorConfig(
        label_selector=selector_of(test_label), watch_timeout=(3, 3), progress_deadline=8
    )
    reflector = Reflector(cluster, Recorder(), config)
    reflector.start()
    try:
        assert reflector.wait_for_sync(WAIT)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            assert reflector.current(), reflector.view_state()
            time.sleep(0.2)
        assert reflector.lists == 1 and reflector.probes >= 4
    finally:
        reflector.stop()


def test_reflector_replaces_a_silent_watch_and_lists_what_it_missed(
    silenceable: tuple[Any, Any, Callable[[], None]], test_label: dict[str, str]
) -> None:
    admin, cluster, silence = silenceable
    recorder = Recorder()
    # a 3 s watch: its read timeout is 3 + 5 s, so a silent one fails within 8 s of its last byte
    config = ReflectorConfig(label_selector=selector_of(test_label), watch_timeout=(3, 3))
    reflector = Reflector(cluster, recorder, config)
    reflector.start()
    name = node_name("missed")
    try:
        recorder.wait_for(("synced", "False", None))
        silence()
        missed: NodeSnapshot = admin.create_node(name, labels=test_label)

        def replaced() -> bool:
            return reflector.snapshot(name) == missed

        wait_for("the silent watch to be replaced", replaced, timeout=60, interval=0.1)
        assert recorder.wait_for(("synced", "True", None))  # by a list: the gap is closed by one
        assert reflector.view_state().stale_count >= 1 and reflector.current()
    finally:
        reflector.stop()
        admin.delete_node(name)


@pytest.fixture(params=["memory", "apiserver"])
def rewindable(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Any, Callable[[], None]]]:
    """(a cluster, a way to restart its API server on an empty etcd): in memory ``restart_empty``; on the
    real server one of the test's own (the session's is shared), ``restart_on_empty_etcd``."""
    if request.param == "memory":
        memory = MemoryCluster()
        yield memory, memory.restart_empty
        return
    from harness.apiserver import start_apiserver, stop_apiserver
    from harness.fixtures import binaries_or_fail

    server = start_apiserver(tmp_path_factory.mktemp("rewind"), bin_dir=binaries_or_fail(), reporter_nodes=())
    kube = AdminKubeCluster.from_kubeconfig(server.kubeconfig("admin"))
    try:
        yield kube, server.restart_on_empty_etcd
    finally:
        kube.close()
        stop_apiserver(server)


def test_reflector_lists_again_when_the_store_moved_backwards(
    rewindable: tuple[Any, Callable[[], None]], test_label: dict[str, str]
) -> None:
    cluster, restart_empty = rewindable
    recorder = Recorder()
    reflector = Reflector(cluster, recorder, ReflectorConfig(label_selector=selector_of(test_label)))
    names = {x: node_name(x) for x in ("gone", "again", "new")}
    for x in ("gone", "again"):
        cluster.create_node(names[x], labels=test_label)
    for i in range(60):  # the store moves on, well past what an empty one reaches again
        cluster.patch_node_annotations(names["gone"], {"n": str(i)})
    reflector.start()
    try:
        recorder.wait_for(("synced", "False", None))
        seen = int(reflector.resource_version)
        old = reflector.snapshot(names["again"])
        restart_empty()
        again = _retrying(lambda: cluster.create_node(names["again"], labels=test_label))
        new = cluster.create_node(names["new"], labels=test_label)
        assert int(new.resource_version) < seen
        expected = {names["again"]: again, names["new"]: new}
        wait_for("a view of the empty store", lambda: reflector.items() == expected, timeout=60, interval=0.1)
        assert old is not None and old.uid != again.uid
        assert reflector.store_rewinds >= 1 and reflector.current()
    finally:
        reflector.stop()


def _retrying(call: Callable[[], Any], timeout: float = 30.0) -> Any:
    """The first calls after a restart may meet a connection the restart closed: try again."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return call()
        except Unavailable:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)
