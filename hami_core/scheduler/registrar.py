"""The registrar: turns one node's snapshot (as ``scheduler/view.py`` shows it) into decisions for every
vendor, the single writer of the device cache and of the per node+vendor memory; no I/O. It returns the
one merge patch the protocol asks for now and when to look again (docs/architecture.md, "One node event,
end to end", steps 4-6); leader and follower decide alike, only the leader sends.
"""

from __future__ import annotations

import functools
import logging
import operator
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Literal

import attrs

from hami_core.kube.packed import kept_form
from hami_core.kube.port import NodeSnapshot
from hami_core.protocol.decide import (
    CacheChange,
    Decision,
    Reason,
    VendorMemory,
    VendorRules,
    Verdict,
)
from hami_core.protocol.errors import DecodeError
from hami_core.protocol.evaluate import evaluate
from hami_core.protocol.handshake import DEFAULT_WINDOW
from hami_core.protocol.liveness import reads_capacity
from hami_core.protocol.marker import fingerprint
from hami_core.protocol.nodesource import FromNode
from hami_core.protocol.pairscores import decode_pair_scores, scores_for
from hami_core.protocol.states import KEPT_STATES, VendorState, state_of
from hami_core.scheduler.cache import DeviceCache, VendorEntry
from hami_core.scheduler.explain import CLEANED_UP, READMITTED, REGISTERED, registration_event
from hami_core.scheduler.metrics import SchedulerMetrics
from hami_core.scheduler.observe import observe, source_key
from hami_core.scheduler.selector import NodeSelector

__all__ = ["CLEANED_UP", "EVENT_REASONS", "Evaluation", "Registrar", "VendorEvent"]

log = logging.getLogger(__name__)

_NOTHING_KNOWN = VendorMemory()
_READ = operator.attrgetter(
    "register_annotation", "handshake_annotation", "marker_annotation", "pair_scores_annotation"
)

#: Event reasons of the warnings: a register value that does not decode, a driver's liveness rule that raised.
INVALID_REGISTER = "HamiRegisterAnnotationInvalid"
LIVENESS_RULE_FAILED = "HamiLivenessRuleFailed"
#: Event reason of a pair-score value that does not decode: the devices stay, without scores (spec 1b).
PAIR_SCORES_INVALID = "HamiPairScoresInvalid"
EVENT_REASONS = (
    INVALID_REGISTER,
    LIVENESS_RULE_FAILED,
    PAIR_SCORES_INVALID,
    CLEANED_UP,
    REGISTERED,
    READMITTED,
)


@attrs.frozen(kw_only=True)
class VendorEvent:
    """What a vendor on a node is worth an Event for: log it, and the leader posts it on the Node.

    In ``Evaluation.events``, a registration change (``CLEANED_UP``, ``REGISTERED``, ``READMITTED``) whose
    message does not name the node (the Event is about it; a log record carries it as a field). In
    ``Evaluation.warnings``, a vendor shown degraded for a reason not seen before (``INVALID_REGISTER``,
    ``LIVENESS_RULE_FAILED``, ``PAIR_SCORES_INVALID``): a Warning, counted, its message naming the node."""

    node: str
    uid: str
    vendor_key: str
    type: Literal["Normal", "Warning"] = "Warning"
    reason: str
    message: str


@attrs.frozen(kw_only=True)
class Evaluation:
    """What one evaluation of a node asks the daemon to do."""

    node: str
    #: The annotation merge patch (``None`` deletes a key); empty when nothing is to be written.
    patch: Mapping[str, str | None]
    #: The patch may land only on the Node as judged (it holds a cleanup): sent with the resourceVersion
    #: of the Node the decisions read as a precondition.
    conditional: bool = False
    #: When to evaluate the node again because a stamp expires then (``None``: no need).
    recheck_at: datetime | None
    warnings: tuple[VendorEvent, ...] = ()
    #: Registration changes worth an Event (cleaned up, registered, back after a sign of life).
    events: tuple[VendorEvent, ...] = ()
    #: vendor key -> decision, for logs and tests.
    decisions: Mapping[str, Decision] = attrs.field(factory=dict)
    #: A vendor was found dead on a view not known current: decide the node again once it is.
    withheld: bool = False
    #: The Node object this name held before is gone (deleted, or replaced by a new object with the same
    #: name and another uid): everything remembered of it was dropped.
    node_gone: bool = False
    #: vendor key -> the state of a vendor this registrar had no state of on this node before.
    first_states: Mapping[str, VendorState] = attrs.field(factory=dict)


class Registrar:
    """Applies the decision core to nodes for a fixed set of vendors."""

    def __init__(
        self,
        vendors: Sequence[VendorRules],
        cache: DeviceCache,
        *,
        selector: NodeSelector | None = None,
        window: timedelta = DEFAULT_WINDOW,
        metrics: SchedulerMetrics | None = None,
    ) -> None:
        self.vendors = tuple(vendors)
        #: Each vendor's node source, where it has one (read by ``relevant`` and ``_absent``).
        self._sources = tuple(
            path.node_source if path is not None else None for path in (v.node_path() for v in self.vendors)
        )
        judged = [j for v in self.vendors for j in (v, v.node_path()) if j is not None]
        #: The count resources whose capacity a liveness rule reads.
        self._capacities = tuple(sorted({j.count_resource for j in judged if reads_capacity(j.liveness)}))
        #: Every annotation a decision, or the cache's pair scores, reads (``None``: the vendor has none).
        self._annotations = tuple(key for v in self.vendors for key in _READ(v))
        self.cache = cache
        self._selector = selector or NodeSelector({})
        self._window = window
        self._memory: dict[tuple[str, str], VendorMemory] = {}
        #: (node, vendor) -> the pair-score value's fingerprint, devices and scores last applied to the
        #: cache entry (the value itself is the store's, kept compressed there).
        self._scores: dict[tuple[str, str], tuple[str | None, object, object]] = {}
        #: The uid of the Node object each name's memory is about.
        self._uids: dict[str, str] = {}
        #: (node, vendor key) -> the reason of the last decision (its state is ``state_of(reason)``), for
        #: every vendor in a state the scheduler keeps (``KEPT_STATES``): the fleet view and the state
        #: gauge. Written by the worker, read anywhere under the lock.
        self._states: dict[tuple[str, str], Reason] = {}
        self._states_lock = threading.Lock()
        self.metrics = metrics if metrics is not None else SchedulerMetrics([v.vendor_key for v in vendors])

    def memory(self, node: str, vendor_key: str) -> VendorMemory:
        return self._memory.get((node, vendor_key), _NOTHING_KNOWN)

    def known_nodes(self) -> set[str]:
        return set(self._uids)

    def relevant(self, node: NodeSnapshot) -> tuple[object, ...]:
        """Everything of a snapshot that can change a decision; equal tuples mean no re-evaluation needed."""
        ann = node.annotations
        return (
            self._selector.matches(node.labels),
            tuple(kept_form(ann, key) if key else None for key in self._annotations),
            tuple(node.allocatable.get(v.count_resource) for v in self.vendors),
            tuple(source_key(node, s) if s is not None else None for s in self._sources),
            tuple(node.capacity.get(c) for c in self._capacities),
        )

    def evaluate(
        self,
        name: str,
        node: NodeSnapshot | None,
        *,
        now: datetime,
        view_current: bool = True,
        mono: float | None = None,
        wall_step_at: float | None = None,
    ) -> Evaluation:
        """Decide every vendor on node ``name`` as shown (``node=None``: it was deleted).

        ``view_current``: the view ``node`` comes from is known current (spec 5b); when it is not, a
        vendor found dead is not cleaned up (``Reason.CLEANUP_WITHHELD``) and the caller decides the node
        again once it is. ``mono`` and ``wall_step_at``: the monotonic clock now and at the last
        wall-clock step (see ``decide``)."""
        self.metrics.evaluations.inc()
        seen_before = node is not None and self._uids.get(name) == node.uid
        replaced = node is not None and self._uids.get(name, node.uid) != node.uid
        if replaced:
            self._forget_node(name)  # a new Node with the same name starts from a clean state
        if node is None:
            self._uids.pop(name, None)
        else:
            self._uids[name] = node.uid
        warnings: list[VendorEvent] = []
        events: list[VendorEvent] = []
        decisions: dict[str, Decision] = {}
        first_states: dict[str, VendorState] = {}
        selected = node is not None and self._selector.matches(node.labels)
        uid = node.uid if node else ""
        for declared, node_source in zip(self.vendors, self._sources, strict=True):
            key = (name, declared.vendor_key)
            known = self._memory.get(key)
            if known is None and (node is None or self._absent(node, declared, node_source)):
                self._set_state(key, None)
                continue  # nothing of this vendor on the node and nothing remembered: nothing to decide
            memory = known or _NOTHING_KNOWN
            seen = observe(name, node, declared, selected=selected)
            if seen.allocatable_invalid:
                log.warning(
                    "allocatable %s=%r is not a quantity; counted as 0",
                    declared.count_resource,
                    seen.allocatable_raw,
                    extra={"node": name, "vendor": declared.vendor_key},
                )
            observed, rules = seen.observation, seen.rules
            vendor = rules.vendor_key
            if not view_current:
                observed = attrs.evolve(observed, view_current=False)
            decision = evaluate(
                observed,
                memory,
                now=now,
                rules=rules,
                window=self._window,
                mono=mono,
                wall_step_at=wall_step_at,
                view=seen.view,
            )
            decisions[vendor] = decision
            if decision.memory is not memory:
                if decision.memory == _NOTHING_KNOWN:
                    self._memory.pop(key, None)
                else:
                    self._memory[key] = decision.memory
            reason = decision.reason
            if reason is Reason.CLEANUP_WITHHELD:  # nothing changed: the vendor stands where it stood
                with self._states_lock:
                    reason = self._states.get(key) or (
                        Reason.UNCHANGED if memory.registered else Reason.AWAITING_SIGN_OF_LIFE
                    )
            if self._set_state(key, reason):
                first_states[vendor] = state_of(reason)
            self._apply_cache(name, vendor, decision, now, seen.source)
            about = functools.partial(VendorEvent, node=name, uid=uid, vendor_key=vendor)
            if (pair_scores := declared.pair_scores_annotation) is not None:
                bad_scores = self._apply_pair_scores(name, node, vendor, pair_scores)
                if bad_scores is not None:
                    self.metrics.decode_errors.labels(vendor=vendor).inc()
                    warnings.append(about(reason=PAIR_SCORES_INVALID, message=bad_scores))
            if decision.reason is Reason.CLEANED_UP:
                self.metrics.cleanups.labels(vendor=vendor).inc()
            elif decision.reason is Reason.CLEANUP_WITHHELD:
                self.metrics.cleanups_withheld.labels(vendor=vendor).inc()
            elif decision.clock_stepped:
                self.metrics.clock_step_restamps.labels(vendor=vendor).inc()
            event = registration_event(
                observed, memory, decision, rules, now=now, window=self._window, seen_before=seen_before
            )
            if event is not None:
                events.append(about(type=event[0], reason=event[1], message=event[2]))
            error = decision.error if decision.error_is_new else None
            if error is not None:
                rule_failed = decision.verdict is Verdict.RULE_FAILED
                errors = self.metrics.liveness_rule_errors if rule_failed else self.metrics.decode_errors
                errors.labels(vendor=vendor).inc()
                code = LIVENESS_RULE_FAILED if rule_failed else INVALID_REGISTER
                warnings.append(about(reason=code, message=error))
        if node is None:
            self.cache.remove_node(name)
        patch = {
            w.annotation: w.value for d in decisions.values() for w in (d.write, d.marker) if w is not None
        }
        return Evaluation(
            node=name,
            patch=patch,
            conditional=any(d.conditional for d in decisions.values()) and bool(patch),
            recheck_at=min(
                (d.recheck_at for d in decisions.values() if d.recheck_at is not None), default=None
            ),
            warnings=tuple(warnings),
            events=tuple(events),
            decisions=decisions,
            node_gone=replaced or node is None,
            first_states=first_states,
            withheld=any(d.reason is Reason.CLEANUP_WITHHELD for d in decisions.values()),
        )

    def _set_state(self, key: tuple[str, str], reason: Reason | None) -> bool:
        """Keep (or with ``None``, drop) a vendor's state; True when it had none before and keeps one."""
        with self._states_lock:
            if reason is None or state_of(reason) not in KEPT_STATES:
                self._states.pop(key, None)
                return False
            first = key not in self._states
            self._states[key] = reason
            return first

    def state_counts(self) -> Counter[tuple[str, VendorState]]:
        """(vendor key, state) -> how many nodes the vendor is in that state on (any thread)."""
        with self._states_lock:
            return Counter((vendor, state_of(reason)) for (_, vendor), reason in self._states.items())

    def states_in(self, wanted: frozenset[VendorState]) -> dict[str, dict[str, tuple[VendorState, Reason]]]:
        """node -> vendor key -> (state, reason), of every vendor in one of ``wanted`` (any thread)."""
        nodes: dict[str, dict[str, tuple[VendorState, Reason]]] = {}
        with self._states_lock:
            for (node, vendor), reason in sorted(self._states.items(), key=lambda item: item[0]):
                if state_of(reason) in wanted:
                    nodes.setdefault(node, {})[vendor] = (state_of(reason), reason)
        return nodes

    @staticmethod
    def _absent(node: NodeSnapshot, rules: VendorRules, node_source: FromNode | None) -> bool:
        keys = (rules.register_annotation, rules.handshake_annotation, rules.marker_annotation)
        return not any(key in node.annotations for key in keys if key is not None) and (
            node_source is None or source_key(node, node_source) is None
        )

    def _forget_node(self, name: str) -> None:
        """Drop the memory and cache entries of the Node object ``name`` held."""
        for rules in self.vendors:
            self._memory.pop((name, rules.vendor_key), None)
            self._set_state((name, rules.vendor_key), None)
            self._scores.pop((name, rules.vendor_key), None)
        self.cache.remove_node(name)

    def _apply_pair_scores(
        self, name: str, node: NodeSnapshot | None, vendor: str, annotation: str
    ) -> str | None:
        """Keep the vendor's pair scores beside its cached devices (spec 1b); a value that does not decode
        leaves the devices without scores and is worth one Warning per distinct value (its message)."""
        key, entry = (name, vendor), self.cache.vendor(name, vendor)
        value = None if node is None else node.annotations.get(annotation)
        if entry is None or node is None or (value is None and not entry.pair_scores):
            self._scores.pop(key, None)  # nothing to keep: the common case costs no memory
            return None
        last, seen = self._scores.get(key), fingerprint(value)
        if last is not None and last[0] == seen and last[1] is entry.devices and last[2] is entry.pair_scores:
            return None
        warning = None
        scores: tuple[Mapping[str, int] | None, ...] = ()
        if value is not None:
            try:
                scores = scores_for(entry.devices, decode_pair_scores(value))
            except DecodeError as error:
                if last is None or last[0] != seen:
                    warning = (
                        f"node {name}: annotation {annotation}: {error}; the devices stay registered without "
                        "pair scores"
                    )
            if not any(s is not None for s in scores):
                scores = ()
        if scores != entry.pair_scores:
            entry = attrs.evolve(entry, pair_scores=scores)
            self.cache.put(name, entry)
        self._scores[key] = (seen, entry.devices, entry.pair_scores)
        return warning

    def _apply_cache(
        self, node: str, vendor_key: str, decision: Decision, now: datetime, source: str
    ) -> None:
        degraded = decision.reason is Reason.DEGRADED
        devices = decision.memory.devices
        if devices is None and degraded:
            devices = ()  # degraded with no good list yet: shown, with nothing to schedule on
        if decision.cache is CacheChange.DROP or devices is None:
            self.cache.remove(node, vendor_key)  # dropped, or not registered (removing no entry is a no-op)
            return
        entry = self.cache.vendor(node, vendor_key)
        state = VendorState.DEGRADED if degraded else VendorState.REGISTERED
        if (
            decision.cache is CacheChange.SET
            or entry is None
            or entry.state != state
            or entry.error != decision.error
            or entry.source != source
        ):
            self.cache.put(
                node,
                VendorEntry(
                    vendor_key=vendor_key,
                    devices=devices,
                    state=state,
                    reason=decision.reason.value,
                    error=decision.error if degraded else None,
                    updated_at=now,
                    source=source,
                    pair_scores=entry.pair_scores if entry is not None and entry.devices is devices else (),
                ),
            )
