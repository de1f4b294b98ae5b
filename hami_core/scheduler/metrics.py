"""The scheduler's metrics, in a registry of its own; every family, its labels and meaning is
docs/observability.md (``tests/scheduler/test_metrics_doc.py`` keeps it whole). The gauges of the
daemon's state are read once per scrape from ``LiveState``, so they are never stale.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

import attrs
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from hami_core.protocol.states import KEPT_STATES
from hami_core.serve.metrics import new_registry

__all__ = [
    "API_CALLS",
    "EVENT_DROP_CAUSES",
    "PATCH_RESULTS",
    "LiveState",
    "SchedulerMetrics",
    "VendorCounts",
    "status_class",
    "total",
]

#: The cluster port's methods the scheduler calls, as (verb, resource) for the API request metrics.
API_CALLS: Mapping[str, tuple[str, str]] = {
    "list_nodes": ("list", "nodes"),
    "watch_nodes": ("watch", "nodes"),
    "patch_node_annotations": ("patch", "nodes"),
    "get_lease": ("get", "leases"),
    "create_lease": ("create", "leases"),
    "update_lease": ("update", "leases"),
    "create_event": ("create", "events"),
}
#: An API request's result: the HTTP status class, or ``error`` when no answer came (refused, timeout).
PATCH_RESULTS = ("2xx", "4xx", "5xx", "error")
#: client-go's ``rest_client_request_duration_seconds`` buckets.
LATENCY_BUCKETS = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)
#: The states of a vendor on a node the gauge counts: every state the scheduler keeps one in.
NODE_STATES = tuple(state.value for state in KEPT_STATES)
#: Why an Event was not posted (``hami_core.kube.events``).
EVENT_DROP_CAUSES = ("duplicate", "rate_limited", "queue_full", "failed")

_VENDOR = ("vendor",)
#: The counters, by attribute: ``hami_scheduler_<attribute>_total``, its labels and help. Every one but
#: the two labelled by request or Event outcome is in ``totals``.
_COUNTERS: Mapping[str, tuple[tuple[str, ...], str]] = {
    "evaluations": ((), "Node evaluations (every vendor decided)."),
    "decode_errors": (
        _VENDOR,
        "Register values of the vendor that do not decode (each distinct value counted once per node).",
    ),
    "liveness_rule_errors": (
        _VENDOR,
        "Times the vendor driver's liveness rule raised (each distinct error counted once per node).",
    ),
    "cleanups": (_VENDOR, "Vendors found dead on a node and cleaned up."),
    "cleanups_withheld": (
        _VENDOR,
        "Vendors found dead on a view not known current: not cleaned up, decided again once it is.",
    ),
    "stamps": (_VENDOR, "Handshake stamps handed to the patch writer."),
    "handshake_deletes": (_VENDOR, "Handshake deletes of cleanups handed to the patch writer."),
    "dropped_not_leader": ((), "Writes not sent because this replica stopped leading before their turn."),
    "patch_conflicts": (
        (),
        "Conditional patches (cleanups) refused with 409 Conflict: the Node changed since it was "
        "judged; it is decided again on what it holds now.",
    ),
    "wall_clock_steps": ((), "Steps of the wall clock detected against the monotonic clock."),
    "clock_step_restamps": (
        _VENDOR,
        "Stamps written again instead of a cleanup because the wall clock stepped since the stamp was "
        "written or first seen.",
    ),
    "api_requests": (
        ("verb", "resource", "result"),
        "API requests by verb, resource and result: the HTTP status class (2xx, 4xx, 5xx), or error "
        "when no answer came (connection refused, timeout).",
    ),
    "events_posted": (("reason",), "Events posted about Nodes, by reason."),
    "events_dropped": (
        ("reason", "cause"),
        "Events not posted: duplicate (same reason for the node and vendor lately), rate_limited (the "
        "node's burst is spent), queue_full, failed (the API server refused or did not answer).",
    ),
    "leadership_changes": ((), "Times this replica became leader or stopped leading."),
}
_NOT_IN_TOTALS = ("api_requests", "events_dropped")

#: The unlabelled gauges of ``LiveState``, as ``hami_scheduler_<name>`` and help; each reads the attribute of
#: its name.
_LIVE_GAUGES = (
    ("leader", "1 while this replica leads (holds the Lease, renewed in time)."),
    ("ready", "1 while this replica leads and its cache is synced for the current term (/readyz)."),
    (
        "cache_synced",
        "1 when the node list is loaded and, on the leader, the current term's full pass is done.",
    ),
    ("term", "Leadership terms of this process (the current one while leading)."),
    ("nodes_watched", "Nodes in the watch cache, selected or not."),
    (
        "view_current",
        "1 while the node view is current: no watch gap since a list made in this term, and watch "
        "progress within the deadline (no cleanup is decided otherwise).",
    ),
    (
        "watch_progress_age_seconds",
        "Seconds since the node watch last showed progress (a list, an event or a bookmark).",
    ),
    ("work_queue_depth", "Node keys ready for the worker."),
    ("work_queue_delayed", "Work queue keys waiting for a later time (stamp expiries, retries, the resync)."),
)


def status_class(status: int | None) -> str:
    """``2xx``, ``4xx``, ``5xx`` for an HTTP status; ``error`` for none (or one outside those classes)."""
    klass = "error" if status is None else f"{status // 100}xx"
    return klass if klass in PATCH_RESULTS else "error"


@attrs.frozen(kw_only=True)
class VendorCounts:
    """One vendor across the nodes: how many are in each state (``NODE_STATES``), its cached devices."""

    states: Mapping[str, int] = attrs.field(factory=dict)
    devices: int = 0


@attrs.frozen(kw_only=True)
class LiveState:
    """The daemon's state as a scrape reads it (``Scheduler.live_state``)."""

    leader: bool
    ready: bool
    cache_synced: bool
    term: int
    nodes_watched: int
    work_queue_depth: int
    work_queue_delayed: int
    #: vendor key -> counts; a selected vendor missing here counts 0.
    vendors: Mapping[str, VendorCounts] = attrs.field(factory=dict)
    #: Read-only mode: (vendor key, "stamp" or "delete") -> nodes a leader would write that to now.
    would_write: Mapping[tuple[str, str], int] | None = None
    #: The node view is current (spec 5b), seconds since the watch's last progress, times it went stale.
    view_current: bool = True
    watch_progress_age_seconds: float = 0.0
    times_stale: int = 0


class _LiveCollector(Collector):
    """The gauges of ``LiveState``, read when scraped."""

    def __init__(self, read: Callable[[], LiveState], vendor_keys: Sequence[str]) -> None:
        self._read = read
        self._vendors = tuple(vendor_keys)

    def describe(self) -> Iterable[Metric]:
        return self._families(None)

    def collect(self) -> Iterable[Metric]:
        return self._families(self._read())

    def _families(self, s: LiveState | None) -> Iterator[Metric]:
        for name, doc in _LIVE_GAUGES:
            family = GaugeMetricFamily(f"hami_scheduler_{name}", doc)
            if s is not None:
                family.add_metric([], getattr(s, name))
            yield family
        stale = CounterMetricFamily(
            "hami_scheduler_view_stale",
            "Times the node view went stale: a watch gap (a failure, a 410, no progress within the "
            "deadline, a store behind the watch).",
        )
        nodes = GaugeMetricFamily(
            "hami_scheduler_nodes",
            "Nodes where the vendor is in each state: registered, degraded (its register value does not "
            "decode, or its liveness rule failed), awaiting-sign-of-life (cleaned up, or found dead before "
            "it registered), no-devices, not-present (a handshake without a register value).",
            labels=("vendor", "state"),
        )
        devices = GaugeMetricFamily(
            "hami_scheduler_devices", "Devices of the vendor in the device cache.", labels=_VENDOR
        )
        would = GaugeMetricFamily(
            "hami_scheduler_read_only_pending_writes",
            "Read-only mode: nodes a leader would write to now, by vendor and kind (stamp, "
            "delete); no series unless --read-only.",
            labels=("vendor", "kind"),
        )
        if s is not None:
            stale.add_metric([], s.times_stale)
            for vendor in self._vendors:
                counts = s.vendors.get(vendor, VendorCounts())
                for state in NODE_STATES:
                    nodes.add_metric([vendor, state], counts.states.get(state, 0))
                devices.add_metric([vendor], counts.devices)
                for kind in ("stamp", "delete") if s.would_write is not None else ():
                    would.add_metric([vendor, kind], (s.would_write or {}).get((vendor, kind), 0))
        yield from (stale, nodes, devices, would)


def total(counter: Counter, **labels: str) -> float:
    """The sum of a counter's ``_total`` samples whose labels include ``labels``."""
    return sum(
        s.value
        for family in counter.collect()
        for s in family.samples
        if s.name.endswith("_total") and labels.items() <= s.labels.items()
    )


class SchedulerMetrics:
    """The scheduler's series, every one created at 0 from the start.

    ``live`` reads the daemon's state for the gauges; without it (a registrar or a writer on its own, in
    tests) only the counters are there.
    """

    evaluations: Counter
    decode_errors: Counter
    liveness_rule_errors: Counter
    cleanups: Counter
    cleanups_withheld: Counter
    stamps: Counter
    handshake_deletes: Counter
    dropped_not_leader: Counter
    patch_conflicts: Counter
    wall_clock_steps: Counter
    clock_step_restamps: Counter
    api_requests: Counter
    events_posted: Counter
    events_dropped: Counter
    leadership_changes: Counter

    def __init__(
        self,
        vendor_keys: Sequence[str],
        *,
        live: Callable[[], LiveState] | None = None,
        event_reasons: Sequence[str] = (),
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.registry = r = registry if registry is not None else new_registry("scheduler")
        self.vendor_keys = tuple(vendor_keys)
        for attribute, (labels, doc) in _COUNTERS.items():
            counter = Counter(f"hami_scheduler_{attribute}", doc, labels, registry=r)
            for vendor in self.vendor_keys if labels == _VENDOR else ():
                counter.labels(vendor=vendor)
            setattr(self, attribute, counter)
        self.api_request_duration = Histogram(
            "hami_scheduler_api_request_duration_seconds",
            "API request latency, until the answer (for a watch: until the stream opened).",
            ["verb", "resource"],
            buckets=LATENCY_BUCKETS,
            registry=r,
        )
        for verb, resource in API_CALLS.values():
            self.api_request_duration.labels(verb=verb, resource=resource)
            for result in PATCH_RESULTS:
                self.api_requests.labels(verb=verb, resource=resource, result=result)
        for reason in event_reasons:
            self.events_posted.labels(reason=reason)
            for cause in EVENT_DROP_CAUSES:
                self.events_dropped.labels(reason=reason, cause=cause)
        self.peer_registrar_active = Gauge(
            "hami_scheduler_peer_registrar_active",
            "1 while HAMi's own scheduler seems active: its Lease (kube-system/hami-scheduler) is held and "
            "fresh. Two registrars write the same node annotations. Checked at start and every resync.",
            registry=r,
        )
        self.last_full_pass = Gauge(
            "hami_scheduler_last_full_pass_timestamp_seconds",
            "Unix time the last term-start full pass over every node finished (0: none yet).",
            registry=r,
        )
        if live is not None:
            r.register(_LiveCollector(live, self.vendor_keys))

    def event_outcome(self, reason: str, outcome: str) -> None:
        """The Event recorder's report: ``posted``, or one of ``EVENT_DROP_CAUSES``."""
        if outcome == "posted":
            self.events_posted.labels(reason=reason).inc()
        else:
            self.events_dropped.labels(reason=reason, cause=outcome).inc()

    def patch_requests(self) -> dict[str, float]:
        """Node patch requests by result (for tests and status)."""
        verb, resource = API_CALLS["patch_node_annotations"]
        return {
            result: total(self.api_requests, verb=verb, resource=resource, result=result)
            for result in PATCH_RESULTS
        }

    def totals(self) -> dict[str, float]:
        """Every counter summed over its labels, by short name (``cleanups``, ``stamps``, ...)."""
        return {name: total(getattr(self, name)) for name in _COUNTERS if name not in _NOT_IN_TOTALS}

    def text(self) -> str:
        return generate_latest(self.registry).decode()
