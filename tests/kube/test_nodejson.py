"""The Node bodies' fast reading gives what the strict way (``json.loads`` + ``wire``) gives, or declines.

Declining (``None``) sends the caller the strict way, whose errors are the ones tested in test_client.py,
so the fast reading must never answer differently from it: every body here is read both ways.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from hami_core.kube.nodejson import node_from_json, node_list_from_json, watch_event_from_json
from hami_core.kube.port import ClusterError, NodeList
from hami_core.kube.wire import node_snapshot, resource_version_of

FULL = {
    "kind": "Node",
    "apiVersion": "v1",
    "metadata": {
        "name": "n1",
        "uid": "u-1",
        "resourceVersion": "42",
        "creationTimestamp": "2026-11-30T13:14:57Z",
        "labels": {"kubernetes.io/hostname": "n1", "zone": "a"},
        "annotations": {
            "hami.io/node-nvidia-register": '[{"id":"GPU-0","devmem":32768}]',
            "note": 'caf\u00e9 \u2603 "quoted" \\ back',
        },
        "managedFields": [{"manager": "kubectl", "fieldsV1": {"f:metadata": {"f:labels": {".": {}}}}}],
    },
    "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]},
    "status": {
        "capacity": {"cpu": "64"},
        "allocatable": {"cpu": "64", "nvidia.com/gpu": "8"},
        "conditions": [{"type": "Ready", "status": "True"}],
        "images": [{"sizeBytes": 1e300}],
    },
}

VALID: list[dict[str, Any]] = [
    FULL,
    {"metadata": {"name": "bare"}},
    {"metadata": {"name": "nulls", "labels": None, "annotations": None}, "status": None},
    {"metadata": {"name": "no-alloc", "uid": ""}, "status": {"allocatable": None}},
    {"metadata": {"name": "empty-maps", "labels": {}, "annotations": {}}, "status": {"allocatable": {}}},
]

#: Shapes the strict way refuses: the fast reading must decline each.
MALFORMED: list[Any] = [
    {},
    {"metadata": None},
    {"metadata": {"name": ""}},
    {"metadata": {"name": 5}},
    {"metadata": {"name": "n", "uid": None}},
    {"metadata": {"name": "n", "resourceVersion": 7}},
    {"metadata": {"name": "n", "labels": {"a": 1}}},
    {"metadata": {"name": "n", "annotations": ["a"]}},
    {"metadata": {"name": "n"}, "status": {"allocatable": {"cpu": 64}}},
    {"metadata": {"name": "n"}, "status": "ready"},
    [],
]


def _strict(body: Any) -> Any:
    try:
        return node_snapshot(body)
    except (ClusterError, AttributeError) as exc:
        return exc


def _raw(obj: Any) -> bytes:
    return json.dumps(obj).encode()


@pytest.mark.parametrize("body", VALID, ids=lambda b: b["metadata"]["name"])
def test_a_node_reads_as_the_strict_way_reads_it(body: dict[str, Any]) -> None:
    fast = node_from_json(_raw(body))
    assert fast is not None
    assert fast == node_snapshot(json.loads(_raw(body)))
    assert dict(fast.annotations) == dict(node_snapshot(body).annotations)


@pytest.mark.parametrize("body", MALFORMED, ids=repr)
def test_a_malformed_node_is_left_to_the_strict_way(body: Any) -> None:
    assert node_from_json(_raw(body)) is None
    if isinstance(body, dict):
        assert isinstance(_strict(body), ClusterError)


@pytest.mark.parametrize(
    "data",
    [b"", b"{", b"nul", b'{"metadata": {"name": "n"}} x', b"NaN", b'{"metadata": {"name": "n", "x": NaN}}'],
)
def test_a_body_that_is_not_json_is_left_to_the_strict_way(data: bytes) -> None:
    assert node_from_json(data) is None


def test_a_repeated_key_keeps_the_last_one_as_json_loads_does() -> None:
    data = b'{"metadata": {"name": "a", "name": "b", "labels": {"k": "1", "k": "2"}}}'
    fast = node_from_json(data)
    assert fast is not None and fast == node_snapshot(json.loads(data))


def test_a_page_reads_as_the_strict_way_reads_it() -> None:
    page = {"kind": "NodeList", "metadata": {"resourceVersion": "99", "continue": "tok"}, "items": VALID}
    fast = node_list_from_json(_raw(page))
    assert fast == NodeList(
        items=tuple(node_snapshot(i) for i in VALID), resource_version="99", continue_token="tok"
    )
    last = node_list_from_json(_raw({"metadata": {"resourceVersion": "5", "continue": ""}, "items": None}))
    assert last == NodeList(items=(), resource_version="5", continue_token=None)
    assert resource_version_of(page, "NodeList") == "99"


@pytest.mark.parametrize(
    "page",
    [
        {"metadata": {"resourceVersion": "1"}, "items": [{"metadata": {"name": ""}}]},
        {"metadata": {"resourceVersion": "1"}, "items": [VALID[0], 5]},
        {"metadata": {"resourceVersion": "1"}, "items": {"a": VALID[0]}},
        {"metadata": {"resourceVersion": 1}, "items": []},
        {"metadata": {"resourceVersion": "1", "continue": 3}, "items": []},
        {"metadata": [], "items": []},
    ],
    ids=repr,
)
def test_a_malformed_page_is_left_to_the_strict_way(page: dict[str, Any]) -> None:
    assert node_list_from_json(_raw(page)) is None


@pytest.mark.parametrize("kind", ["ADDED", "MODIFIED", "DELETED"])
def test_a_node_event_reads_as_the_strict_way_reads_it(kind: str) -> None:
    assert watch_event_from_json(_raw({"type": kind, "object": FULL})) == (kind, node_snapshot(FULL))


@pytest.mark.parametrize(
    "line",
    [
        {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "9"}}},
        {"type": "ERROR", "object": {"kind": "Status", "code": 410, "message": "too old"}},
        {"type": "SURPRISE", "object": FULL},
        {"type": "ADDED", "object": {"metadata": {"name": ""}}},
        {"type": "ADDED", "object": []},
        {"type": 5, "object": FULL},
        {"object": FULL},
    ],
    ids=repr,
)
def test_other_watch_lines_are_left_to_the_strict_way(line: dict[str, Any]) -> None:
    assert watch_event_from_json(_raw(line)) is None
