"""The scheduler daemon: wires the reflector, the elector, the registrar, the writer and the HTTP view.

Threads: the node reflector (list+watch), the elector (Lease), one worker (the only writer of cache and
memory), a resync ticker, the patch pool, the Event poster and the HTTP server. Every replica keeps its
cache warm; only the leader writes and reports ready, and only once its cache is complete for the
current term.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from hami_core.kube.elector import ElectionConfig, LeaderElector
from hami_core.kube.events import EventRecorder
from hami_core.kube.port import Cluster, NodeSnapshot
from hami_core.kube.ratelimit import TokenBucket
from hami_core.kube.reflector import Reflector
from hami_core.protocol.decide import CacheChange, VendorRules
from hami_core.scheduler.cache import DeviceCache
from hami_core.scheduler.config import SchedulerConfig
from hami_core.scheduler.http import StatusServer
from hami_core.scheduler.registrar import Evaluation, Registrar, VendorWarning
from hami_core.scheduler.workqueue import WorkQueue
from hami_core.scheduler.writer import PatchWriter

__all__ = ["Scheduler"]

log = logging.getLogger(__name__)

_WORKER_TICK = 0.5
_LIVENESS_LIMIT = 30.0


def _local_now() -> datetime:
    return datetime.now().astimezone()


class Scheduler:
    """One scheduler replica. ``start()``, then ``stop()`` (which releases the Lease if held)."""

    def __init__(
        self,
        cluster: Cluster,
        vendors: Sequence[VendorRules],
        config: SchedulerConfig | None = None,
        *,
        clock: Callable[[], datetime] = _local_now,
        monotonic: Callable[[], float] = time.monotonic,
        on_node_deleted: Callable[[str], object] = lambda node: None,
    ) -> None:
        if not vendors:
            raise ValueError("the scheduler needs at least one vendor driver")
        self.config = cfg = config or SchedulerConfig()
        self._cluster = cluster
        self._clock = clock
        self._monotonic = monotonic
        self._on_node_deleted = on_node_deleted
        self.cache = DeviceCache()
        self.registrar = Registrar(vendors, self.cache, selector=cfg.node_selector,
                                   window=timedelta(seconds=cfg.handshake_window))
        self.queue = WorkQueue(monotonic=monotonic)
        self.reflector = Reflector(cluster, self)
        self.elector = LeaderElector(
            cluster,
            ElectionConfig(namespace=cfg.lease_namespace, name=cfg.lease_name, identity=cfg.identity,
                           lease_duration=cfg.lease_duration, renew_deadline=cfg.renew_deadline,
                           retry_period=cfg.retry_period),
            on_started=self._on_started_leading,
            on_stopped=self._on_stopped_leading,
        )
        self.events = EventRecorder(cluster, component="hami-scheduler", instance=cfg.identity,
                                    namespace=cfg.event_namespace)
        self.writer = PatchWriter(
            cluster,
            limiter=TokenBucket(cfg.qps, cfg.burst),
            is_leader=self.elector.is_leader,
            on_failure=self.patch_failed,
            on_success=self.patch_succeeded,
            max_in_flight=cfg.max_in_flight,
        )
        self._http = StatusServer(self, cfg.http_host, cfg.http_port) if cfg.http_port is not None else None
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        self._term_to_sync: int | None = None
        self._term_pending: tuple[int, set[str]] | None = None
        self._synced_term = 0
        self._leadership_changed = False
        self._patch_failures: dict[str, int] = {}
        #: Warnings seen while following, by (node, vendor key): posted as Events on becoming leader if
        #: still current (worker thread only).
        self._unposted: dict[tuple[str, str], VendorWarning] = {}
        self._last_tick = monotonic()

    # -- lifecycle ------------------------------------------------------------------------------------

    @property
    def cluster(self) -> Cluster:
        """The cluster this replica talks to."""
        return self._cluster

    @property
    def http_address(self) -> tuple[str, int] | None:
        return self._http.address if self._http else None

    def start(self) -> None:
        log.info("scheduler %s starting: vendors %s, selector %r, window %ss, resync %ss",
                 self.config.identity, ", ".join(v.vendor_key for v in self.registrar.vendors),
                 str(self.config.node_selector), self.config.handshake_window, self.config.resync)
        self.events.start()
        if self._http is not None:
            self._http.start()
            log.info("serving status on http://%s:%d", *self._http.address)
        self.reflector.start()
        for target, name in ((self._work, "hami-worker"), (self._resync, "hami-resync"),
                             (lambda: self.elector.run(self._stop), "hami-elector")):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def stop(self, timeout: float = 10.0, *, release: bool = True) -> None:
        """Stop every loop; the elector releases the Lease so a follower takes over at once.

        ``release=False`` leaves the Lease to expire, as a crashed replica would (for tests).
        """
        if not release:
            self.elector.abandon()
        self._stop.set()
        self.queue.shutdown()
        self.reflector.stop(timeout)
        for thread in self._threads:
            thread.join(timeout)
        self.writer.close(timeout)
        self.events.stop(timeout)
        if self._http is not None:
            self._http.stop()
        log.info("scheduler %s stopped", self.config.identity)

    def request_stop(self) -> None:
        """Ask ``wait`` to return (safe from a signal handler); call ``stop`` afterwards."""
        self._stop.set()

    def wait(self) -> None:
        """Block until ``stop`` is called from elsewhere (a signal handler)."""
        while not self._stop.wait(1.0):
            pass

    # -- reflector callbacks (reflector thread) ---------------------------------------------------------

    def on_upsert(self, old: NodeSnapshot | None, new: NodeSnapshot) -> None:
        if old is None or old.uid != new.uid or self.registrar.relevant(old) != self.registrar.relevant(new):
            self.queue.add(new.name)

    def on_delete(self, last: NodeSnapshot) -> None:
        self.queue.add(last.name)

    def on_synced(self, *, relisted: bool) -> None:
        log.info("node cache %s: %d nodes", "relisted" if relisted else "synced",
                 len(self.reflector.names()))
        self._queue_all()

    # -- elector callbacks (elector thread) -------------------------------------------------------------

    def _on_started_leading(self, term: int) -> None:
        with self._lock:
            self._term_to_sync = term
            self._leadership_changed = True

    def _on_stopped_leading(self) -> None:
        with self._lock:
            self._term_to_sync = None
            self._term_pending = None
            self._leadership_changed = True

    # -- the worker -------------------------------------------------------------------------------------

    def _work(self) -> None:
        while not self._stop.is_set():
            self._last_tick = self._monotonic()
            try:
                self._start_term_if_due()
                name = self.queue.get(_WORKER_TICK)
                if name is not None:
                    self._evaluate(name)
            except Exception:
                log.exception("scheduler worker: unexpected error; carrying on")

    def _writes(self) -> bool:
        """Whether this evaluation may write: leading, and the worker has taken the leadership change in
        (until then, a stamp decided now would be forgotten as in flight and written a second time)."""
        with self._lock:
            change_pending = self._leadership_changed
        return not change_pending and self.elector.is_leader()

    def _start_term_if_due(self) -> None:
        with self._lock:
            changed, self._leadership_changed = self._leadership_changed, False
            term = self._term_to_sync
        if changed:
            self.registrar.forget_in_flight()
        if term is None or not self.reflector.has_synced:
            return
        names = set(self.reflector.names()) | self.registrar.known_nodes()
        with self._lock:
            if self._term_to_sync != term:
                return
            self._term_to_sync = None
            self._term_pending = (term, names)
        log.info("leader for term %d: full pass over %d nodes", term, len(names))
        self._post_unposted()
        for name in sorted(names):
            self.queue.add(name)
        self._note_evaluated(None)

    def _evaluate(self, name: str) -> None:
        now = self._clock()
        node = self.reflector.snapshot(name)
        evaluation = self.registrar.evaluate(name, node, now=now, writes=self._writes())
        if evaluation.patch:
            self.writer.submit(name, evaluation.patch)
        if evaluation.node_gone:  # before the report: what follows is about the new object, if any
            self._forget_node(name)
        self._report(evaluation)
        if evaluation.recheck_at is not None:
            delay = (evaluation.recheck_at - now).total_seconds()
            self.queue.add_after(name, max(0.0, delay) + 0.001)
        self._note_evaluated(name)

    def _forget_node(self, name: str) -> None:
        """The Node object ``name`` held is gone (deleted or replaced): drop what the daemon kept of it."""
        self.events.forget(name)
        for key in [k for k in self._unposted if k[0] == name]:
            del self._unposted[key]
        with self._lock:
            self._patch_failures.pop(name, None)
        try:
            self._on_node_deleted(name)
        except Exception:
            log.exception("node %s: node-deleted hook failed", name)

    def _report(self, evaluation: Evaluation) -> None:
        for warning in evaluation.warnings:
            log.warning("node %s: %s degraded (%s): %s", warning.node, warning.vendor_key, warning.reason,
                        warning.message)
            if self.elector.is_leader():  # every replica logs it; only the one that writes posts the Event
                self.events.warn(warning.node, warning.uid, warning.reason, warning.message)
            else:
                self._unposted[(warning.node, warning.vendor_key)] = warning
        for vendor, decision in evaluation.decisions.items():
            if decision.cache is not CacheChange.KEEP:
                log.info("node %s: %s %s (liveness: %s)", evaluation.node, vendor, decision.reason.value,
                         decision.verdict.value)

    def _post_unposted(self) -> None:
        """Post the Events for bad values seen while following that are still what the cache shows."""
        pending, self._unposted = self._unposted, {}
        for warning in pending.values():
            entry = self.cache.vendor(warning.node, warning.vendor_key)
            if entry is not None and entry.state == "degraded" and entry.error == warning.message:
                self.events.warn(warning.node, warning.uid, warning.reason, warning.message)

    def _note_evaluated(self, name: str | None) -> None:
        with self._lock:
            if self._term_pending is None:
                return
            term, pending = self._term_pending
            if name is not None:
                pending.discard(name)
            if pending:
                return
            self._term_pending = None
            if self.elector.term != term:
                return
            self._synced_term = term
        log.info("cache synced for term %d", term)

    def _resync(self) -> None:
        """Every resync period, re-queue every watched node (no API call: the reflector's store)."""
        while not self._stop.wait(self.config.resync):
            self._queue_all()

    def _queue_all(self) -> None:
        for name in self.reflector.names():
            self.queue.add(name)

    # -- writer callbacks (patch threads) ---------------------------------------------------------------

    def patch_failed(self, node: str, patch: Any, error: Exception) -> None:
        self.registrar.patch_failed(node, patch)
        if not self.elector.is_leader() or self._stop.is_set():
            return
        with self._lock:
            failures = self._patch_failures.get(node, 0) + 1
            self._patch_failures[node] = failures
        self.queue.add_after(node, min(30.0, 0.5 * 2 ** min(failures, 6)))

    def patch_succeeded(self, node: str) -> None:
        with self._lock:
            self._patch_failures.pop(node, None)

    # -- the view (any thread) --------------------------------------------------------------------------

    def alive(self) -> bool:
        return not self._stop.is_set() and self._monotonic() - self._last_tick < _LIVENESS_LIMIT

    def ready(self) -> bool:
        """Leader, and the cache is complete for the current term (not a stale sync from an earlier one)."""
        if not self.elector.is_leader():
            return False
        with self._lock:
            synced = self._synced_term
        return synced == self.elector.term and self.reflector.has_synced

    def status(self) -> dict[str, Any]:
        with self._lock:
            synced_term = self._synced_term
        return {
            "identity": self.config.identity,
            "leader": self.elector.is_leader(),
            "holder": self.elector.holder,
            "term": self.elector.term,
            "synced_term": synced_term,
            "ready": self.ready(),
            "nodes_watched": len(self.reflector.names()),
            "nodes_registered": len(self.cache.nodes()),
            "devices": self.cache.device_count(),
            "vendors": [v.vendor_key for v in self.registrar.vendors],
            "counters": dict(self.registrar.counters + self.writer.counters),
        }

    def cache_json(self) -> dict[str, Any]:
        return {"nodes": self.cache.to_json()}

    def node_json(self, node: str) -> dict[str, Any] | None:
        vendors = self.cache.node(node)
        if not vendors:
            return None
        return {"node": node, "vendors": {k: e.to_json() for k, e in sorted(vendors.items())}}

    def metrics_text(self) -> str:
        status = self.status()
        lines = [
            "# TYPE hami_scheduler_leader gauge",
            f"hami_scheduler_leader {int(status['leader'])}",
            "# TYPE hami_scheduler_ready gauge",
            f"hami_scheduler_ready {int(status['ready'])}",
            "# TYPE hami_scheduler_term gauge",
            f"hami_scheduler_term {status['term']}",
            "# TYPE hami_scheduler_nodes_watched gauge",
            f"hami_scheduler_nodes_watched {status['nodes_watched']}",
            "# TYPE hami_scheduler_nodes_registered gauge",
            f"hami_scheduler_nodes_registered {status['nodes_registered']}",
            "# TYPE hami_scheduler_devices gauge",
            f"hami_scheduler_devices {status['devices']}",
            "# TYPE hami_scheduler_events_posted_total counter",
            f"hami_scheduler_events_posted_total {self.events.posted}",
        ]
        for name, value in sorted(status["counters"].items()):
            lines += [f"# TYPE hami_scheduler_{name}_total counter", f"hami_scheduler_{name}_total {value}"]
        return "\n".join(lines) + "\n"
