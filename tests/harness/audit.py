"""The API server's audit log, as the oracles of the fault tests read it: who wrote what to which Node or
Lease, at which resourceVersion, and what the server answered.

The harness starts kube-apiserver with :data:`POLICY` (``--audit-policy-file``) and a JSON log in its
workdir (``--audit-log-path``, blocking mode). The policy logs every write to Nodes (``nodes``,
``nodes/status``) and Leases at ``RequestResponse`` level, at the ``ResponseComplete`` stage only, and
nothing else. In blocking mode the event of a request is written before its response leaves the server
(the audit filter runs inside the timeout filter, which sends the buffered response only afterwards), so
a write a client has seen answered is in the log.

``ApiServer.audit_events(...)`` returns the parsed events (:class:`AuditEvent`); :func:`node_states`
rebuilds each Node's annotations at every resourceVersion from the writes' responses, which is what an
oracle needs to say what a write replaced (:func:`deleted_values`).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

#: The audit policy (JSON is YAML): Node and Lease writes with request and response bodies, nothing else.
POLICY: dict[str, Any] = {
    "apiVersion": "audit.k8s.io/v1",
    "kind": "Policy",
    "omitStages": ["RequestReceived", "ResponseStarted"],
    "rules": [
        {
            "level": "RequestResponse",
            "verbs": ["create", "update", "patch", "delete", "deletecollection"],
            "resources": [
                {"group": "", "resources": ["nodes", "nodes/status"]},
                {"group": "coordination.k8s.io", "resources": ["leases"]},
            ],
        },
        {"level": "None"},
    ],
}


def write_policy(path: Path) -> Path:
    path.write_text(json.dumps(POLICY, indent=2))
    return path


@dataclass(frozen=True)
class AuditEvent:
    """One logged write, at the ``ResponseComplete`` stage."""

    #: The authenticated user name (``hami-scheduler``, ``admin``, ``system:serviceaccount:...``).
    user: str
    #: ``create``, ``update``, ``patch``, ``delete``, ``deletecollection``.
    verb: str
    #: ``nodes`` or ``leases``.
    resource: str
    #: ``""`` or ``status``.
    subresource: str
    namespace: str
    name: str
    #: The HTTP status the server answered.
    code: int
    #: The request body as sent: the patch document for a patch, the object for a create or update.
    request: Any
    #: The response body: the object as stored after the write, or a Status for a refused one.
    response: Any
    #: ``metadata.resourceVersion`` of the object in the response; ``""`` when it carries none.
    resource_version: str
    #: The request URI (path and query: a list's or a delete's options are there).
    request_uri: str
    audit_id: str
    #: The user's extra fields (a Pod-bound token carries ``authentication.kubernetes.io/node-name``).
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: ``stageTimestamp``, as the server wrote it (RFC 3339 with microseconds).
    timestamp: str = ""

    @property
    def succeeded(self) -> bool:
        return 200 <= self.code < 300

    @property
    def request_annotations(self) -> Mapping[str, Any] | None:
        """``metadata.annotations`` of the request body (a merge patch's ``null`` values included), or
        ``None`` when the body has none."""
        return _annotations(self.request)

    @property
    def response_annotations(self) -> Mapping[str, str] | None:
        """``metadata.annotations`` of the object in the response, or ``None`` (no object; a Status)."""
        if not isinstance(self.response, Mapping) or self.response.get("kind") == "Status":
            return None
        return _annotations(self.response) or {}


def _annotations(body: Any) -> Mapping[str, Any] | None:
    if not isinstance(body, Mapping):
        return None
    metadata = body.get("metadata")
    if not isinstance(metadata, Mapping):
        return None
    annotations = metadata.get("annotations")
    return annotations if isinstance(annotations, Mapping) else None


def parse_event(raw: Mapping[str, Any]) -> AuditEvent:
    ref = raw.get("objectRef") or {}
    user = raw.get("user") or {}
    response = raw.get("responseObject")
    rv = ""
    if isinstance(response, Mapping) and response.get("kind") != "Status":
        rv = str((response.get("metadata") or {}).get("resourceVersion") or "")
    return AuditEvent(
        user=str(user.get("username", "")),
        verb=str(raw.get("verb", "")),
        resource=str(ref.get("resource", "")),
        subresource=str(ref.get("subresource", "")),
        namespace=str(ref.get("namespace", "")),
        name=str(ref.get("name", "")),
        code=int((raw.get("responseStatus") or {}).get("code", 0)),
        request=raw.get("requestObject"),
        response=response,
        resource_version=rv,
        request_uri=str(raw.get("requestURI", "")),
        audit_id=str(raw.get("auditID", "")),
        extra={key: tuple(values) for key, values in (user.get("extra") or {}).items()},
        timestamp=str(raw.get("stageTimestamp", "")),
    )


def read_events(path: Path) -> list[AuditEvent]:
    """Every complete line of the log at ``path``, parsed, in the order written (a line still being
    written is left for the next read)."""
    try:
        text = path.read_text(errors="replace")
    except FileNotFoundError:
        return []
    lines = text.split("\n")[:-1]  # the last piece has no newline yet (or is empty)
    return [
        parse_event(raw)
        for raw in map(json.loads, filter(None, lines))
        if raw.get("stage") == "ResponseComplete"
    ]


def select(
    events: Iterable[AuditEvent],
    *,
    user: str | None = None,
    resource: str | None = None,
    name: str | None = None,
    verbs: Iterable[str] | None = None,
    succeeded: bool | None = None,
) -> list[AuditEvent]:
    """The events matching every filter given."""
    wanted = None if verbs is None else set(verbs)
    return [
        e
        for e in events
        if (user is None or e.user == user)
        and (resource is None or e.resource == resource)
        and (name is None or e.name == name)
        and (wanted is None or e.verb in wanted)
        and (succeeded is None or e.succeeded == succeeded)
    ]


@dataclass(frozen=True)
class NodeState:
    """A Node's annotations as a successful write left them."""

    uid: str
    resource_version: int
    annotations: Mapping[str, str]
    #: The write that made this state.
    by: AuditEvent


def node_states(events: Iterable[AuditEvent], name: str) -> list[NodeState]:
    """Node ``name``'s states after each successful write (create, update, patch, status patch), from
    the responses of the log: each object (uid) in resourceVersion order, the objects in the order they
    first appear (a Node deleted and created again, or an API server restarted on an empty etcd, starts
    another object; its resourceVersions are not comparable with the last one's)."""
    states: list[NodeState] = []
    for event in events:
        if event.resource != "nodes" or event.name != name or not event.succeeded:
            continue
        annotations = event.response_annotations
        if annotations is None or not event.resource_version.isdigit() or event.verb == "delete":
            continue
        uid = str((event.response.get("metadata") or {}).get("uid", ""))
        states.append(NodeState(uid, int(event.resource_version), dict(annotations), event))
    # resourceVersions order the writes of one object; objects (uids) in the order they first appear
    first = {uid: index for index, uid in reversed(list(enumerate(s.uid for s in states)))}
    states.sort(key=lambda s: (first[s.uid], s.resource_version))
    return states


def deleted_values(
    events: Iterable[AuditEvent], name: str, *, user: str
) -> list[tuple[AuditEvent, str, str]]:
    """Each annotation a successful write by ``user`` to Node ``name`` removed, as (the write, the key, the
    value it held in the state just before that write, as the log shows it)."""
    states = node_states(events, name)
    removed = []
    for before, after in itertools.pairwise(states):
        if after.by.user != user or before.uid != after.uid:
            continue
        for key, value in before.annotations.items():
            if key not in after.annotations:
                removed.append((after.by, key, value))
    return removed
