"""Node bodies from the API server straight to the port's snapshots, reading only the fields kept.

A Node as the server sends it is mostly what no snapshot keeps (``managedFields``, ``spec``, conditions,
images); ``json.loads`` builds all of it as Python objects before ``wire.node_snapshot`` keeps a
few fields, for every Node of every list page, watch event and PATCH reply. Here msgspec decodes the
body into structs of just the kept fields and skips the rest unbuilt (a 500-Node page: 1.5 MB of JSON,
3.8 MiB of dicts and strings the other way). It answers only for a well-formed body of the expected
shape; for anything else (a wrong type anywhere it reads, an empty name, a body msgspec's grammar
refuses) it returns ``None`` and the caller takes the strict way (``json.loads`` and ``wire``), so every
error is the one that way gives.
"""

from __future__ import annotations

import msgspec

from hami_core.kube.port import NodeList, NodeSnapshot

__all__ = ["node_from_json", "node_list_from_json", "watch_event_from_json"]


class _Meta(msgspec.Struct):
    name: str = ""
    uid: str = ""
    resourceVersion: str = ""
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None


class _Status(msgspec.Struct):
    allocatable: dict[str, str] | None = None
    capacity: dict[str, str] | None = None


class _Node(msgspec.Struct):
    metadata: _Meta | None = None
    status: _Status | None = None


class _ListMeta(msgspec.Struct):
    resourceVersion: str = ""
    continue_: str | None = msgspec.field(default=None, name="continue")


class _List(msgspec.Struct):
    metadata: _ListMeta | None = None
    items: list[_Node] | None = None


class _Event(msgspec.Struct):
    type: str
    object: _Node


_NODE = msgspec.json.Decoder(_Node)
_LIST = msgspec.json.Decoder(_List)
_EVENT = msgspec.json.Decoder(_Event)
_NODE_EVENTS = frozenset({"ADDED", "MODIFIED", "DELETED"})


def _snapshot(node: _Node) -> NodeSnapshot | None:
    meta = node.metadata
    if meta is None or not meta.name:
        return None  # the strict way names the problem
    status = node.status
    return NodeSnapshot(
        name=meta.name,
        uid=meta.uid,
        resource_version=meta.resourceVersion,
        labels=meta.labels if meta.labels is not None else {},
        annotations=meta.annotations if meta.annotations is not None else {},
        allocatable=status.allocatable if status is not None and status.allocatable is not None else {},
        capacity=status.capacity if status is not None and status.capacity is not None else {},
    )


def node_from_json(data: bytes) -> NodeSnapshot | None:
    """A Node body as a snapshot; ``None``: take the strict way."""
    try:
        return _snapshot(_NODE.decode(data))
    except (msgspec.DecodeError, RecursionError):  # ValidationError is a DecodeError
        return None


def node_list_from_json(data: bytes) -> NodeList | None:
    """A NodeList body (one page); ``None``: take the strict way."""
    try:
        body = _LIST.decode(data)
    except (msgspec.DecodeError, RecursionError):
        return None
    items = []
    for item in body.items or ():
        snapshot = _snapshot(item)
        if snapshot is None:
            return None
        items.append(snapshot)
    meta = body.metadata or _ListMeta()
    return NodeList(
        items=tuple(items), resource_version=meta.resourceVersion, continue_token=meta.continue_ or None
    )


def watch_event_from_json(line: bytes) -> tuple[str, NodeSnapshot] | None:
    """An ADDED, MODIFIED or DELETED watch line as (type, snapshot); ``None``: take the strict way (which
    also reads BOOKMARK and ERROR events)."""
    try:
        event = _EVENT.decode(line)
    except (msgspec.DecodeError, RecursionError):
        return None
    if event.type not in _NODE_EVENTS:
        return None
    snapshot = _snapshot(event.object)
    return None if snapshot is None else (event.type, snapshot)
