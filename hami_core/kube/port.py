"""The cluster port: everything hami-core asks of Kubernetes, and nothing more (docs/architecture.md, "The
cluster port"). Objects cross it as small immutable snapshots, never as client model objects."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, Literal, Protocol

import attrs

__all__ = [
    "WATCH_READ_SLACK",
    "AdminCluster",
    "Cluster",
    "ClusterError",
    "Conflict",
    "Forbidden",
    "Gone",
    "Invalid",
    "Lease",
    "NodeList",
    "NodeOwners",
    "NodePatcher",
    "NodeSnapshot",
    "NotFound",
    "TooLarge",
    "Unavailable",
    "Untrusted",
    "WatchEvent",
    "WatchStream",
    "rv_number",
]


def rv_number(resource_version: str) -> int | None:
    """A resourceVersion as a number (etcd's revision, as kube-apiserver serves it), else ``None``: then
    it is only known to differ from another."""
    return int(resource_version) if resource_version.isascii() and resource_version.isdigit() else None


class ClusterError(Exception):
    """Any failure of a cluster call. ``status`` is the HTTP status when there was one."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class NotFound(ClusterError):
    """404: the object does not exist."""


class Conflict(ClusterError):
    """409: a stale resourceVersion precondition, or a create of an object that already exists."""


class Gone(ClusterError):
    """410: the requested resourceVersion is too old to watch from; relist."""


class TooLarge(Gone):
    """The resourceVersion asked for is newer than the server's store (504 "Too large resource version"):
    the store moved backwards (etcd restored or emptied). Like ``Gone``: list again, from the present."""


class Forbidden(ClusterError):
    """401/403: the caller's identity may not do this."""


class Invalid(ClusterError):
    """400/422: the server refused the request body."""


class Unavailable(ClusterError):
    """The API server could not be reached, timed out, or answered 5xx/429. Retry with backoff."""


class Untrusted(Unavailable):
    """The API server's TLS certificate could not be verified: a fault of the configuration, not of the
    network, so a daemon that meets it at start stops with one line."""


@attrs.frozen(kw_only=True)
class NodeSnapshot:
    """The parts of a Node that the protocol reads. Nothing else of the Node is kept."""

    name: str
    uid: str = ""
    resource_version: str = ""
    labels: Mapping[str, str] = attrs.field(factory=dict, hash=False)
    annotations: Mapping[str, str] = attrs.field(factory=dict, hash=False)
    #: ``status.allocatable`` as raw quantity strings.
    allocatable: Mapping[str, str] = attrs.field(factory=dict, hash=False)
    #: ``status.capacity`` as raw quantity strings (HAMi computes several vendors' devices from it).
    capacity: Mapping[str, str] = attrs.field(factory=dict, hash=False)


@attrs.frozen(kw_only=True)
class NodeOwners:
    """A Node and, for each annotation key, the field managers that own it (``managedFields``)."""

    node: NodeSnapshot
    #: annotation key -> the managers whose ``managedFields`` entry lists ``f:metadata.f:annotations.f:KEY``
    #: (empty for a key no entry lists).
    managers: Mapping[str, tuple[str, ...]] = attrs.field(factory=dict, hash=False)


@attrs.frozen(kw_only=True)
class NodeList:
    items: tuple[NodeSnapshot, ...]
    resource_version: str
    #: Token for the next page, or ``None`` on the last page.
    continue_token: str | None = None


@attrs.frozen(kw_only=True)
class WatchEvent:
    type: Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK"]
    resource_version: str
    #: ``None`` only for BOOKMARK.
    node: NodeSnapshot | None = None


#: A watch stream that receives nothing for its ``timeout_seconds`` plus this many seconds raises
#: ``Unavailable``: the server ends every watch at its timeout (and sends a BOOKMARK 2 s before, when
#: asked to), so that much silence is a connection that is gone without a FIN or RST (half-open).
WATCH_READ_SLACK = 5.0


class WatchStream(Protocol):
    """A watch in progress. Iterating raises ``Gone`` on a 410 (status or ERROR event), ``TooLarge``, and
    ``Unavailable`` on a dropped connection or after ``timeout_seconds + WATCH_READ_SLACK`` of silence;
    it ends when the server ends the watch."""

    def __iter__(self) -> Iterator[WatchEvent]: ...

    def close(self) -> None:
        """Stop the watch from another thread; the iterator then ends."""


@attrs.frozen(kw_only=True)
class Lease:
    """A ``coordination.k8s.io/v1`` Lease, as far as leader election needs it."""

    name: str
    namespace: str
    holder_identity: str | None = None
    lease_duration_seconds: int | None = None
    acquire_time: datetime | None = None
    renew_time: datetime | None = None
    lease_transitions: int = 0
    #: Empty for a Lease not yet created; an update sends it as a precondition.
    resource_version: str = ""


class Cluster(Protocol):
    """The operations the daemons need. Every method raises a ``ClusterError`` subclass on failure."""

    # Nodes: read
    def get_node(self, name: str) -> NodeSnapshot:
        """One Node; ``NotFound`` when there is none. The reporter reads its own Node with it; the
        scheduler never GETs a single Node (it lists and watches)."""

    def list_nodes(
        self, *, label_selector: str = "", limit: int = 500, continue_token: str | None = None
    ) -> NodeList: ...

    def watch_nodes(
        self,
        *,
        resource_version: str,
        label_selector: str = "",
        timeout_seconds: int = 300,
        allow_bookmarks: bool = True,
    ) -> WatchStream: ...

    # Nodes: write
    def patch_node_annotations(
        self,
        name: str,
        changes: Mapping[str, str | None],
        *,
        resource_version: str | None = None,
        field_manager: str | None = None,
    ) -> NodeSnapshot:
        """JSON merge patch of ``metadata.annotations``: a ``None`` value deletes that key, every other
        key is left alone. With ``resource_version`` the patch fails with ``Conflict`` when stale.
        ``field_manager`` is the name the server records in ``managedFields`` as the owner of each key
        the patch changes (``None``: the client's default, which the server derives from its User-Agent).
        """

    # Leases
    def get_lease(self, namespace: str, name: str) -> Lease: ...

    def create_lease(self, lease: Lease) -> Lease: ...

    def update_lease(self, lease: Lease) -> Lease:
        """Replace the Lease; ``Conflict`` when ``lease.resource_version`` is stale, ``Invalid`` when it is
        empty. A Lease that does not exist is created (the API server allows create-on-update for Leases,
        whatever the precondition), so only ``create_lease`` guarantees a single winner."""

    # Events
    def create_event(self, namespace: str, body: Mapping[str, Any]) -> None:
        """Create a core/v1 Event. The server requires an Event about a cluster-scoped object (a Node)
        to live in ``default``, and one about a namespaced object to live in that object's namespace."""


class NodePatcher:
    """``Cluster.patch_node_annotations`` of both clusters: one merge patch to their ``merge_patch_node``."""

    merge_patch_node: Callable[..., NodeSnapshot]

    def patch_node_annotations(
        self,
        name: str,
        changes: Mapping[str, str | None],
        *,
        resource_version: str | None = None,
        field_manager: str | None = None,
    ) -> NodeSnapshot:
        metadata: dict[str, Any] = {"annotations": dict(changes)}
        if resource_version is not None:
            metadata["resourceVersion"] = resource_version
        return self.merge_patch_node(name, {"metadata": metadata}, field_manager=field_manager)


class AdminCluster(Cluster, Protocol):
    """``Cluster`` plus what ``hami cleanup`` and ``hami doctor`` do and no daemon does (nor may, by its
    RBAC); what only the tests do is the harness's (``tests/harness/admin.py``)."""

    def node_annotation_managers(self, name: str) -> NodeOwners:
        """One Node with the field manager of each of its annotations, from its ``managedFields``."""

    def find_leases(self, name: str) -> tuple[Lease, ...]:
        """Every Lease called ``name``, in any namespace (sorted by namespace). ``hami cleanup`` and
        ``hami doctor`` find the scheduler's Lease with it wherever the chart put it."""

    def delete_lease(self, namespace: str, name: str) -> None:
        """Delete the Lease; ``NotFound`` when there is none. Only ``hami cleanup`` deletes one."""

    def proxy_get(
        self, namespace: str, service: str, path: str, query: Sequence[tuple[str, str]] = ()
    ) -> bytes:
        """``GET`` of ``path`` (with ``query``) on a Service's endpoint through the API server's service
        proxy (``/api/v1/namespaces/NS/services/NAME[:PORT]/proxy/PATH``; ``service`` is ``NAME`` or
        ``NAME:PORT``): the body as the endpoint sent it. ``hami doctor`` reaches the scheduler so, without
        a port-forward."""
