"""An in-memory cluster that behaves like kube-apiserver for the daemons' port and the Node verbs that set
a cluster up, for fast tests, the simulation and the benchmarks (docs/architecture.md, "The cluster port")."""

from __future__ import annotations

import bisect
import copy
import itertools
import math
import threading
import uuid
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC
from typing import TYPE_CHECKING, Any

import attrs

from hami_core.clock import SYSTEM
from hami_core.k8snames import is_dns_label
from hami_core.kube.port import (
    Cluster,
    ClusterError,
    Conflict,
    Gone,
    Invalid,
    Lease,
    NodeList,
    NodePatcher,
    NodeSnapshot,
    NotFound,
    Unavailable,
    WatchEvent,
    rv_number,
)
from hami_core.kube.selector import LabelSelector, matches, parse_label_selector
from hami_core.kube.validation import canonical_resources, validate_lease, validate_metadata, validate_name
from hami_core.kube.wire import lease_body, lease_from_json, node_snapshot
from hami_core.protocol.errors import shorten

__all__ = ["MemoryCluster", "merge_patch"]

Json = dict[str, Any]


def merge_patch(target: object, patch: object) -> Any:
    """RFC 7386 JSON merge patch: ``null`` deletes a key, objects merge, anything else replaces."""
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    result: Json = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


#: Maps the API server leaves out of a Node when empty (``omitempty``): emptying an absent one is no write.
_OMIT_EMPTY = {"metadata": ("labels", "annotations"), "status": ("allocatable", "capacity")}


@attrs.frozen
class _Change:
    """One write to a Node, as the watch history keeps it: the object before and after (``None`` before a
    create and after a delete)."""

    resource_version: int
    old: NodeSnapshot | None
    new: NodeSnapshot | None


def _stale(what: str, version: str) -> Conflict:
    return Conflict(
        f"{what}: the object has been modified (resourceVersion {version} is stale); please apply your "
        "changes to the latest version and try again",
        status=409,
    )


class MemoryCluster(NodePatcher):
    """Thread-safe in-memory ``Cluster``. ``history``: Node changes a watch can replay (older: ``Gone``);
    ``bookmark_interval``: between BOOKMARKs on a quiet watch (``None``: on demand and before the timeout)."""

    def __init__(
        self,
        *,
        history: int = 1000,
        bookmark_interval: float | None = 60.0,
        continue_snapshots: int = 16,
        clock: Callable[[], float] = SYSTEM.monotonic,
    ) -> None:
        if history < 1:
            raise ValueError(f"MemoryCluster: history must be >= 1, got {history}")
        self._cond = threading.Condition(threading.RLock())
        self._rv = self._oldest = 1  # _oldest: the oldest RV a watch may start from
        self._history: deque[_Change] = deque(maxlen=history)
        self._nodes: dict[str, Json] = {}
        self._snapshots: dict[str, NodeSnapshot] = {}
        self._list_snapshots: OrderedDict[int, tuple[NodeSnapshot, ...]] = OrderedDict()
        self._continue_snapshots = continue_snapshots
        self._leases: dict[tuple[str, str], Json] = {}
        #: The namespaces a fresh API server has; ``create_namespace`` adds more.
        self._namespaces: set[str] = {"default", "kube-system", "kube-public", "kube-node-lease"}
        self._events: list[Json] = []
        self._bookmark_interval = math.inf if bookmark_interval is None else bookmark_interval
        self._clock = clock
        self._watches: set[MemoryWatch] = set()
        self._requests: Counter[tuple[str, str]] = Counter()
        self._names = itertools.count(1)

    def create_namespace(self, name: str) -> None:
        with self._cond:
            if not is_dns_label(name):
                raise Invalid(f"create namespace {shorten(name)}: not a valid namespace name", status=422)
            if name in self._namespaces:
                raise Conflict(f"create namespace {name!r}: namespaces {name!r} already exists", status=409)
            self._namespaces.add(name)

    def request_count(self, verb: str | None = None, resource: str | None = None) -> int:
        with self._cond:
            return sum(
                n
                for (v, r), n in self._requests.items()
                if (verb is None or v == verb) and (resource is None or r == resource)
            )

    def _request(self, verb: str, resource: str) -> None:
        """Count a request (the harness's faults fail it here); lock held."""
        self._requests[(verb, resource)] += 1

    def _stalled(self, watch: MemoryWatch) -> bool:
        """Whether a fault held ``watch`` (until it was closed); the harness's hook, lock held."""
        return False

    def _namespace_exists(self, namespace: str, what: str) -> None:
        """The API server's NamespaceLifecycle admission: no object is created in a missing namespace."""
        if namespace not in self._namespaces:
            raise NotFound(f"{what}: namespaces {namespace!r} not found", status=404)

    def _next_rv(self) -> int:
        self._rv += 1
        return self._rv

    def _record(self, change: _Change) -> None:
        if len(self._history) == self._history.maxlen:
            self._oldest = self._history[0].resource_version
        self._history.append(change)
        self._cond.notify_all()

    def _store_node(self, raw: Json) -> NodeSnapshot:
        name = raw["metadata"]["name"]
        old = self._snapshots.get(name)
        snapshot = node_snapshot(raw)
        self._nodes[name] = raw
        self._snapshots[name] = snapshot
        self._record(_Change(int(snapshot.resource_version), old, snapshot))
        return snapshot

    def _existing(self, name: str, verb: str) -> Json:
        raw = self._nodes.get(name)
        if raw is None:
            raise NotFound(f"{verb} node {name!r}: nodes {name!r} not found", status=404)
        return raw

    def get_node(self, name: str) -> NodeSnapshot:
        with self._cond:
            self._request("get", "nodes")
            self._existing(name, "get")
            return self._snapshots[name]

    def list_nodes(
        self, *, label_selector: str = "", limit: int = 500, continue_token: str | None = None
    ) -> NodeList:
        with self._cond:
            self._request("list", "nodes")
            selector = parse_label_selector(label_selector)
            if continue_token:
                # The token is opaque to clients: "<resourceVersion>/<last name>" (a name has no "/").
                version, slash, start = continue_token.partition("/")
                rv = rv_number(version) if slash else None
                if rv is None:
                    raise Invalid(
                        f"list nodes: continue key is not valid: {shorten(continue_token)}", status=400
                    )
                items = self._list_snapshots.get(rv)
                if items is None:
                    raise Gone(
                        "list nodes: the provided continue parameter is too old to display a consistent "
                        "list result; start a new list without it",
                        status=410,
                    )
                self._list_snapshots.move_to_end(rv)
            else:
                rv, start = self._rv, ""
                items = tuple(self._snapshots[name] for name in sorted(self._snapshots))
            matching = [node for node in items if node.name > start and matches(selector, node.labels)]
            if limit <= 0 or len(matching) <= limit:
                return NodeList(items=tuple(matching), resource_version=str(rv))
            page = tuple(matching[:limit])
            self._list_snapshots.setdefault(rv, items)
            while len(self._list_snapshots) > self._continue_snapshots:
                self._list_snapshots.popitem(last=False)
            return NodeList(items=page, resource_version=str(rv), continue_token=f"{rv}/{page[-1].name}")

    def watch_nodes(
        self,
        *,
        resource_version: str,
        label_selector: str = "",
        timeout_seconds: int = 300,
        allow_bookmarks: bool = True,
    ) -> MemoryWatch:
        with self._cond:
            self._request("watch", "nodes")
            watch = MemoryWatch(self, parse_label_selector(label_selector), timeout_seconds, allow_bookmarks)
            if resource_version in ("", "0"):
                # "Start at most recent" / "any": synthetic ADDED events for the current state first.
                watch._cursor = self._rv
                watch._initial.extend(
                    WatchEvent(type="ADDED", resource_version=node.resource_version, node=node)
                    for name, node in sorted(self._snapshots.items())
                    if matches(watch._selector, node.labels)
                )
            elif (start := rv_number(resource_version)) is not None:
                watch._cursor = start
            else:  # the real server fails such a watch inside the stream, with a 500
                invalid = f"watch nodes: 500 resourceVersion: Invalid value: {resource_version!r}"
                watch.error = Unavailable(invalid, status=500)
                return watch
            self._watches.add(watch)
            return watch

    def create_node(
        self,
        name: str,
        *,
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
    ) -> NodeSnapshot:
        with self._cond:
            self._request("create", "nodes")
            validate_name(name, f"create node {name!r}:")
            created = SYSTEM.now().astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
            metadata: Json = {"name": name, "uid": str(uuid.uuid4()), "creationTimestamp": created}
            if labels:
                metadata["labels"] = dict(labels)
            if annotations:
                metadata["annotations"] = dict(annotations)
            raw: Json = {"apiVersion": "v1", "kind": "Node", "metadata": metadata, "spec": {}, "status": {}}
            validate_metadata(raw, f"create node {name!r}:")
            if name in self._nodes:
                raise Conflict(f"create node {name!r}: nodes {name!r} already exists", status=409)
            metadata["resourceVersion"] = str(self._next_rv())
            return self._store_node(raw)

    def delete_node(self, name: str) -> None:
        with self._cond:
            self._request("delete", "nodes")
            self._existing(name, "delete")
            del self._nodes[name]
            self._record(_Change(self._next_rv(), self._snapshots.pop(name), None))

    def merge_patch_node(
        self, name: str, patch: Mapping[str, Any], *, field_manager: str | None = None
    ) -> NodeSnapshot:
        """``field_manager`` would own the changed keys in ``managedFields``, which the harness keeps."""
        with self._cond:
            self._request("patch", "nodes")
            what = f"patch node {name!r}"
            current = self._existing(name, "patch node")
            meta, meta_patch = current["metadata"], patch.get("metadata") or {}
            precondition = meta_patch.get("resourceVersion")
            if precondition is not None and precondition != meta["resourceVersion"]:
                raise _stale(what, precondition)
            for field in ("name", "uid"):
                if field in meta_patch and meta_patch[field] != meta[field]:
                    raise Invalid(f"{what}: metadata.{field} may not be changed", status=422)
            updated: Json = merge_patch(copy.deepcopy(current), patch)
            updated["status"] = copy.deepcopy(current["status"])
            updated["metadata"].pop("managedFields", None)  # the server's own: a patch does not write them
            for field in ("resourceVersion", "name", "uid", "creationTimestamp"):
                updated["metadata"][field] = meta[field]
            validate_metadata(updated, f"{what}:")
            return self._write(name, current, updated)

    def patch_node_status(
        self,
        name: str,
        allocatable: Mapping[str, str | None],
        *,
        capacity: Mapping[str, str | None] | None = None,
    ) -> NodeSnapshot:
        with self._cond:
            self._request("patch", "nodes/status")
            what = f"patch node status {name!r}"
            updated = copy.deepcopy(current := self._existing(name, "patch node status"))
            updated.setdefault("spec", {})
            changes = dict(allocatable)
            patch = {"allocatable": changes, "capacity": changes if capacity is None else dict(capacity)}
            status = updated["status"] = merge_patch(updated["status"], patch)
            for field in patch:
                status[field] = canonical_resources(status[field], f"{what}: status.{field}")
            return self._write(name, current, updated)

    def _write(self, name: str, current: Json, updated: Json) -> NodeSnapshot:
        """Store the patched ``updated`` over ``current``; lock held, ``updated`` validated."""
        for section, fields in _OMIT_EMPTY.items():
            for field in fields:
                if updated[section].get(field) == {}:
                    del updated[section][field]
        if updated == current:
            return self._snapshots[name]  # a no-op patch does not write, as etcd's guaranteed update
        updated["metadata"]["resourceVersion"] = str(self._next_rv())
        return self._store_node(updated)

    def get_lease(self, namespace: str, name: str) -> Lease:
        with self._cond:
            self._request("get", "leases")
            raw = self._leases.get((namespace, name))
            if raw is None:
                raise NotFound(f"get lease {namespace}/{name}: leases {name!r} not found", status=404)
            return lease_from_json(raw)

    def create_lease(self, lease: Lease) -> Lease:
        with self._cond:
            self._request("create", "leases")
            return self._store_lease(lease, "create", None)

    def update_lease(self, lease: Lease) -> Lease:
        with self._cond:
            self._request("update", "leases")
            current = self._leases.get((lease.namespace, lease.name))
            what = f"update lease {lease.namespace}/{lease.name}"
            if current is None:
                # Leases allow create-on-update: the real server creates it, ignoring the precondition.
                return self._store_lease(lease, "update", None)
            if not lease.resource_version:
                raise Invalid(f"{what}: metadata.resourceVersion must be specified for an update", status=422)
            if lease.resource_version != current["metadata"]["resourceVersion"]:
                raise _stale(what, lease.resource_version)
            return self._store_lease(lease, "update", current)

    def _store_lease(self, lease: Lease, verb: str, current: Json | None) -> Lease:
        """Store ``lease`` over ``current`` (``None``: a create); lock held, preconditions checked."""
        what = f"{verb} lease {lease.namespace}/{lease.name}"
        self._namespace_exists(lease.namespace, what)
        body = lease_body(lease)
        validate_lease(body, f"{what}:")
        if current is None and (lease.namespace, lease.name) in self._leases:
            raise Conflict(f"{what}: leases {lease.name!r} already exists", status=409)
        if current is not None and body["spec"] == current["spec"]:
            return lease_from_json(current)
        body["metadata"]["resourceVersion"] = str(self._next_rv())
        self._leases[(lease.namespace, lease.name)] = body
        return lease_from_json(body)

    def create_event(self, namespace: str, body: Mapping[str, Any]) -> None:
        with self._cond:
            self._request("create", "events")
            what = f"create event in {namespace!r}"
            self._namespace_exists(namespace, what)
            event: Json = copy.deepcopy(dict(body))
            meta = event.setdefault("metadata", {})
            if not meta.get("name"):
                prefix = meta.get("generateName")
                if not prefix:
                    raise Invalid(f"{what}: metadata.name or metadata.generateName is required", status=422)
                meta["name"] = f"{prefix}{next(self._names):05x}"
            meta["namespace"] = namespace
            involved_namespace = event["involvedObject"].get("namespace") or ""
            if namespace != (involved_namespace or "default"):
                raise Invalid(
                    f"{what}: involvedObject.namespace {involved_namespace!r} does not match event.namespace",
                    status=422,
                )
            meta["resourceVersion"] = str(self._next_rv())
            meta["uid"] = str(uuid.uuid4())
            self._events.append(event)


class MemoryWatch:
    """History after its resourceVersion, then live changes. The harness's faults set (lock held, notified):
    ``error`` (raised at the start or after the initial events), ``bookmark_due`` (a bookmark now); and
    the cluster's ``_stalled`` may hold it (a half-open connection)."""

    def __init__(
        self, cluster: MemoryCluster, selector: LabelSelector, timeout_seconds: int, bookmarks: bool
    ) -> None:
        self.error: ClusterError | None = None
        self.bookmark_due = False
        self._pre_timeout_bookmark = False
        self._cluster = cluster
        self._initial: deque[WatchEvent] = deque()
        self._cursor = 0  # the resourceVersion after which changes are delivered; set by watch_nodes
        self._selector = selector
        self._deadline = cluster._clock() + timeout_seconds if timeout_seconds > 0 else math.inf
        self._bookmarks = bookmarks
        self._closed = False
        self._started = False
        self._last_sent = cluster._clock()

    def close(self) -> None:
        with self._cluster._cond:
            self._closed = True
            self._cluster._watches.discard(self)
            self._cluster._cond.notify_all()

    def __iter__(self) -> Iterator[WatchEvent]:
        cluster = self._cluster
        try:
            while True:
                with cluster._cond:
                    event = self._next_locked()
                if event is None:
                    return
                yield event
        finally:
            with cluster._cond:
                cluster._watches.discard(self)

    def _translate(self, change: _Change) -> WatchEvent | None:
        """The event this watch sees for ``change`` after its label selector, or ``None``."""
        was = change.old is not None and matches(self._selector, change.old.labels)
        now = change.new is not None and matches(self._selector, change.new.labels)
        rv = str(change.resource_version)
        if now:
            return WatchEvent(type="MODIFIED" if was else "ADDED", resource_version=rv, node=change.new)
        if was and change.old is not None:
            # The real server sends the object's last state, stamped with the deleting write's version.
            last = attrs.evolve(change.old, resource_version=rv)
            return WatchEvent(type="DELETED", resource_version=rv, node=last)
        return None

    def _next_locked(self) -> WatchEvent | None:
        """Wait for the next event to deliver; ``None`` when the watch ends. Lock held by the caller."""
        cluster = self._cluster
        if not self._started:
            self._started = True
            if self.error is not None:
                raise self.error
            if self._cursor < cluster._oldest:
                raise Gone(
                    f"watch nodes: too old resource version: {self._cursor} ({cluster._oldest})", status=410
                )
        while True:
            if self._closed:
                return None
            if self._initial:
                return self._initial.popleft()
            if self.error is not None:
                raise self.error
            if cluster._stalled(self):
                continue
            if self._cursor < cluster._oldest:
                return None  # fell behind the history window: the server ends a watch it cannot serve
            history = cluster._history  # ordered by resourceVersion
            start = bisect.bisect_right(history, self._cursor, key=lambda change: change.resource_version)
            for change in itertools.islice(history, start, None):
                self._cursor = change.resource_version
                event = self._translate(change)
                if event is not None:
                    self._last_sent = cluster._clock()
                    return event
            now = cluster._clock()
            if now >= self._deadline:
                return None
            pre_timeout = now >= self._deadline - 2.0 and not self._pre_timeout_bookmark
            interval = cluster._bookmark_interval
            due = pre_timeout or self.bookmark_due or now - self._last_sent >= interval
            # None for a watch from a resourceVersion the store has not reached (the server sends only
            # those newer than the watch's start).
            if self._bookmarks and self._cursor <= cluster._rv and due:
                self._pre_timeout_bookmark = self._pre_timeout_bookmark or pre_timeout
                self.bookmark_due = False
                self._last_sent = now
                self._cursor = cluster._rv
                return WatchEvent(type="BOOKMARK", resource_version=str(self._cursor))
            waits = [0.5, self._deadline - now]
            if not self._pre_timeout_bookmark:
                waits.append(self._deadline - 2.0 - now)
            if self._bookmarks:
                waits.append(self._last_sent + interval - now)
            # A time already past is a bookmark this watch may not send: waiting 0 for it would spin.
            cluster._cond.wait(min(wait for wait in waits if wait > 0))


if TYPE_CHECKING:  # the type checker proves that MemoryCluster implements the daemons' port
    _PORT: type[Cluster] = MemoryCluster
