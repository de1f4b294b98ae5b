"""The administrator's verbs the tests use, beside hami-core's cluster port.

A test sets a cluster up as its administrator: it creates, deletes and merge-patches Nodes, patches
their status (allocatable and capacity), creates namespaces and reads the Events written. No command of
hami-core does any of that (its clusters merge-patch a Node only to change its annotations), so on the
real API server these verbs live here, in ``AdminKubeCluster`` (hami-core's ``KubeCluster`` with the
same request plumbing and error mapping). hami-core's ``MemoryCluster`` has the Node verbs itself (the
simulation and the benchmarks set up their Nodes with them) but is only a ``Cluster``: what only the
tests do with it (the ``AdminCluster`` verbs of ``hami cleanup`` and ``hami doctor``, with the
annotations' field managers they read; reading its Events back; faults) is this module's
``MemoryCluster``, its subclass. ``Admin`` is the protocol both meet (checked by the type checker below),
so ``tests/kube/test_contract.py`` holds the two to one behaviour.
"""

from __future__ import annotations

import copy
import weakref
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from hami_core.kube import memory
from hami_core.kube.client import MERGE_PATCH, KubeCluster
from hami_core.kube.memory import MemoryWatch
from hami_core.kube.port import (
    WATCH_READ_SLACK,
    AdminCluster,
    Gone,
    Lease,
    NodeOwners,
    NodeSnapshot,
    NotFound,
    Unavailable,
)
from hami_core.kube.wire import lease_from_json, node_owners, node_snapshot

__all__ = ["DEFAULT_FIELD_MANAGER", "Admin", "AdminKubeCluster", "MemoryCluster"]

Json = dict[str, Any]


class Admin(AdminCluster, Protocol):
    """``AdminCluster`` plus what only the tests do."""

    def create_node(
        self,
        name: str,
        *,
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
    ) -> NodeSnapshot: ...

    def delete_node(self, name: str) -> None: ...

    def merge_patch_node(self, name: str, patch: Mapping[str, Any]) -> NodeSnapshot:
        """One JSON merge patch of the Node itself (labels, annotations; the server ignores status
        changes here); ``metadata.resourceVersion`` in ``patch`` is a precondition."""
        ...

    def patch_node_status(
        self,
        name: str,
        allocatable: Mapping[str, str | None],
        *,
        capacity: Mapping[str, str | None] | None = None,
    ) -> NodeSnapshot:
        """Merge patch of ``status.allocatable`` and ``status.capacity`` through the status subresource;
        ``capacity=None`` patches the capacity with the same changes as the allocatable."""
        ...

    def create_namespace(self, name: str) -> None:
        """Create a namespace (Leases and Events need theirs to exist); ``Conflict`` when it exists."""
        ...

    def events(self, namespace: str) -> list[dict[str, Any]]:
        """The Events of ``namespace`` as raw JSON."""
        ...


class AdminKubeCluster(KubeCluster):
    """``KubeCluster`` with the test's administrator verbs (``Admin``)."""

    def create_node(
        self,
        name: str,
        *,
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
    ) -> NodeSnapshot:
        metadata: dict[str, Any] = {"name": name}
        if labels:
            metadata["labels"] = dict(labels)
        if annotations:
            metadata["annotations"] = dict(annotations)
        body = {"apiVersion": "v1", "kind": "Node", "metadata": metadata}
        return node_snapshot(self._call(f"create node {name!r}", self._core.create_node, body))

    def delete_node(self, name: str) -> None:
        self._call(f"delete node {name!r}", self._core.delete_node, name)

    def patch_node_status(
        self,
        name: str,
        allocatable: Mapping[str, str | None],
        *,
        capacity: Mapping[str, str | None] | None = None,
    ) -> NodeSnapshot:
        changes = dict(allocatable)
        patch = {
            "status": {"allocatable": changes, "capacity": changes if capacity is None else dict(capacity)}
        }
        action = f"patch node status {name!r}"
        return node_snapshot(
            self._call(action, self._core.patch_node_status, name, patch, _content_type=MERGE_PATCH)
        )

    def create_namespace(self, name: str) -> None:
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        self._call(f"create namespace {name!r}", self._core.create_namespace, body)

    def events(self, namespace: str) -> list[dict[str, Any]]:
        body = self._call(f"list events in {namespace!r}", self._core.list_namespaced_event, namespace)
        return list(body.get("items") or [])


#: The manager the real API server records for a write without ``fieldManager`` from the kubernetes
#: client (the product of its User-Agent, ``OpenAPI-Generator/<version>/python``).
DEFAULT_FIELD_MANAGER = "OpenAPI-Generator"


def _owned(entries: list[Json], old: Json | None, new: Json, manager: str) -> list[Json]:
    """The ``managedFields`` the API server records, for labels and annotations, when ``manager`` creates
    the object ``new`` (``old`` is ``None``) or merge-patches ``old`` (owned as ``entries``) into it: a
    changed key moves to the writer, an unchanged one keeps its owner, a deleted one leaves every entry;
    an object created with neither is never tracked."""
    meta = new["metadata"]
    new_ann = meta.get("annotations") or {}
    if old is None:
        fields: Json = {}
        for part in ("labels", "annotations"):
            if meta.get(part):
                fields[f"f:{part}"] = {".": {}, **{f"f:{key}": {} for key in sorted(meta[part])}}
        return [_entry(manager, fields)] if fields else []
    entries = copy.deepcopy(entries)
    if not entries:
        return []
    old_ann = old["metadata"].get("annotations") or {}
    changed = {key for key, value in new_ann.items() if old_ann.get(key) != value}
    for entry in entries:
        owned = entry["fieldsV1"].get("f:metadata", {}).get("f:annotations", {})
        for field in [f for f in owned if f != "."]:
            key = field[2:]
            if key not in new_ann or (key in changed and entry["manager"] != manager):
                del owned[field]
    if changed:
        mine = next((e for e in entries if e["manager"] == manager), None)
        if mine is None:
            mine = _entry(manager, {})
            entries.append(mine)
        owned = mine["fieldsV1"].setdefault("f:metadata", {}).setdefault("f:annotations", {})
        owned.update({f"f:{key}": {} for key in sorted(changed)})
    return [e for e in entries if _has_fields(e["fieldsV1"])]


def _entry(manager: str, metadata_fields: Json) -> Json:
    return {
        "manager": manager,
        "operation": "Update",
        "apiVersion": "v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:metadata": metadata_fields},
    }


def _has_fields(fields: Json) -> bool:
    """Prune an emptied annotations map; True when the entry still owns anything."""
    metadata = fields.get("f:metadata", {})
    if metadata.get("f:annotations") == {}:
        del metadata["f:annotations"]
    if metadata == {}:
        fields.pop("f:metadata", None)
    return bool(fields)


@attrs.define
class _Fault:
    """Next ``count`` calls matching ``verb`` (``None``: any) raise ``Unavailable``."""

    count: int
    verb: str | None


class MemoryCluster(memory.MemoryCluster):
    """hami-core's in-memory cluster with what only the tests do with it: the ``AdminCluster`` verbs (who
    owns each annotation, find and delete Leases, a service proxy that finds no Service), read its Events
    back, inject faults (failed requests, dropped, half-open and forced-Gone watches, a store that moves
    backwards), compact its history, send bookmarks on demand, and read its resourceVersion and open
    watches."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        #: Each Node's ``managedFields``, kept beside the object, which hami-core's cluster keeps without.
        self._managed: dict[str, list[Json]] = {}
        #: The ``fail_next`` calls still to fail requests.
        self._faults: list[_Fault] = []
        #: How many of the next watches fail with ``Gone`` (``force_gone``).
        self._forced_gone = 0
        #: The watches ``silence_watches`` made half-open, and each watch's read timeout (a client's).
        self._silenced: weakref.WeakSet[MemoryWatch] = weakref.WeakSet()
        self._read_timeouts: weakref.WeakKeyDictionary[MemoryWatch, float | None] = (
            weakref.WeakKeyDictionary()
        )

    def _request(self, verb: str, resource: str) -> None:
        super()._request(verb, resource)
        for fault in self._faults:
            if fault.verb is None or fault.verb == verb:
                fault.count -= 1
                if fault.count <= 0:
                    self._faults.remove(fault)
                raise Unavailable(f"{verb} {resource}: injected fault: server unavailable", status=503)

    def create_node(
        self,
        name: str,
        *,
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
    ) -> NodeSnapshot:
        with self._cond:
            node = super().create_node(name, labels=labels, annotations=annotations)
            self._managed[name] = _owned([], None, self._nodes[name], DEFAULT_FIELD_MANAGER)
            return node

    def merge_patch_node(
        self, name: str, patch: Mapping[str, Any], *, field_manager: str | None = None
    ) -> NodeSnapshot:
        with self._cond:
            before = self._nodes.get(name)
            node = super().merge_patch_node(name, patch, field_manager=field_manager)
            after = self._nodes[name]
            if after is not before:  # a patch that changes nothing is no write
                manager = field_manager or DEFAULT_FIELD_MANAGER
                self._managed[name] = _owned(self._managed.get(name, []), before, after, manager)
            return node

    def node_annotation_managers(self, name: str) -> NodeOwners:
        with self._cond:
            self._request("get", "nodes")
            raw = self._existing(name, "get")
            return node_owners(
                {**raw, "metadata": {**raw["metadata"], "managedFields": self._managed.get(name)}}
            )

    def find_leases(self, name: str) -> tuple[Lease, ...]:
        with self._cond:
            self._request("list", "leases")
            return tuple(lease_from_json(raw) for (ns, n), raw in sorted(self._leases.items()) if n == name)

    def delete_lease(self, namespace: str, name: str) -> None:
        with self._cond:
            self._request("delete", "leases")
            if self._leases.pop((namespace, name), None) is None:
                raise NotFound(f"delete lease {namespace}/{name}: leases {name!r} not found", status=404)

    def proxy_get(
        self, namespace: str, service: str, path: str, query: Sequence[tuple[str, str]] = ()
    ) -> bytes:
        with self._cond:
            self._request("get", "services/proxy")
            raise NotFound(
                f"get {path} of service {namespace}/{service} through the API server's proxy: services "
                f"{service.partition(':')[0]!r} not found",
                status=404,
            )

    def watch_nodes(
        self,
        *,
        resource_version: str,
        label_selector: str = "",
        timeout_seconds: int = 300,
        allow_bookmarks: bool = True,
    ) -> MemoryWatch:
        watch = super().watch_nodes(
            resource_version=resource_version,
            label_selector=label_selector,
            timeout_seconds=timeout_seconds,
            allow_bookmarks=allow_bookmarks,
        )
        with self._cond:
            self._read_timeouts[watch] = timeout_seconds + WATCH_READ_SLACK if timeout_seconds > 0 else None
            if self._forced_gone > 0 and watch.error is None:
                self._forced_gone -= 1
                forced = f"watch nodes: too old resource version: {resource_version} (forced)"
                watch.error = Gone(forced, status=410)
        return watch

    def _drop(self) -> None:
        """Every open watch fails as a dropped connection does. Lock held."""
        for watch in self._watches:
            watch.error = Unavailable("watch nodes: connection dropped (injected)")
        self._cond.notify_all()

    def fail_next(self, count: int = 1, *, verb: str | None = None) -> None:
        """Make the next ``count`` requests (of the API server's ``verb`` only, when given) raise
        ``Unavailable``."""
        with self._cond:
            self._faults.append(_Fault(count, verb))

    def drop_watches(self) -> None:
        """Break every open watch: its iteration raises ``Unavailable``, like a dropped connection."""
        with self._cond:
            self._drop()

    def silence_watches(self) -> None:
        """The watches open now go half-open (no FIN or RST): each sends nothing more and raises
        ``Unavailable`` after ``timeout_seconds`` + ``WATCH_READ_SLACK`` of silence, as a client's read
        timeout does. Watches opened afterwards work."""
        with self._cond:
            self._silenced.update(self._watches)
            self._cond.notify_all()

    def _stalled(self, watch: MemoryWatch) -> bool:
        """A silenced watch delivers nothing and fails as the client's read would after its read timeout;
        True once it was closed."""
        if watch not in self._silenced:
            return False
        read_timeout = self._read_timeouts.get(watch)
        while not watch._closed:
            if read_timeout is not None and self._clock() - watch._last_sent >= read_timeout:
                raise Unavailable(
                    f"watch nodes: read timed out after {read_timeout:g}s of silence "
                    "(connection half-open, injected)"
                )
            self._cond.wait(0.05 if read_timeout is None else min(0.05, read_timeout))
        return True

    def restart_empty(self, start_resource_version: int = 1) -> None:
        """The API server restarted on an empty (or old) etcd: Nodes, Leases, Events and the history are
        gone, watches drop, resourceVersions restart after ``start_resource_version``. Namespaces stay."""
        with self._cond:
            if start_resource_version >= self._rv:
                raise ValueError(
                    f"restart_empty: start_resource_version {start_resource_version} must be below the "
                    f"current {self._rv} (the store moves backwards)"
                )
            self._nodes.clear()
            self._managed.clear()
            self._snapshots.clear()
            self._leases.clear()
            self._events.clear()
            self._history.clear()
            self._list_snapshots.clear()
            self._rv = self._oldest = start_resource_version
            self._drop()

    def force_gone(self, count: int = 1) -> None:
        """Make the next ``count`` watches fail with ``Gone`` whatever their resourceVersion."""
        with self._cond:
            self._forced_gone += count

    def compact(self) -> None:
        """Forget the watch history, as the server's watch cache moving past every change: ``Gone``."""
        with self._cond:
            self._history.clear()
            self._oldest = self._rv
            self._list_snapshots.clear()

    def send_bookmarks(self) -> None:
        """Make every open watch that allows bookmarks send one now, at the current resourceVersion."""
        with self._cond:
            for watch in self._watches:
                watch.bookmark_due = True
            self._cond.notify_all()

    def reset_request_counts(self) -> None:
        with self._cond:
            self._requests.clear()

    def events(self, namespace: str | None = None) -> list[dict[str, Any]]:
        """The Events created so far (copies), optionally only those of ``namespace``."""
        with self._cond:
            return [
                copy.deepcopy(event)
                for event in self._events
                if namespace is None or event["metadata"]["namespace"] == namespace
            ]

    @property
    def resource_version(self) -> str:
        with self._cond:
            return str(self._rv)

    @property
    def open_watches(self) -> int:
        with self._cond:
            return len(self._watches)


if TYPE_CHECKING:  # both clusters meet the test's administrator protocol
    _MEMORY: type[Admin] = MemoryCluster
    _KUBE: type[Admin] = AdminKubeCluster
