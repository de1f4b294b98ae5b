"""The administrator's verbs the tests use, beside hami-core's cluster port.

A test sets a cluster up as its administrator: it creates, deletes and merge-patches Nodes, patches
their status (allocatable and capacity), creates namespaces and reads the Events written. No command of
hami-core does any of that (its clusters merge-patch a Node only to change its annotations), so on the
real API server these verbs live here, in ``AdminKubeCluster`` (hami-core's ``KubeCluster`` with the
same request plumbing and error mapping). ``MemoryCluster`` has them itself: the simulation sets up its
Nodes with them. ``Admin`` is the protocol both meet (checked by the type checker below), so
``tests/kube/test_contract.py`` holds the two to one behaviour.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from hami_core.kube.client import MERGE_PATCH, KubeCluster
from hami_core.kube.memory import MemoryCluster
from hami_core.kube.port import AdminCluster, NodeSnapshot
from hami_core.kube.wire import node_snapshot

__all__ = ["Admin", "AdminKubeCluster"]


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


if TYPE_CHECKING:  # both clusters meet the test's administrator protocol
    _MEMORY: type[Admin] = MemoryCluster
    _KUBE: type[Admin] = AdminKubeCluster
