"""The scheduler daemon: wires the reflector, the elector, the registrar, the view, the writer and HTTP.

One worker (the only writer of cache and memory) takes everything off one work queue: node names, the
resync tick, the peer check and the start of a term (docs/architecture.md, "Leadership").
"""

from __future__ import annotations

import gc
import logging
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from hami_core.clock import SYSTEM, Clock, WallSteps
from hami_core.durations import format_duration
from hami_core.kube.elector import ElectionConfig, LeaderElector
from hami_core.kube.events import EventRecorder
from hami_core.kube.port import Cluster, Conflict, NodeSnapshot
from hami_core.kube.ratelimit import TokenBucket
from hami_core.kube.reflector import Reflector
from hami_core.protocol.decide import CacheChange, VendorRules
from hami_core.protocol.states import VendorState
from hami_core.scheduler.cache import DeviceCache
from hami_core.scheduler.config import COMPONENT, SchedulerConfig
from hami_core.scheduler.explain import explain_node, explanation_json
from hami_core.scheduler.http import StatusServer
from hami_core.scheduler.metered import MeteredCluster
from hami_core.scheduler.metrics import LiveState, SchedulerMetrics, VendorCounts
from hami_core.scheduler.peer_check import PEER_ACTIVE_REASON, PeerCheck, peer_event_message
from hami_core.scheduler.registrar import (
    CLEANED_UP,
    EVENT_REASONS,
    INVALID_REGISTER,
    LIVENESS_RULE_FAILED,
    PAIR_SCORES_INVALID,
    Evaluation,
    Registrar,
    VendorEvent,
)
from hami_core.scheduler.standalone import Standalone
from hami_core.scheduler.trim import NodeTrim
from hami_core.scheduler.view import NodeView, PendingWrite, newer
from hami_core.scheduler.workqueue import WorkQueue
from hami_core.scheduler.writer import NotLeader, PatchWriter

__all__ = ["Scheduler"]

log = logging.getLogger(__name__)

_WORKER_TICK = 0.5
_LIVENESS_LIMIT = 30.0
#: Work-queue keys that are not node names (a node name is never empty and never holds a space).
_RESYNC = ""
_TERM = " term"
_PEER = " peer"
_UNSENT = " unsent"
#: The log records' ``reason`` of a warning (its Event has the longer reason).
_WARNING_CODES = {
    INVALID_REGISTER: "decode-error",
    LIVENESS_RULE_FAILED: "liveness-rule-failed",
    PAIR_SCORES_INVALID: "pair-scores-invalid",
}


class Scheduler:
    """One scheduler replica. ``start()``, then ``stop()`` (which releases the Lease if held)."""

    def __init__(
        self,
        cluster: Cluster,
        vendors: Sequence[VendorRules],
        config: SchedulerConfig | None = None,
        *,
        clock: Clock = SYSTEM,
        on_node_deleted: Callable[[str], object] = lambda node: None,
    ) -> None:
        if not vendors:
            raise ValueError("the scheduler needs at least one vendor driver")
        self.config = cfg = config or SchedulerConfig()
        self.cluster = cluster
        self.clock = clock
        self._on_node_deleted = on_node_deleted
        self.cache = DeviceCache()
        self.metrics = SchedulerMetrics(
            [v.vendor_key for v in vendors],
            live=self.live_state,
            event_reasons=(*EVENT_REASONS, PEER_ACTIVE_REASON),
        )
        # every request from here on is counted and timed, and writes as the scheduler's field manager
        cluster = MeteredCluster(cluster, self.metrics, field_manager=COMPONENT)
        self.registrar = Registrar(
            vendors,
            self.cache,
            selector=cfg.node_selector,
            window=timedelta(seconds=cfg.handshake_window),
            metrics=self.metrics,
        )
        self.queue: WorkQueue[str] = WorkQueue(clock=clock)
        #: What the store (and the view's PATCH replies) keep of a Node: what the vendors and selector read.
        self.trim = NodeTrim.of(vendors, cfg.node_selector)
        self.reflector = Reflector(cluster, self, clock=clock, keep=self.trim)
        self.view = NodeView(self.reflector.snapshot)
        self.elector: LeaderElector | Standalone
        if cfg.leader_elect and not cfg.read_only:
            self.elector = LeaderElector(
                cluster,
                ElectionConfig(
                    namespace=cfg.lease_namespace,
                    name=cfg.lease_name,
                    identity=cfg.identity,
                    lease_duration=cfg.lease_duration,
                    renew_deadline=cfg.renew_deadline,
                    retry_period=cfg.retry_period,
                ),
                on_started=self._leadership_changed,
                on_stopped=lambda: self._leadership_changed(None),
                clock=clock,
            )
        else:
            leads = not cfg.read_only
            self.elector = Standalone(on_started=self._leadership_changed, identity=cfg.identity, leads=leads)
        self.events = EventRecorder(
            cluster,
            component=COMPONENT,
            instance=cfg.identity,
            namespace=cfg.event_namespace,
            clock=clock,
            on_outcome=self.metrics.event_outcome,
        )
        self.writer = PatchWriter(
            cluster,
            limiter=TokenBucket(cfg.qps, cfg.burst, clock=clock),
            is_leader=self.elector.is_leader,
            on_applied=self._patch_applied,
            on_failed=self._patch_failed,
            max_in_flight=cfg.max_in_flight,
            metrics=self.metrics,
        )
        #: HAMi's own registrar, asked at start and on every resync (not in read-only mode: it writes
        #: nothing, and its RBAC reads Nodes only).
        self.peer = PeerCheck(
            cluster, None if cfg.read_only else cfg.hami_lease, (cfg.lease_namespace, cfg.lease_name)
        )
        self._http = StatusServer(self, cfg.http_host, cfg.http_port) if cfg.http_port is not None else None
        self._stop = clock.event()
        self._threads: list[threading.Thread] = []
        self._lock = threading.Lock()
        #: The term the worker has started (its full pass queued); writes are sent only in it.
        self._term_started = 0
        #: The elector says this replica holds a term (set on its thread): a write that cannot go now is
        #: a renewal running late, not a lost Lease.
        self._holds_term = False
        #: The nodes of the started term's full pass not evaluated yet (worker thread only).
        self._term_pending: set[str] | None = None
        #: The last term whose full pass was done in it (written by the worker, read anywhere).
        self._synced_term = 0
        #: (term, the reflector's ticket for the fresh list that term starts on): set whole, read anywhere.
        self._term_ticket: tuple[int, int] = (0, 0)
        #: Nodes whose cleanup was withheld on a view not known current (worker thread only).
        self._withheld: set[str] = set()
        self._gc_frozen = False
        #: The resourceVersion each node was last evaluated at (worker thread only): the resync's test.
        self._evaluated: dict[str, str] = {}
        #: Warnings seen while following, by (node, vendor key): posted as Events on becoming leader if
        #: still current (worker thread only).
        self._unposted: dict[tuple[str, str], VendorEvent] = {}
        #: Read-only: the patch a leader would send now, by node (written by the worker, read anywhere).
        self._would_write: dict[str, dict[str, str | None]] = {}
        #: Nodes whose conditional patch met a conflict, with the resourceVersion it was conditional on:
        #: queued again once the watch shows the Node past it (under ``_lock``).
        self._conflicted: dict[str, str] = {}
        #: The cleaned-up Events of conditional writes in flight, by the write's ``seq``: posted once the
        #: patch lands, moved to ``_unlanded`` when it does not (under ``_lock``).
        self._held: dict[int, list[VendorEvent]] = {}
        #: Cleaned-up Events of cleanups whose patch did not land, by node and vendor key (under ``_lock``):
        #: each goes with the patch making its cleanup again (docs/architecture.md, "Conditional deletes").
        self._unlanded: dict[str, dict[str, VendorEvent]] = {}
        #: Nodes whose write could not go while a renewal was late, decided again together once the replica
        #: may write in that term (under ``_lock``): ``_write_later``.
        self._unsent: set[str] = set()
        self._last_tick = clock.monotonic()
        #: Steps of the wall clock, looked for before every evaluation and at every resync (worker only).
        self._wall = WallSteps()

    # -- lifecycle ------------------------------------------------------------------------------------

    @property
    def http_address(self) -> tuple[str, int] | None:
        return self._http.address if self._http else None

    def start(self) -> None:
        log.info(
            "scheduler %s starting: vendors %s, selector %r, window %ss, resync %ss",
            self.config.identity,
            ", ".join(v.vendor_key for v in self.registrar.vendors),
            str(self.config.node_selector),
            self.config.handshake_window,
            self.config.resync,
        )
        self.events.start()
        if self._http is not None:
            self._http.start()
            log.info("serving status on http://%s:%d", *self._http.address)
        self.queue.add_after(_RESYNC, self.config.resync)
        if self.peer.where is not None:
            self.queue.add(_PEER)
        for target, name in (
            (self._work, "hami-worker"),
            (lambda: self.elector.run(self._stop, after_first_step=self._start_reflector), "hami-elector"),
        ):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)

    def _start_reflector(self) -> None:
        """The first list begins after the elector's first try of the Lease (docs/architecture.md,
        "Leadership"): a term won then is served by it."""
        with self._lock:  # started whole before ``stop`` joins it, or not at all
            if not self._stop.is_set():
                self.reflector.start()

    def stop(self, timeout: float = 10.0, *, release: bool = True) -> None:
        """Stop every loop; the elector releases the Lease so a follower takes over at once
        (``release=False``: left to expire, as a crashed replica's is, for tests)."""
        if not release:
            self.elector.abandon()
        with self._lock:  # the reflector is started whole or not at all (``_start_reflector``)
            self._stop.set()
        self.elector.wake()
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

    def settled(self) -> bool:
        """Nothing left to do until the clock moves or the cluster changes (for tests and the simulation,
        which advance a fake clock only once every replica has settled)."""
        reflector = self.reflector  # backing off, it neither lists nor shows the writes confirmed
        if not (reflector.backing_off() or (self.view.pending() == 0 and not reflector.listing_due())):
            return False
        return self.queue.idle() and self.writer.idle() and self.events.idle() and self.elector.idle()

    # -- reflector callbacks (reflector thread) ---------------------------------------------------------

    def on_upsert(self, old: NodeSnapshot | None, new: NodeSnapshot) -> None:
        self.view.observed(new)
        past_conflict = bool(self._conflicted) and self._past_conflict(new.name, new)
        relevant = self.registrar.relevant
        changed = old is None or old.uid != new.uid or relevant(old) != relevant(new)
        if past_conflict or changed:
            self.queue.add(new.name)

    def on_delete(self, last: NodeSnapshot) -> None:
        self.view.deleted(last.name)
        if self._conflicted:
            self._past_conflict(last.name, None)
        self.queue.add(last.name)

    def on_synced(self, *, relisted: bool) -> None:
        # ahead of the nodes the list queued: a leader then decides each node once, with its writes
        log.info("node cache %s: %d nodes", "relisted" if relisted else "synced", len(self.reflector.names()))
        self.queue.add_first(_TERM)

    # -- elector callbacks (elector thread) -------------------------------------------------------------

    def _leadership_changed(self, term: int | None) -> None:
        """The one place a leadership change enters; nothing is sent until the worker takes it in."""
        self.metrics.leadership_changes.inc()
        self._holds_term = term is not None
        if term is not None:
            self._term_ticket = (term, self.reflector.relist())  # on a list made after this moment
        self.queue.add_first(_TERM)

    # -- the worker -------------------------------------------------------------------------------------

    def _work(self) -> None:
        handlers = {
            _RESYNC: self._resync,
            _TERM: self._start_term,
            _PEER: self._check_peer,
            _UNSENT: self._send_unsent,
        }
        while not self._stop.is_set():
            key = self.queue.get(_WORKER_TICK)
            self._last_tick = self.clock.monotonic()
            try:
                if key is None:  # a tick between keys: drop a watch that shows no progress, decide again
                    self.reflector.check_progress()  # what waited for a current view
                    self._decide_withheld()
                elif key in handlers:
                    handlers[key]()
                else:
                    self._evaluate(key)
            except Exception:
                log.exception(
                    "scheduler worker: unexpected error%s; carrying on", " in its tick" if key is None else ""
                )
            finally:
                if key is not None:
                    self.queue.done(key)

    def _view_current(self) -> bool:
        """The view can be vouched for (spec 5b): the reflector's is current and, in a term, was listed
        afresh after the term began (a watch past its progress deadline is dropped here)."""
        self.reflector.check_progress()
        if not self._in_term():
            return self.reflector.current(0)
        term, ticket = self._term_ticket
        return term == self.elector.term and self.reflector.current(ticket)

    def _decide_withheld(self) -> None:
        if self._withheld and self._view_current():
            withheld, self._withheld = self._withheld, set()
            log.info("the node view is current again: deciding %d withheld nodes", len(withheld))
            for name in sorted(withheld):
                self.queue.add(name)

    def _in_term(self) -> bool:
        """Evaluating as the replica in charge: the leader, or a read-only replica (always)."""
        return self.elector.term > 0 if self.config.read_only else self.elector.is_leader()

    def _may_write(self) -> bool:
        """Leading, not read-only, and the worker has started this term (its full pass is queued)."""
        return (
            not self.config.read_only and self.elector.is_leader() and self._term_started == self.elector.term
        )

    def _start_term(self) -> None:
        self._decide_withheld()
        term = self.elector.term
        if not self._in_term() or term == self._term_started or not self.reflector.has_synced:
            return
        if not self._view_current():
            return  # the term's fresh list is not in yet: its end queues this key again
        names = set(self.reflector.names()) | self.registrar.known_nodes()
        self._term_started = term
        self._term_pending = names
        role = "read-only" if self.config.read_only else "leader"
        log.info("%s for term %d: full pass over %d nodes", role, term, len(names), extra={"term": term})
        self._post_unposted()
        for name in sorted(names):
            self.queue.add(name)
        self._note_evaluated(None)

    def _check_peer(self) -> None:
        """Is HAMi's registrar active? (docs/architecture.md, "Leadership": Beside HAMi)."""
        self.queue.add_after(_PEER, self.config.resync)
        state = self.peer.check(self.clock.now())
        self.metrics.peer_registrar_active.set(state.active)
        refusing = self.config.refuse_beside_hami
        if state.started:
            self.events.record_about(
                {
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "namespace": self.config.lease_namespace,
                    "name": self.config.lease_name,
                },
                type="Warning",
                reason=PEER_ACTIVE_REASON,
                message=peer_event_message(state, refusing=refusing),
            )
        if refusing:  # never active when HAMi's Lease is this one's own: hold(None) holds nothing
            self.elector.hold(f"HAMi's scheduler is active ({state.reason})" if state.active else None)

    def _look_at_the_clocks(self, now: datetime, mono: float) -> None:
        """A step of the wall clock (spec 5b): logged once, counted, every node decided again."""
        step = self._wall.check(now, mono)
        if step is None:
            return
        self.metrics.wall_clock_steps.inc()
        names = set(self.reflector.names()) | self.registrar.known_nodes()
        log.warning(
            "the wall clock stepped %s by %s: stamps are aged on the monotonic clock, and the %d nodes "
            "are decided again (stamps written again, nothing cleaned because of the step)",
            "forward" if step > 0 else "back",
            format_duration(abs(step)),
            len(names),
            extra={"reason": "wall-clock-step"},
        )
        for name in names:
            self.queue.add(name)

    def _evaluate(self, name: str) -> None:
        now = self.clock.now()
        mono = self.clock.monotonic()
        self._look_at_the_clocks(now, mono)
        node = self.view.get(name)
        evaluation = self.registrar.evaluate(
            name,
            node,
            now=now,
            view_current=self._view_current(),
            mono=mono,
            wall_step_at=self._wall.last_step_at,
        )
        if evaluation.withheld:
            self._withheld.add(name)
        else:
            self._withheld.discard(name)
        if evaluation.node_gone:  # before the report: what follows is about the new object, if any
            self._forget_node(name)
        if self._unlanded and not evaluation.conditional:  # no cleanup is pending on the node any more
            with self._lock:
                self._unlanded.pop(name, None)
        if node is None:
            self._evaluated.pop(name, None)
        else:
            self._evaluated[name] = node.resource_version
        held = False  # a cleanup's Events wait for its patch to land
        if self.config.read_only:
            with self._lock:
                if evaluation.patch and node is not None:
                    self._would_write[name] = dict(evaluation.patch)
                else:
                    self._would_write.pop(name, None)
        elif evaluation.patch and node is not None:
            if self._may_write():
                held = self._send(node, evaluation)
            else:  # not sent: a cleanup's Events wait for the patch that makes it again, as when one fails
                self._keep_unlanded(name, evaluation.events)
                self._write_later(name)
        self._report(evaluation, held=held)
        if evaluation.recheck_at is not None:
            delay = (evaluation.recheck_at - now).total_seconds()
            self.queue.add_after(name, max(0.0, delay) + 0.001)
        self._note_evaluated(name)

    def _send(self, node: NodeSnapshot, evaluation: Evaluation) -> bool:
        """Hand the evaluation's patch to the writer; True when it is a cleanup's, whose Events wait for it
        to land (docs/architecture.md, "Conditional deletes")."""
        for vendor, decision in evaluation.decisions.items():
            if decision.write is not None:
                stamp = decision.write.value is not None
                (self.metrics.stamps if stamp else self.metrics.handshake_deletes).labels(vendor=vendor).inc()
        write = self.view.expect(node, evaluation.patch, conditional=evaluation.conditional)
        held = write.precondition is not None
        if held:
            with self._lock:  # before the write is submitted: its outcome may come at once
                unlanded = self._unlanded.pop(node.name, {})
                cleaned = _cleanups(evaluation.events)
                for vendor, event in unlanded.items():  # an earlier cleanup, made again by this patch
                    again = evaluation.decisions.get(vendor)
                    if again is not None and again.conditional:
                        cleaned.setdefault(vendor, event)
                self._held[write.seq] = list(cleaned.values())
        self.writer.submit(write)
        return held

    def _keep_unlanded(self, name: str, events: Sequence[VendorEvent]) -> None:
        """The cleanups of ``events`` did not happen: their Events wait for the patch making them again."""
        if cleaned := _cleanups(events):
            with self._lock:
                self._unlanded.setdefault(name, {}).update(cleaned)

    def _write_later(self, name: str) -> None:
        """A write decided for ``name`` cannot go in the term this replica holds and has started: its
        renewal is late. Decided again once the renewal has landed (looked at every retry period, one
        look for all such nodes); a lost Lease ends this. A term not started yet needs none of it: its full
        pass decides every node."""
        if self._holds_term and self._term_started == self.elector.term:
            with self._lock:
                first = not self._unsent
                self._unsent.add(name)
            if first:
                self.queue.add_after(_UNSENT, self.config.retry_period)

    def _send_unsent(self) -> None:
        """The late renewal landed: decide the unsent nodes again; still late: look again later."""
        late = self._holds_term and self._term_started == self.elector.term and not self._may_write()
        with self._lock:
            if late and self._unsent:
                self.queue.add_after(_UNSENT, self.config.retry_period)
                return
            names, self._unsent = self._unsent, set()
        if self._may_write():  # else the Lease is lost: the next term's full pass decides them
            for name in sorted(names):
                self.queue.add(name)

    def would_writes(self) -> dict[str, dict[str, str | None]]:
        """Read-only: every node a leader would write to now, and the merge patch it would send."""
        with self._lock:
            return {name: dict(patch) for name, patch in self._would_write.items()}

    def _forget_node(self, name: str) -> None:
        """The Node object ``name`` held is gone (deleted or replaced): drop what the daemon kept of it."""
        self.events.forget(name)
        with self._lock:
            self._unlanded.pop(name, None)
        for key in [k for k in self._unposted if k[0] == name]:
            del self._unposted[key]
        self.queue.forget(name)
        try:
            self._on_node_deleted(name)
        except Exception:
            log.exception("node-deleted hook failed", extra={"node": name})

    def _report(self, evaluation: Evaluation, *, held: bool = False) -> None:
        """Log what the evaluation decided and, on the replica that writes, post its Events (a bad value
        seen while following is posted on becoming leader, if still current: ``_post_unposted``)."""
        node = evaluation.node
        for warning in evaluation.warnings:
            detail = warning.message.removeprefix(f"node {node}: ")  # the record names the node already
            code = _WARNING_CODES.get(warning.reason)
            log.warning(
                "degraded: %s", detail, extra={"node": node, "vendor": warning.vendor_key, "reason": code}
            )
            if self._may_write():  # every replica logs it; only the one that writes posts the Event
                self._post(warning, detail)
            elif not self.config.read_only:
                self._unposted[(node, warning.vendor_key)] = warning
        for vendor, state in evaluation.first_states.items():
            if state is VendorState.AWAITING_SIGN_OF_LIFE:  # never registered here: say so once
                decision = evaluation.decisions[vendor]
                log.info(
                    "first seen %s: %s (liveness: %s)",
                    state.value,
                    decision.reason.value,
                    decision.verdict.value,
                    extra={"node": node, "vendor": vendor, "reason": decision.reason.value},
                )
        events = {e.vendor_key: e for e in evaluation.events}
        for vendor, decision in evaluation.decisions.items():
            fields = {"node": node, "vendor": vendor, "reason": decision.reason.value}
            event = events.get(vendor)
            if event is not None:
                level = logging.WARNING if event.type == "Warning" else logging.INFO
                log.log(level, "%s", event.message, extra=fields)
                if self._may_write() and not (held and event.reason == CLEANED_UP):
                    self._post(event, event.message)
            elif decision.cache is not CacheChange.KEEP:
                log.info("%s (liveness: %s)", decision.reason.value, decision.verdict.value, extra=fields)
            elif log.isEnabledFor(logging.DEBUG):
                write = decision.write
                sends = "" if write is None else "; stamp" if write.value is not None else "; delete stamp"
                log.debug(
                    "%s (liveness: %s%s)", decision.reason.value, decision.verdict.value, sends, extra=fields
                )

    def _post(self, event: VendorEvent, text: str) -> None:
        self.events.record(
            event.node, event.uid, vendor=event.vendor_key, type=event.type, reason=event.reason, message=text
        )

    def _post_unposted(self) -> None:
        """Post the Events for bad values seen while following that are still what the cache shows."""
        pending, self._unposted = self._unposted, {}
        for warning in pending.values():
            entry = self.cache.vendor(warning.node, warning.vendor_key)
            if entry is None:
                continue
            degraded = entry.state is VendorState.DEGRADED and entry.error == warning.message
            unscored = warning.reason == PAIR_SCORES_INVALID and not entry.pair_scores
            if degraded or unscored:
                self._post(warning, warning.message.removeprefix(f"node {warning.node}: "))

    def _note_evaluated(self, name: str | None) -> None:
        pending = self._term_pending
        if pending is None:
            return
        if name is not None:
            pending.discard(name)
        if pending:
            return
        self._term_pending = None
        if self.elector.term != self._term_started:
            return
        term = self._synced_term = self._term_started
        self.metrics.last_full_pass.set(self.clock.now().timestamp())
        log.info("cache synced for term %d", term, extra={"term": term})
        if self.config.freeze_gc_after_sync and not self._gc_frozen:
            self._gc_frozen = True
            gc.collect()
            gc.freeze()
            log.debug("%d objects moved to the permanent generation", gc.get_freeze_count())

    def _resync(self) -> None:
        """Queue every node watched at another version than it was evaluated at, or no longer watched."""
        self.queue.add_after(_RESYNC, self.config.resync)
        self._look_at_the_clocks(self.clock.now(), self.clock.monotonic())
        evaluated = self._evaluated
        watched = self.reflector.items()
        for name, node in watched.items():
            if evaluated.get(name) != node.resource_version:
                self.queue.add(name)
        for name in evaluated.keys() - watched.keys():
            self.queue.add(name)

    # -- writer callbacks (patch threads) ---------------------------------------------------------------

    def _take_held(self, write: PendingWrite) -> list[VendorEvent]:
        """The cleaned-up Events held for a conditional ``write`` (gone from the hold)."""
        if write.precondition is None:
            return []
        with self._lock:
            return self._held.pop(write.seq, [])

    def _patch_applied(self, write: PendingWrite, reply: NodeSnapshot) -> None:
        for event in self._take_held(write):  # the cleanup happened: now it is news
            self._post(event, event.message)
        self.queue.forget(write.node)
        if self.view.applied(write, self.trim(reply)):
            self.queue.add(write.node)

    def _patch_failed(self, write: PendingWrite, error: Exception) -> None:
        """Decided again on what the Node holds, after the node's backoff; after a conflict, once the
        watch shows the Node past the version the patch was conditional on (docs/architecture.md)."""
        self.view.failed(write)
        held = self._take_held(write)
        if held:
            log.debug("the cleanup's patch did not land: its Event waits for it", extra={"node": write.node})
            self._keep_unlanded(write.node, held)
        if self._stop.is_set():
            return
        if isinstance(error, NotLeader):
            self._write_later(write.node)
        elif isinstance(error, Conflict) and write.precondition is not None:
            with self._lock:
                current = self.reflector.snapshot(write.node)
                if current is not None and not newer(current.resource_version, write.precondition):
                    self._conflicted[write.node] = write.precondition
                    return
            self.queue.add(write.node)
        else:
            self.queue.add_rate_limited(write.node)

    def _past_conflict(self, name: str, node: NodeSnapshot | None) -> bool:
        """The watch shows ``node`` (``None``: deleted): True when it is past the version a conflicted
        patch of it was conditional on (then the node is no longer waited for)."""
        with self._lock:
            rv = self._conflicted.get(name)
            if rv is None or (node is not None and not newer(node.resource_version, rv)):
                return False
            del self._conflicted[name]
            return True

    # -- the view (any thread) --------------------------------------------------------------------------

    def alive(self) -> bool:
        return not self._stop.is_set() and self.clock.monotonic() - self._last_tick < _LIVENESS_LIMIT

    def ready(self) -> bool:
        """Leader (or read-only), the cache is complete for the current term (not a stale sync from an
        earlier one), and the view is current (spec 5b)."""
        if not self._in_term() or self._synced_term != self.elector.term:
            return False
        return self.reflector.has_synced and self._view_current()

    def status(self) -> dict[str, Any]:
        return {
            "identity": self.config.identity,
            "read_only": self.config.read_only,
            "peer_registrar_active": self.peer.active,
            "leader": self.elector.is_leader(),
            "holder": self.elector.holder,
            "term": self.elector.term,
            "synced_term": self._synced_term,
            "ready": self.ready(),
            "view": self._view_json(),
            "nodes_watched": len(self.reflector.names()),
            "nodes_registered": len(self.cache.nodes()),
            "devices": self.cache.device_count(),
            "vendors": [v.vendor_key for v in self.registrar.vendors],
            "settings": self.settings(),
            "counters": {name: int(value) for name, value in self.metrics.totals().items()}
            | dict(self.writer.counters),
        }

    def _view_json(self) -> dict[str, Any]:
        state = self.reflector.view_state()
        current = self._view_current()
        because = state.stale_because
        if because is None and not current:
            because = "the term's fresh list is not in yet"
        return {
            "current": current,
            "stale_because": because,
            "watch_progress_age_seconds": round(state.progress_age, 3),
            "lists": state.lists,
            "times_stale": state.stale_count,
            "store_rewinds": self.reflector.store_rewinds,
        }

    def settings(self) -> dict[str, Any]:
        """What ``hami doctor`` needs to judge as this scheduler does (``/status``'s ``settings``)."""
        cfg = self.config
        offset = self.clock.now().strftime("%z")
        return {
            "handshake_window_seconds": cfg.handshake_window,
            "node_selector": str(cfg.node_selector),
            "timezone": f"{offset[:3]}:{offset[3:]}" if offset else "UTC",
            "lease": {"namespace": cfg.lease_namespace, "name": cfg.lease_name} if cfg.leader_elect else None,
            "hami_lease": "/".join(cfg.hami_lease) if cfg.hami_lease else None,
            "refuse_beside_hami": cfg.refuse_beside_hami,
        }

    def cache_json(self, states: frozenset[VendorState] | None = None) -> dict[str, Any]:
        """``/cache``, and ``/cache?state=...``: every node where a vendor is in one of ``states``."""
        if states is None:
            return {"nodes": self.cache.to_json()}
        nodes: dict[str, Any] = {}
        for node, vendors in self.registrar.states_in(states).items():
            cached = self.cache.node(node)
            shown = nodes[node] = {}
            for key, (state, reason) in vendors.items():
                entry = cached.get(key)
                body = entry.to_json() if entry else {"error": None, "updated_at": None, "devices": []}
                shown[key] = {**body, "vendor": key, "state": state.value, "reason": reason.value}
        return {"nodes": nodes, "states": sorted(state.value for state in states)}

    def node_json(self, node: str) -> dict[str, Any] | None:
        """``/cache/<node>`` (``scheduler/explain.py``); ``None`` for a Node this replica does not watch.
        Any thread: the view and the cache return copies, the memory's entries are immutable."""
        snapshot = self.view.get(node)
        if snapshot is None:
            return None
        registrar = self.registrar
        explanation = explain_node(
            node,
            snapshot,
            registrar.vendors,
            lambda vendor: registrar.memory(node, vendor),
            selector=self.config.node_selector,
            now=self.clock.now(),
            window=timedelta(seconds=self.config.handshake_window),
            mono=self.clock.monotonic(),
            wall_step_at=self._wall.last_step_at,
        )
        body = explanation_json(explanation)
        cached = self.cache.node(node)
        for key, vendor in body["vendors"].items():
            entry = cached.get(key)
            shown = entry.to_json() if entry else {"devices": [], "updated_at": None, "pair_scores": {}}
            vendor["in_cache"] = entry is not None
            vendor.update({field: shown[field] for field in ("devices", "updated_at", "pair_scores")})
        body["identity"] = self.config.identity
        body["leader"] = self.elector.is_leader()
        body["this_replica_writes"] = self._may_write()
        return body

    def metrics_text(self) -> str:
        return self.metrics.text()

    def live_state(self) -> LiveState:
        """The daemon's state for the metrics' gauges, read once per scrape (any thread)."""
        devices: Counter[str] = Counter()
        for name in self.cache.nodes():
            for key, entry in self.cache.node(name).items():
                devices[key] += len(entry.devices)
        states: dict[str, dict[str, int]] = {}
        for (key, state), count in self.registrar.state_counts().items():
            states.setdefault(key, {})[state.value] = count
        keys = [v.vendor_key for v in self.registrar.vendors]
        vendors = {key: VendorCounts(states=states.get(key, {}), devices=devices[key]) for key in keys}
        leader = self.elector.is_leader()
        listed = self.reflector.has_synced
        view = self.reflector.view_state()
        would: Counter[tuple[str, str]] | None = None
        if self.config.read_only:  # a cleanup's marker is not counted: its handshake delete is
            vendor_of = {v.handshake_annotation: v.vendor_key for v in self.registrar.vendors}
            would = Counter(
                (vendor_of[annotation], "stamp" if value is not None else "delete")
                for patch in self.would_writes().values()
                for annotation, value in patch.items()
                if annotation in vendor_of
            )
        return LiveState(
            leader=leader,
            ready=self.ready(),
            term=self.elector.term,
            cache_synced=listed and (not leader or self._synced_term == self.elector.term),
            nodes_watched=len(self.reflector.names()),
            view_current=self._view_current(),
            watch_progress_age_seconds=view.progress_age,
            times_stale=view.stale_count,
            work_queue_depth=len(self.queue),
            work_queue_delayed=self.queue.delayed(),
            vendors=vendors,
            would_write=would,
        )


def _cleanups(events: Sequence[VendorEvent]) -> dict[str, VendorEvent]:
    """The cleaned-up Events among ``events``, by vendor key."""
    return {e.vendor_key: e for e in events if e.reason == CLEANED_UP}
