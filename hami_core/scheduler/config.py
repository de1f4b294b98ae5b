"""Everything ``hami scheduler run`` can be told, with the protocol's values as defaults."""

from __future__ import annotations

import math
import os
import socket
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from hami_core.durations import seconds
from hami_core.k8snames import is_dns_label, is_dns_subdomain
from hami_core.kube.elector import ElectionConfig
from hami_core.protocol.handshake import DEFAULT_WINDOW
from hami_core.scheduler.peer_check import HAMI_LEASE
from hami_core.scheduler.selector import NodeSelector

__all__ = [
    "COMPONENT",
    "DEFAULT_HTTP_PORT",
    "DEFAULT_LEASE_NAME",
    "DEFAULT_LEASE_NAMESPACE",
    "SchedulerConfig",
    "default_lease_namespace",
]

#: The leader Lease and the status port: not HAMi's own (its scheduler's Lease is ``hami-scheduler``, its
#: metrics port 9395), so hami-core can be installed beside HAMi without taking either over. The Lease's
#: namespace is the one the scheduler runs in (``default_lease_namespace``), this one outside a pod.
DEFAULT_LEASE_NAMESPACE = "kube-system"
DEFAULT_LEASE_NAME = "hami-core-scheduler"
DEFAULT_HTTP_PORT = 9396
#: Where the kubelet mounts a Pod's ServiceAccount namespace (as client-go's in-cluster config reads it).
SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
_ELECTION = attrs.fields(ElectionConfig)

#: The scheduler's name towards the cluster (its Events' source, the field manager of what it writes, its
#: HTTP ``Server`` header); never HAMi's own ``hami-scheduler``.
COMPONENT = "hami-core-scheduler"


def default_identity() -> str:
    """Unique per process, as kube-scheduler's ``<hostname>_<uuid>``; matched exactly, never by prefix."""
    return f"{os.environ.get('POD_NAME') or socket.gethostname()}_{uuid.uuid4()}"


def default_lease_namespace(service_account_namespace: Path = SERVICE_ACCOUNT_NAMESPACE) -> str:
    """The namespace this scheduler runs in, where the chart puts its Lease: ``POD_NAMESPACE`` (the chart
    sets it from the downward API), else the mounted ServiceAccount's namespace, else
    ``DEFAULT_LEASE_NAMESPACE`` (outside a cluster)."""
    if namespace := os.environ.get("POD_NAMESPACE", "").strip():
        return namespace
    try:
        namespace = service_account_namespace.read_text().strip()
    except OSError:
        namespace = ""
    return namespace or DEFAULT_LEASE_NAMESPACE


def _positive(instance: object, attribute: attrs.Attribute[Any], value: float) -> None:
    if not (value > 0 and math.isfinite(value)):
        raise ValueError(f"{attribute.name.replace('_', '-')} must be a finite number > 0, got {value!r}")


def _valid(check: Callable[[str], bool], what: str) -> Callable[[object, attrs.Attribute[str], str], None]:
    def validate(instance: object, attribute: attrs.Attribute[str], value: str) -> None:
        if not check(value):
            raise ValueError(f"{attribute.name.replace('_', '-')} {value!r} is not a valid {what}")

    return validate


_namespace = _valid(is_dns_label, "namespace name (a lower-case DNS label)")
_object_name = _valid(is_dns_subdomain, "object name (a lower-case DNS subdomain)")


@attrs.frozen(kw_only=True)
class SchedulerConfig:
    #: Re-evaluate every node this often (seconds; the seed's 15 s). Never relists the API server.
    resync: float = attrs.field(default=15.0, validator=seconds)
    #: A scheduler stamp older than this is expired (seconds; the protocol's window, as HAMi's).
    handshake_window: float = attrs.field(default=DEFAULT_WINDOW.total_seconds(), validator=seconds)
    node_selector: NodeSelector = attrs.field(factory=NodeSelector)
    #: False: a single replica that leads without a Lease (``--leader-elect=false``).
    leader_elect: bool = True
    #: Watch, decode and decide as a leader would, and write nothing at all: no Lease, no patch, no Event
    #: (``--read-only``, to run beside another registrar such as HAMi's own scheduler).
    read_only: bool = False
    lease_namespace: str = attrs.field(factory=default_lease_namespace, validator=_namespace)
    lease_name: str = attrs.field(default=DEFAULT_LEASE_NAME, validator=_object_name)
    identity: str = attrs.field(factory=default_identity)
    #: The elector's timings (kube-scheduler's defaults, ``ElectionConfig``).
    lease_duration: float = attrs.field(default=_ELECTION.lease_duration.default, validator=seconds)
    renew_deadline: float = attrs.field(default=_ELECTION.renew_deadline.default, validator=seconds)
    retry_period: float = attrs.field(default=_ELECTION.retry_period.default, validator=seconds)
    #: Client-side rate limit for writes: 5,000 new nodes are stamped in about 25 s.
    qps: float = attrs.field(default=200.0, validator=_positive)
    burst: int = attrs.field(default=400, validator=_positive)
    max_in_flight: int = attrs.field(default=16, validator=_positive)
    http_host: str = "0.0.0.0"
    #: 0 picks a free port; ``None`` serves no HTTP.
    http_port: int | None = DEFAULT_HTTP_PORT
    #: ``gc.freeze`` once the cache is first synced (docs/operations.md says why): for a daemon process
    #: (``hami scheduler run`` sets it), not for a Scheduler embedded in a larger process.
    freeze_gc_after_sync: bool = False
    #: Namespace of the Warning Events about Nodes: the API server requires ``default`` for events about
    #: cluster-scoped objects.
    event_namespace: str = "default"
    #: HAMi's own scheduler Lease, checked at start and on every resync (``None``: not checked).
    hami_lease: tuple[str, str] | None = HAMI_LEASE
    #: While HAMi's registrar is active (its Lease held and fresh), give up leadership and write nothing;
    #: take part again once it is gone (``--refuse-beside-hami``).
    refuse_beside_hami: bool = False
