"""Raw Kubernetes JSON to and from the port's snapshots, shared by both cluster implementations so they
cannot disagree about what a Node or a Lease looks like."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from hami_core.kube.port import ClusterError, Invalid, Lease, NodeOwners, NodeSnapshot
from hami_core.protocol.errors import shorten

__all__ = [
    "lease_body",
    "lease_from_json",
    "node_owners",
    "node_snapshot",
    "resource_version_of",
]


def _mapping(value: object, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ClusterError(f"malformed {where}: expected an object, got {type(value).__name__}")
    return value


def _string_map(value: object, where: str) -> dict[str, str]:
    result: dict[str, str] = {}
    for key, item in _mapping(value, where).items():
        if not isinstance(item, str):
            raise ClusterError(f"malformed {where}[{key!r}]: expected a string, got {type(item).__name__}")
        result[key] = item
    return result


def resource_version_of(obj: Mapping[str, Any], where: str) -> str:
    """``metadata.resourceVersion`` of a raw object ("" when absent)."""
    rv = _mapping(obj.get("metadata"), f"{where} metadata").get("resourceVersion", "")
    if not isinstance(rv, str):
        raise ClusterError(f"malformed {where} metadata.resourceVersion: {rv!r}")
    return rv


def node_snapshot(obj: Mapping[str, Any]) -> NodeSnapshot:
    """Reduce a raw Node to the fields the protocol reads."""
    meta = _mapping(obj.get("metadata"), "Node metadata")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise ClusterError(f"malformed Node: metadata.name is {name!r}")
    where = f"Node {name!r}"
    uid = meta.get("uid", "")
    if not isinstance(uid, str):
        raise ClusterError(f"malformed {where} metadata.uid: {uid!r}")
    status = _mapping(obj.get("status"), f"{where} status")
    return NodeSnapshot(
        name=name,
        uid=uid,
        resource_version=resource_version_of(obj, where),
        labels=_string_map(meta.get("labels"), f"{where} metadata.labels"),
        annotations=_string_map(meta.get("annotations"), f"{where} metadata.annotations"),
        allocatable=_string_map(status.get("allocatable"), f"{where} status.allocatable"),
        capacity=_string_map(status.get("capacity"), f"{where} status.capacity"),
    )


def node_owners(obj: Mapping[str, Any]) -> NodeOwners:
    """A raw Node with each annotation's managers (``managedFields``' ``f:metadata.f:annotations.f:KEY``);
    an entry of another shape is skipped: ownership is a hint for ``hami cleanup``, never a failure."""
    node = node_snapshot(obj)
    entries = _mapping(obj.get("metadata"), f"Node {node.name!r} metadata").get("managedFields")
    owners: dict[str, list[str]] = {key: [] for key in node.annotations}
    for entry in entries if isinstance(entries, list) else ():
        if not isinstance(entry, Mapping) or not isinstance(entry.get("manager"), str):
            continue
        fields = entry.get("fieldsV1")
        for part in ("f:metadata", "f:annotations"):
            fields = fields.get(part) if isinstance(fields, Mapping) else None
        for field in fields if isinstance(fields, Mapping) else ():
            key = field[2:] if field.startswith("f:") else None
            if key in owners and entry["manager"] not in owners[key]:
                owners[key].append(entry["manager"])
    return NodeOwners(node=node, managers={key: tuple(names) for key, names in owners.items()})


def parse_micro_time(text: object, where: str) -> datetime | None:
    """Parse an RFC 3339 time as the API server writes it; ``None`` stays ``None``."""
    if text is None:
        return None
    if not isinstance(text, str):
        raise ClusterError(f"malformed {where}: expected an RFC 3339 string, got {text!r}")
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise ClusterError(f"malformed {where}: {shorten(text)} is not an RFC 3339 time") from None
    if parsed.tzinfo is None:
        raise ClusterError(f"malformed {where}: {shorten(text)} has no time zone")
    return parsed.astimezone(UTC)


def lease_body(lease: Lease) -> dict[str, Any]:
    """A ``coordination.k8s.io/v1`` Lease body; a set resourceVersion is the update's precondition."""
    metadata: dict[str, Any] = {"name": lease.name, "namespace": lease.namespace}
    if lease.resource_version:
        metadata["resourceVersion"] = lease.resource_version
    spec: dict[str, Any] = {"leaseTransitions": lease.lease_transitions}
    if lease.holder_identity is not None:
        spec["holderIdentity"] = lease.holder_identity
    if lease.lease_duration_seconds is not None:
        spec["leaseDurationSeconds"] = lease.lease_duration_seconds
    for field, key in (("acquire_time", "acquireTime"), ("renew_time", "renewTime")):
        time: datetime | None = getattr(lease, field)
        if time is None:
            continue
        if time.utcoffset() is None:
            raise Invalid(f"Lease {field}: {time.isoformat()} has no time zone; pass an aware datetime")
        spec[key] = time.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")  # a metav1.MicroTime
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": metadata, "spec": spec}


def lease_from_json(obj: Mapping[str, Any]) -> Lease:
    """The port's ``Lease`` from a raw Lease."""
    meta = _mapping(obj.get("metadata"), "Lease metadata")
    name, namespace = meta.get("name"), meta.get("namespace")
    if not isinstance(name, str) or not isinstance(namespace, str):
        raise ClusterError(f"malformed Lease: metadata.name {name!r}, metadata.namespace {namespace!r}")
    where = f"Lease {namespace}/{name}"
    spec = _mapping(obj.get("spec"), f"{where} spec")
    holder = spec.get("holderIdentity")
    duration = spec.get("leaseDurationSeconds")
    transitions = spec.get("leaseTransitions") or 0
    if holder is not None and not isinstance(holder, str):
        raise ClusterError(f"malformed {where} spec.holderIdentity: {holder!r}")
    for field, value in (("leaseDurationSeconds", duration), ("leaseTransitions", transitions)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            raise ClusterError(f"malformed {where} spec.{field}: {value!r}")
    return Lease(
        name=name,
        namespace=namespace,
        holder_identity=holder,
        lease_duration_seconds=duration,
        acquire_time=parse_micro_time(spec.get("acquireTime"), f"{where} spec.acquireTime"),
        renew_time=parse_micro_time(spec.get("renewTime"), f"{where} spec.renewTime"),
        lease_transitions=transitions,
        resource_version=resource_version_of(obj, where),
    )
