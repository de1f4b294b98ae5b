"""The scheduler's metrics, in a registry of its own (``hami_core.serve.metrics``).

| metric | type | labels | what |
|---|---|---|---|
| ``hami_scheduler_evaluations_total`` | counter | | node evaluations (every vendor of the node decided) |
| ``hami_scheduler_decode_errors_total`` | counter | vendor | register values that do not decode (each distinct one once) |
| ``hami_scheduler_liveness_rule_errors_total`` | counter | vendor | a driver's liveness rule raised (each distinct error once) |
| ``hami_scheduler_cleanups_total`` | counter | vendor | vendors found dead and cleaned up |
| ``hami_scheduler_cleanups_withheld_total`` | counter | vendor | vendors found dead on a view not known current: not cleaned, decided again once it is |
| ``hami_scheduler_stamps_total`` | counter | vendor | handshake stamps handed to the patch writer (leader only) |
| ``hami_scheduler_handshake_deletes_total`` | counter | vendor | handshake deletes of cleanups handed to the writer |
| ``hami_scheduler_dropped_not_leader_total`` | counter | | writes not sent: leadership was lost before their turn |
| ``hami_scheduler_patch_conflicts_total`` | counter | | conditional patches (cleanups) refused with 409: the Node changed since it was judged, so it is decided again |
| ``hami_scheduler_wall_clock_steps_total`` | counter | | steps of the wall clock detected against the monotonic clock |
| ``hami_scheduler_clock_step_restamps_total`` | counter | vendor | stamps written again, instead of a cleanup, because the wall clock stepped since the stamp was written or seen |
| ``hami_scheduler_api_requests_total`` | counter | verb, resource, result | API requests by HTTP status class (``2xx``, ``4xx``, ``5xx``; ``error``: no answer) |
| ``hami_scheduler_api_request_duration_seconds`` | histogram | verb, resource | API request latency |
| ``hami_scheduler_events_posted_total`` | counter | reason | Events posted about Nodes |
| ``hami_scheduler_events_dropped_total`` | counter | reason, cause | Events not posted (``duplicate``, ``rate_limited``, ``queue_full``, ``failed``) |
| ``hami_scheduler_leadership_changes_total`` | counter | | this replica became leader or stopped leading |
| ``hami_scheduler_last_full_pass_timestamp_seconds`` | gauge | | wall time the last term-start full pass finished (0: none yet) |
| ``hami_scheduler_leader`` | gauge | | 1 while this replica leads |
| ``hami_scheduler_ready`` | gauge | | 1 while it leads with the cache synced for the current term (``/readyz``) |
| ``hami_scheduler_cache_synced`` | gauge | | 1 when the node list is loaded and, on the leader, the current term's full pass is done |
| ``hami_scheduler_term`` | gauge | | leadership terms of this process (the current one while leading) |
| ``hami_scheduler_nodes_watched`` | gauge | | Nodes in the watch cache (all of them, selected or not) |
| ``hami_scheduler_nodes`` | gauge | vendor, state | nodes where the vendor is in each state it is kept in (``protocol/states.py``: ``registered``, ``degraded``, ``awaiting-sign-of-life``, ``no-devices``, ``not-present``) |
| ``hami_scheduler_devices`` | gauge | vendor | devices in the device cache |
| ``hami_scheduler_view_current`` | gauge | | 1 while the node view is current: no watch gap since a list made in this term, progress within the deadline |
| ``hami_scheduler_watch_progress_age_seconds`` | gauge | | seconds since the node watch last showed progress (a list, an event, a bookmark) |
| ``hami_scheduler_view_stale_total`` | counter | | times the node view went stale (a watch gap: failure, 410, no progress, store behind) |
| ``hami_scheduler_work_queue_depth`` | gauge | | node keys ready for the worker |
| ``hami_scheduler_work_queue_delayed`` | gauge | | keys waiting for a later time (stamp expiries, retries, the resync) |
| ``hami_scheduler_read_only_pending_writes`` | gauge | vendor, kind | read-only mode: nodes a leader would write to now (``stamp``, ``delete``) |
| ``hami_scheduler_peer_registrar_active`` | gauge | | 1 while HAMi's own scheduler seems active (its Lease held and fresh; checked on every resync) |

plus ``hami_build_info`` and the process metrics. Every labelled series the daemon can produce exists at
0 from the start: one per selected vendor (and state), per API call the daemon makes, per Event reason.
No label holds a node name.

Counters are ``prometheus_client`` objects, safe to add to from any thread and to read while a scrape
runs. The gauges of the daemon's state (``LiveState``) are read once per scrape by a collector, from the
one function the daemon gives, so they are never stale and never need updating. A new per-vendor series
(say read-only mode's pending writes by vendor and kind) is one more metric here, its series created in
``__init__`` like the others.
"""  # noqa: E501 (a table)

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

import attrs
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.metrics_core import Metric
from prometheus_client.registry import Collector

from hami_core.protocol.states import KEPT_STATES
from hami_core.serve.metrics import exposition, new_registry

__all__ = [
    "API_CALLS",
    "EVENT_DROP_CAUSES",
    "LATENCY_BUCKETS",
    "NODE_STATES",
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


def status_class(status: int | None) -> str:
    """``2xx``, ``4xx``, ``5xx`` for an HTTP status; ``error`` for none (or one outside those classes)."""
    if status is None:
        return "error"
    klass = f"{status // 100}xx"
    return klass if klass in PATCH_RESULTS else "error"


@attrs.frozen(kw_only=True)
class VendorCounts:
    """One vendor across the nodes: how many are in each state (``NODE_STATES``), its cached devices."""

    states: Mapping[str, int] = attrs.field(factory=dict)
    devices: int = 0

    @property
    def registered(self) -> int:
        return self.states.get("registered", 0)

    @property
    def degraded(self) -> int:
        return self.states.get("degraded", 0)


@attrs.frozen(kw_only=True)
class LiveState:
    """The daemon's state as a scrape reads it (``Scheduler.live_state``)."""

    leader: bool
    ready: bool
    cache_synced: bool
    term: int
    nodes_watched: int
    queue_depth: int
    queue_delayed: int
    #: vendor key -> counts; a selected vendor missing here counts 0.
    vendors: Mapping[str, VendorCounts] = attrs.field(factory=dict)
    #: Read-only mode: (vendor key, "stamp" or "delete") -> nodes a leader would write that to now.
    would_write: Mapping[tuple[str, str], int] | None = None
    #: The node view is current (spec 5b), seconds since the watch's last progress, times it went stale.
    view_current: bool = True
    watch_progress_age: float = 0.0
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

    def _families(self, state: LiveState | None) -> Iterator[Metric]:
        def gauge(name: str, doc: str, value: float, labels: Sequence[str] = ()) -> GaugeMetricFamily:
            family = GaugeMetricFamily(name, doc, labels=labels or None)
            if state is not None and not labels:
                family.add_metric([], value)
            return family

        s = state
        yield gauge(
            "hami_scheduler_leader",
            "1 while this replica leads (holds the Lease, renewed in time).",
            bool(s and s.leader),
        )
        yield gauge(
            "hami_scheduler_ready",
            "1 while this replica leads and its cache is synced for the current term (/readyz).",
            bool(s and s.ready),
        )
        yield gauge(
            "hami_scheduler_cache_synced",
            "1 when the node list is loaded and, on the leader, the current term's full pass is done.",
            bool(s and s.cache_synced),
        )
        yield gauge(
            "hami_scheduler_term",
            "Leadership terms of this process (the current one while leading).",
            s.term if s else 0,
        )
        yield gauge(
            "hami_scheduler_nodes_watched",
            "Nodes in the watch cache, selected or not.",
            s.nodes_watched if s else 0,
        )
        yield gauge(
            "hami_scheduler_view_current",
            "1 while the node view is current: no watch gap since a list made in this term, and watch "
            "progress within the deadline (no cleanup is decided otherwise).",
            bool(s and s.view_current),
        )
        yield gauge(
            "hami_scheduler_watch_progress_age_seconds",
            "Seconds since the node watch last showed progress (a list, an event or a bookmark).",
            s.watch_progress_age if s else 0,
        )
        stale = CounterMetricFamily(
            "hami_scheduler_view_stale",
            "Times the node view went stale: a watch gap (a failure, a 410, no progress within the "
            "deadline, a store behind the watch).",
        )
        if s is not None:
            stale.add_metric([], s.times_stale)
        yield stale
        yield gauge(
            "hami_scheduler_work_queue_depth", "Node keys ready for the worker.", s.queue_depth if s else 0
        )
        yield gauge(
            "hami_scheduler_work_queue_delayed",
            "Work queue keys waiting for a later time (stamp expiries, retries, the resync).",
            s.queue_delayed if s else 0,
        )
        nodes = gauge(
            "hami_scheduler_nodes",
            "Nodes where the vendor is in each state: registered, degraded (its register value does not "
            "decode, or its liveness rule failed), awaiting-sign-of-life (cleaned up, or found dead before "
            "it registered), no-devices, not-present (a handshake without a register value).",
            0,
            ("vendor", "state"),
        )
        devices = gauge(
            "hami_scheduler_devices", "Devices of the vendor in the device cache.", 0, ("vendor",)
        )
        if s is not None:
            for vendor in self._vendors:
                counts = s.vendors.get(vendor, VendorCounts())
                for name in NODE_STATES:
                    nodes.add_metric([vendor, name], counts.states.get(name, 0))
                devices.add_metric([vendor], counts.devices)
        yield nodes
        yield devices
        would = gauge(
            "hami_scheduler_read_only_pending_writes",
            "Read-only mode: nodes a leader would write to now, by vendor and kind (stamp, "
            "delete); no series unless --read-only.",
            0,
            ("vendor", "kind"),
        )
        if s is not None and s.would_write is not None:
            for vendor in self._vendors:
                for kind in ("stamp", "delete"):
                    would.add_metric([vendor, kind], s.would_write.get((vendor, kind), 0))
        yield would


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

        def per_vendor(name: str, doc: str) -> Counter:
            counter = Counter(name, doc, ["vendor"], registry=r)
            for vendor in self.vendor_keys:
                counter.labels(vendor=vendor)
            return counter

        self.evaluations = Counter(
            "hami_scheduler_evaluations", "Node evaluations (every vendor decided).", registry=r
        )
        self.decode_errors = per_vendor(
            "hami_scheduler_decode_errors",
            "Register values of the vendor that do not decode (each distinct value counted once per node).",
        )
        self.liveness_rule_errors = per_vendor(
            "hami_scheduler_liveness_rule_errors",
            "Times the vendor driver's liveness rule raised (each distinct error counted once per node).",
        )
        self.cleanups = per_vendor("hami_scheduler_cleanups", "Vendors found dead on a node and cleaned up.")
        self.cleanups_withheld = per_vendor(
            "hami_scheduler_cleanups_withheld",
            "Vendors found dead on a view not known current: not cleaned up, decided again once it is.",
        )
        self.stamps = per_vendor("hami_scheduler_stamps", "Handshake stamps handed to the patch writer.")
        self.handshake_deletes = per_vendor(
            "hami_scheduler_handshake_deletes", "Handshake deletes of cleanups handed to the patch writer."
        )
        self.dropped_not_leader = Counter(
            "hami_scheduler_dropped_not_leader",
            "Writes not sent because this replica stopped leading before their turn.",
            registry=r,
        )
        self.patch_conflicts = Counter(
            "hami_scheduler_patch_conflicts",
            "Conditional patches (cleanups) refused with 409 Conflict: the Node changed since it was "
            "judged; it is decided again on what it holds now.",
            registry=r,
        )
        self.wall_clock_steps = Counter(
            "hami_scheduler_wall_clock_steps",
            "Steps of the wall clock detected against the monotonic clock.",
            registry=r,
        )
        self.clock_step_restamps = per_vendor(
            "hami_scheduler_clock_step_restamps",
            "Stamps written again instead of a cleanup because the wall clock stepped since the stamp was "
            "written or first seen.",
        )
        self.api_requests = Counter(
            "hami_scheduler_api_requests",
            "API requests by verb, resource and result: the HTTP status class (2xx, 4xx, 5xx), or error "
            "when no answer came (connection refused, timeout).",
            ["verb", "resource", "result"],
            registry=r,
        )
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
        self.events_posted = Counter(
            "hami_scheduler_events_posted", "Events posted about Nodes, by reason.", ["reason"], registry=r
        )
        self.events_dropped = Counter(
            "hami_scheduler_events_dropped",
            "Events not posted: duplicate (same reason for the node and vendor lately), rate_limited (the "
            "node's burst is spent), queue_full, failed (the API server refused or did not answer).",
            ["reason", "cause"],
            registry=r,
        )
        for reason in event_reasons:
            self.events_posted.labels(reason=reason)
            for cause in EVENT_DROP_CAUSES:
                self.events_dropped.labels(reason=reason, cause=cause)
        self.leadership_changes = Counter(
            "hami_scheduler_leadership_changes",
            "Times this replica became leader or stopped leading.",
            registry=r,
        )
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
        counters = {
            "evaluations": self.evaluations,
            "decode_errors": self.decode_errors,
            "liveness_rule_errors": self.liveness_rule_errors,
            "cleanups": self.cleanups,
            "cleanups_withheld": self.cleanups_withheld,
            "stamps": self.stamps,
            "handshake_deletes": self.handshake_deletes,
            "dropped_not_leader": self.dropped_not_leader,
            "patch_conflicts": self.patch_conflicts,
            "wall_clock_steps": self.wall_clock_steps,
            "clock_step_restamps": self.clock_step_restamps,
            "events_posted": self.events_posted,
            "leadership_changes": self.leadership_changes,
        }
        return {name: total(counter) for name, counter in counters.items()}

    def text(self) -> str:
        """The ``/metrics`` text."""
        return exposition(self.registry).decode()
