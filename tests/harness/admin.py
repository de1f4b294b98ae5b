"""The administrator's verbs the tests use, beside hami-core's cluster port.

A test sets a cluster up as its administrator: it creates, deletes and merge-patches Nodes, patches
their status (allocatable and capacity), creates namespaces and reads the Events written. No command of
hami-core does any of that (its clusters merge-patch a Node only to change its annotations), so on the
real API server these verbs live here, in ``AdminKubeCluster`` (hami-core's ``KubeCluster`` with the
same request plumbing and error mapping). hami-core's ``MemoryCluster`` has them itself (the simulation
and the benchmarks set up their Nodes with them); what only the tests do to it (read its Events back,
inject faults) is this module's ``MemoryCluster``, its subclass. ``Admin`` is the protocol both meet
(checked by the type checker below), so ``tests/kube/test_contract.py`` holds the two to one behaviour.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

import attrs

from hami_core.kube import memory
from hami_core.kube.client import MERGE_PATCH, KubeCluster
from hami_core.kube.memory import MemoryWatch
from hami_core.kube.port import AdminCluster, Gone, NodeSnapshot, Unavailable
from hami_core.kube.wire import node_snapshot

__all__ = ["Admin", "AdminKubeCluster", "MemoryCluster"]


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


@attrs.define
class _Fault:
    """Next ``count`` calls matching ``verb`` (``None``: any) raise ``Unavailable``."""

    count: int
    verb: str | None


class MemoryCluster(memory.MemoryCluster):
    """hami-core's in-memory cluster with what only the tests do to it: read its Events back, inject
    faults (failed requests, dropped, half-open and forced-Gone watches, a store that moves backwards),
    compact its history, send bookmarks on demand, and read its resourceVersion and open watches."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        #: The ``fail_next`` calls still to fail requests.
        self._faults: list[_Fault] = []
        #: How many of the next watches fail with ``Gone`` (``force_gone``).
        self._forced_gone = 0

    def _request(self, verb: str, resource: str) -> None:
        super()._request(verb, resource)
        for fault in self._faults:
            if fault.verb is None or fault.verb == verb:
                fault.count -= 1
                if fault.count <= 0:
                    self._faults.remove(fault)
                raise Unavailable(f"{verb} {resource}: injected fault: server unavailable", status=503)

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
            for watch in self._watches:
                watch.silenced = True
            self._cond.notify_all()

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
