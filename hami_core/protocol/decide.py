"""The pure decision core of the scheduler (spec sections 4, 4.1, 4.2 and 5).

``decide`` looks at one node for one vendor, with what the scheduler remembers of it, and says what to
write to the handshake annotation, how the device cache changes, and why. It does no I/O and reads no
clock (``now`` is passed), and runs no driver code: the caller asks the codec and the liveness rule first
(``evaluate.ask_driver``) and passes their answers as plain values (``DriverAnswers``), so a driver's
failure is isolated before any decision is made.

Choices the spec leaves open, made here:

* A vendor found dead while not registered is not cleaned (nothing to clean, no write, as HAMi) but
  enters "awaiting a sign of life", so a scheduler next to a dead node does not stamp it every window.
* A readmitted vendor starts a fresh window: an expired stamp still on the node is re-stamped, not
  cleaned again at once. A report is a sign of life only if it differs from the handshake seen at
  cleanup; a register annotation only if present and different from the value seen at cleanup.
* Leaving the selector forgets the vendor's memory, as deletion does.
* A cleanup deletes the handshake it judged by and leaves the "cleaned, waiting for a sign of life"
  marker (``protocol/marker.py``) in one patch that is *conditional* (``Decision.conditional``): it may
  land only on the Node as judged, since the delete removes a value another writer (the plugin) may
  have replaced meanwhile. Stamps are unconditional: a stamp only moves a handshake towards alive; what
  it may overwrite unseen is a plugin's report, whose one meaning, alive, the stamp acknowledges, and a
  conditional stamp would fail on every report written in between for nothing.
* While the vendor waits for a sign of life and the node does not show the marker, the cleanup's patch
  is decided again (not sent, failed, or lost a race): the marker, and the delete while the node still
  shows exactly the value cleaned up. The scheduler shows ``decide`` the Node with its own writes in
  flight laid over it; what it has sent and not yet seen back is not the core's business.
* Wall-clock steps never clean (spec 5b). Given ``mono`` (the process's monotonic clock) the memory
  keeps the handshake value last seen, the monotonic time this process first saw or wrote it
  (``seen_at``), and whether it wrote it (``own_stamp``). Its own stamp is aged on the monotonic clock
  (the wire time is for other readers). When a wall-clock step was detected (``wall_step_at``) after
  the stamp was written or first seen, its wall-clock age is meaningless: an own stamp is written again
  at once (so the wire tells HAMi and the other replicas the truth again), and anybody else's stamp,
  judged by wall time otherwise, is written again instead of cleaned when it falls expired. The
  re-stamp is ours and ages on the monotonic clock; a stamp first seen after the step is judged as usual.
* A marker on the Node is the truth about a cleanup: a process that does not remember it (started since,
  or another replica cleaned) takes it as its own memory; readmission removes it; a value under the
  marker's key that is not a marker is removed (or replaced by a cleanup's).
* A driver's liveness rule that raises judges nothing: no write, the cache entry kept and shown degraded
  with the error, never a cleanup because of a driver bug.
* A vendor the node carries nothing of (no register or handshake annotation) and that nothing is
  remembered of is not judged at all: no driver code runs for it.
* On a view the scheduler cannot vouch for (``Observation.view_current`` false: a watch gap not yet
  closed by a fresh list, a watch silent past its deadline, a term whose first list has not come back)
  nothing is found dead: no cleanup, no delete re-sent, no memory change; the decision is
  ``CLEANUP_WITHHELD`` and the caller decides the node again once the view is current (spec 5b).
  Stamping goes on: a stamp destroys nothing.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

import attrs

from hami_core.protocol.codecs import Codec
from hami_core.protocol.handshake import (
    DEFAULT_WINDOW,
    HandshakeKind,
    StampStanding,
    classify,
    format_stamp,
    stamp_standing,
)
from hami_core.protocol.liveness import BUILTIN_RULES, LivenessRule
from hami_core.protocol.marker import Marker, fingerprint, format_marker, marker_annotation, parse_marker
from hami_core.protocol.model import DeviceInfo, plain_str
from hami_core.protocol.nodesource import FromNode

__all__ = [
    "CacheChange",
    "Decision",
    "DriverAnswers",
    "HandshakeWrite",
    "Observation",
    "Reason",
    "VendorMemory",
    "VendorRules",
    "Verdict",
    "decide",
    "register_to_decode",
    "sign_of_life",
    "vendor_absent",
]

_Check = Callable[[Any, "attrs.Attribute[Any]", Any], None]


def _exact_str(value: Any) -> Any:
    """A str subclass as its exact str (the keys are interned and looked up in every Node's annotations:
    a subclass could hash and compare as it likes); anything else as it is, for the validators to judge."""
    return plain_str(value) if isinstance(value, str) else value


def _text(optional: bool = False) -> _Check:
    def check(instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
        if not (optional and value is None) and (not isinstance(value, str) or not value):
            shape = "None or a non-empty string" if optional else "a non-empty string"
            raise ValueError(f"{type(instance).__name__}.{attribute.name} must be {shape}, got {value!r}")

    return check


def _optional_key() -> Any:
    return attrs.field(default=None, converter=_exact_str, validator=_text(True))


def _shaped(kind: type, shape: str, optional: bool = True) -> _Check:
    def check(instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
        if not (optional and value is None) and not isinstance(value, kind):
            raise TypeError(f"{type(instance).__name__}.{attribute.name} must {shape}, got {value!r}")

    return check


_CODEC_SHAPE = "have a name, decode() and encode()"


@attrs.frozen(kw_only=True)
class VendorRules:
    """What the decision core needs to know of one vendor; built from a driver's description.

    Devices come from the register annotation (``register_annotation``, read by ``codec``), or from the
    Node itself (``node_source``, spec 1b), or from both: then the node source where the Node shows its
    main input (``FromNode.key``) and the annotation elsewhere. ``node_path()`` is the vendor as judged
    on the node source.
    ``handshake_annotation`` is ``None`` for a vendor without a handshake: then liveness rests on the
    register annotation and the allocatable count alone (see ``decide``).
    """

    #: HAMi's CommonWord, e.g. ``NVIDIA``; stamped into every cached device's ``devicevendor``.
    vendor_key: str = attrs.field(converter=_exact_str, validator=_text())
    #: The node annotation carrying the encoded device list, e.g. ``hami.io/node-nvidia-register``;
    #: ``None`` for a vendor whose devices come only from the Node (``node_source``).
    register_annotation: str | None = _optional_key()
    #: The node annotation of the handshake, e.g. ``hami.io/node-handshake``; ``None`` for no handshake.
    handshake_annotation: str | None = _optional_key()
    #: The ``status.allocatable`` resource counting the vendor's devices, e.g. ``nvidia.com/gpu``.
    count_resource: str = attrs.field(converter=_exact_str, validator=_text())
    #: Whether the vendor is alive, given the stamp's age and the allocatable count (spec 4.1).
    liveness: LivenessRule = attrs.field(
        validator=_shaped(LivenessRule, "have a name and alive(facts)", False)
    )
    #: The vendor's "cleaned, waiting for a sign of life" marker annotation (``protocol/marker.py``).
    marker_annotation: str = attrs.field(init=False)

    @marker_annotation.default
    def _marker_annotation(self) -> str:
        # computed before the validators run: a bad vendor key is theirs to report
        return marker_annotation(self.vendor_key) if isinstance(self.vendor_key, str) else ""

    #: The vendor's encoding of the register annotation (``None`` without one).
    codec: Codec | None = attrs.field(default=None, validator=_shaped(Codec, _CODEC_SHAPE))
    #: Devices computed from the Node (spec 1b), preferred where the Node shows its inputs.
    node_source: FromNode | None = attrs.field(
        default=None, validator=_shaped(FromNode, "be a FromNode or None")
    )
    #: The annotation of HAMi's device pair scores (``hami.io/node-nvidia-score``), kept beside the
    #: devices; not part of any decision (``protocol/pairscores.py``).
    pair_scores_annotation: str | None = _optional_key()
    _node_path: VendorRules | None = attrs.field(init=False, default=None, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if self.register_annotation is not None and self.codec is None:
            raise TypeError(f"VendorRules.codec must {_CODEC_SHAPE}, got None")
        source = self.node_source
        if source is None:
            if self.register_annotation is None:
                raise ValueError("VendorRules: a vendor needs a register_annotation, a node_source, or both")
            return
        rule = source.liveness
        if isinstance(rule, str):
            rule = BUILTIN_RULES[rule]  # a KeyError names it: the loader checked it already
        if self.register_annotation is None and rule != self.liveness:
            raise ValueError(
                f"VendorRules: a vendor whose devices come only from the Node is judged by its node "
                f"source's liveness rule {rule.name!r}, not {self.liveness.name!r}"
            )
        path = self
        if self.register_annotation is not None:
            path = VendorRules(
                vendor_key=self.vendor_key,
                count_resource=self.count_resource,
                liveness=rule,
                node_source=source,
            )
        object.__setattr__(self, "_node_path", path)

    def node_path(self) -> VendorRules | None:
        """The vendor as judged where its devices come from the Node: no register annotation, no
        handshake, the node source's liveness rule; ``None`` without a node source."""
        return self._node_path


# --- what decide() reads --------------------------------------------------------------------------------


def _count(instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"Observation.{attribute.name} must be an int, got {value!r}")


@attrs.frozen(kw_only=True)
class Observation:
    """One node as seen for one vendor: the few facts the decision depends on."""

    node: str = attrs.field(validator=_text())
    #: False once the Node object is gone (a delete event).
    present: bool = True
    #: The node matches the scheduler's node label selector.
    selected: bool = True
    #: The vendor's register annotation, ``None`` when absent.
    register: str | None = None
    #: The vendor's handshake annotation, ``None`` when absent (ignored for a vendor without one).
    handshake: str | None = None
    #: ``status.allocatable[<count resource>]``, 0 when absent or unparsable.
    allocatable: int = attrs.field(default=0, validator=_count)
    #: The view this was seen in is known current (spec 5b); only then is a cleanup decided.
    view_current: bool = True
    #: The vendor's "cleaned, waiting for a sign of life" marker annotation, ``None`` when absent.
    cleaned: str | None = None
    #: ``status.capacity[<count resource>]`` as HAMi reads it (``AsInt64``), 0 when absent or not an int64
    #: integer; observed only for a liveness rule that reads it (``liveness.reads_capacity``).
    capacity: int = attrs.field(default=0, validator=_count)


@attrs.frozen(kw_only=True)
class VendorMemory:
    """What the scheduler remembers of one vendor on one node between decisions. ``VendorMemory()`` is
    "nothing known", which is also what a freshly started scheduler has."""

    #: The cached device list (``devicevendor`` set), ``None`` while the vendor is not registered.
    devices: tuple[DeviceInfo, ...] | None = None
    #: The register value the cache state came from (also kept for a value that decoded to no devices).
    register: str | None = None
    #: Why the current register value does not decode; the cache keeps the last good list meanwhile.
    degraded: str | None = None
    #: The register value ``degraded`` is about.
    degraded_value: str | None = None
    #: The allocatable count was above zero at some observation since the last cleanup.
    allocatable_seen: bool = False
    #: Cleaned up (or found dead unregistered); readmitted only on a sign of life (spec 4.2).
    awaiting_sign_of_life: bool = False
    #: The fingerprint (``protocol/marker.fingerprint``) of the register value seen at cleanup.
    register_at_cleanup: str | None = None
    #: The fingerprint of the handshake value seen at cleanup.
    handshake_at_cleanup: str | None = None
    #: The cleanup deletes the handshake: decided again while the node still shows the value cleaned
    #: up with and not the marker, done once it shows either.
    delete_handshake: bool = False
    #: A cleanup (not a vendor found dead unregistered): its marker belongs on the Node, and its patch is
    #: decided again while the Node does not show it.
    marked: bool = False
    #: Registered, and the node showed a handshake value at the last decision (what the node showed,
    #: not a stamp of this replica's still on its way). Only a cleanup deletes a handshake.
    handshake_seen: bool = False
    #: The handshake value this process last wrote or saw (tracked only when ``decide`` gets ``mono``).
    seen_handshake: str | None = None
    #: The monotonic time this process wrote ``seen_handshake``, or first saw it on the node.
    seen_at: float | None = None
    #: ``seen_handshake`` is a stamp this process wrote (aged on the monotonic clock).
    own_stamp: bool = False

    @property
    def registered(self) -> bool:
        return self.devices is not None


@attrs.frozen(kw_only=True)
class DriverAnswers:
    """What the vendor's driver code said about this observation, asked before ``decide`` runs.

    ``decoded`` is the register value read by the vendor's codec (``devicevendor`` set), or the one-line
    error why it does not read; ``None`` when no value needed reading (see ``register_to_decode``).
    The three liveness answers are the vendor's rule asked with the node's allocatable count, the stamp
    fresh or expired, and (``at_expiry``) expired with the allocatable count counted as seen; each is a
    one-line error instead when the rule raised.
    """

    decoded: tuple[DeviceInfo, ...] | str | None = None
    alive_fresh: bool | str = True
    alive_expired: bool | str = True
    alive_at_expiry: bool | str = True


# --- what decide() returns ------------------------------------------------------------------------------


class CacheChange(enum.Enum):
    """What happens to the vendor's entry for the node in the scheduler cache."""

    KEEP = "keep"
    #: Replace the entry with ``Decision.devices``.
    SET = "set"
    #: Remove the entry.
    DROP = "drop"


class Reason(enum.Enum):
    """Why the vendor's registration is what it is after the decision."""

    REGISTERED = "registered"
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    UNREGISTERED_EMPTY = "unregistered-empty"
    UNREGISTERED_ABSENT = "unregistered-absent"
    #: No register annotation and nothing cached: the vendor is not on this node.
    NO_VENDOR = "no-vendor"
    DEGRADED = "degraded"
    CLEANED_UP = "cleaned-up"
    #: Found dead on a view that is not known current: nothing done, decided again once it is.
    CLEANUP_WITHHELD = "cleanup-withheld"
    AWAITING_SIGN_OF_LIFE = "awaiting-sign-of-life"
    NOT_SELECTED = "not-selected"
    NODE_DELETED = "node-deleted"


class Verdict(enum.Enum):
    """How liveness was judged."""

    #: There was no usable stamp; one is written now, and its window starts.
    STAMPED = "stamped"
    #: The stamp (observed, or ours in flight) is younger than the window.
    FRESH = "fresh"
    #: The stamp is expired but the liveness rule keeps the vendor (allocatable > 0).
    KEPT_BY_ALLOCATABLE = "kept-by-allocatable"
    #: The vendor has no handshake annotation and its liveness rule says alive.
    NO_HANDSHAKE = "no-handshake"
    #: No usable stamp, and none written: the node carries nothing of this vendor (spec 4, rule 6).
    UNSTAMPED = "unstamped"
    #: The liveness rule says dead.
    DEAD = "dead"
    #: Not judged: node deleted, not selected, or awaiting a sign of life.
    NOT_JUDGED = "not-judged"
    #: Not judged because the driver's liveness rule raised (the decision's ``error`` says how).
    RULE_FAILED = "rule-failed"


@attrs.frozen
class HandshakeWrite:
    """One change to the handshake (or marker) annotation; ``value=None`` deletes it (merge patch with
    ``null``)."""

    annotation: str
    value: str | None


@attrs.frozen(kw_only=True)
class Decision:
    """The outcome of ``decide`` for one node and vendor."""

    #: What to remember for the next decision.
    memory: VendorMemory
    reason: Reason
    verdict: Verdict
    cache: CacheChange = CacheChange.KEEP
    #: The handshake change to make, or ``None`` for no write.
    write: HandshakeWrite | None = None
    #: When the stamp expires, if its expiry would change the decision: evaluate again at that moment.
    recheck_at: datetime | None = None
    #: For ``Reason.DEGRADED``: why the register value does not decode, or how the driver's liveness rule
    #: failed (``Verdict.RULE_FAILED``); one line, naming the node.
    error: str | None = None
    #: The error was not seen before for this vendor on this node: log it, post the Event, count it.
    error_is_new: bool = False
    #: The change to the vendor's "cleaned" marker annotation, or ``None``.
    marker: HandshakeWrite | None = None
    #: The writes may land only on the Node as judged (a cleanup's): send them with its resourceVersion
    #: as a precondition, and decide again on a conflict.
    conditional: bool = False
    #: The stamp is written again, instead of judged by its age, because the wall clock stepped since
    #: it was written or first seen.
    clock_stepped: bool = False

    @property
    def devices(self) -> tuple[DeviceInfo, ...] | None:
        """The vendor's device list for the node after the decision (``None``: not registered)."""
        return self.memory.devices


# --- the decision ---------------------------------------------------------------------------------------

_NOTHING = VendorMemory()
#: The verdict on a live vendor with a handshake and no stamp written now, by where its stamp stands.
_VERDICTS = {
    StampStanding.FRESH: Verdict.FRESH,
    StampStanding.EXPIRED: Verdict.KEPT_BY_ALLOCATABLE,
    StampStanding.MISSING: Verdict.UNSTAMPED,
}


def vendor_absent(obs: Observation, memory: VendorMemory) -> bool:
    """The node carries nothing of the vendor and nothing is remembered of it: nothing to judge."""
    return (
        obs.present
        and obs.register is None
        and obs.handshake is None
        and obs.cleaned is None
        and memory == _NOTHING
    )


def register_to_decode(obs: Observation, memory: VendorMemory) -> str | None:
    """The register value ``decide`` needs read by the codec: one it has not read before, or ``None``."""
    value = obs.register
    if value is None or value == memory.register:
        return None
    if value == memory.degraded_value and memory.degraded is not None:
        return None
    return value


def sign_of_life(obs: Observation, memory: VendorMemory, *, reported: bool) -> str | None:
    """Spec 4.2: which sign of life readmits a cleaned-up vendor (``"allocatable"``, ``"report"``,
    ``"register"``, in that order), or ``None``. ``reported``: the handshake is a plugin report."""
    if obs.allocatable > 0:
        return "allocatable"
    if reported and fingerprint(obs.handshake) != memory.handshake_at_cleanup:
        return "report"
    if obs.register is not None and fingerprint(obs.register) != memory.register_at_cleanup:
        return "register"
    return None


def _cleanup_marker(memory: VendorMemory) -> Marker:
    return Marker(register=memory.register_at_cleanup, handshake=memory.handshake_at_cleanup)


def _withheld(memory: VendorMemory) -> Decision:
    """Found dead on a view that is not current: nothing is written, cached or remembered differently."""
    return Decision(memory=memory, reason=Reason.CLEANUP_WITHHELD, verdict=Verdict.DEAD)


def _awaiting(
    obs: Observation, memory: VendorMemory, rules: VendorRules, marker: Marker | None, now: datetime
) -> Decision:
    """Cleaned up, no sign of life: nothing changes, but a cleanup's patch the node does not show yet is
    decided again (the marker, and the delete while the node still shows the value cleaned up)."""
    write = marker_write = None
    judged = memory
    shown = marker == _cleanup_marker(memory)
    if memory.delete_handshake:
        same = obs.handshake is not None and fingerprint(obs.handshake) == memory.handshake_at_cleanup
        if same and not shown:
            write = HandshakeWrite(rules.handshake_annotation or "", None)
        else:
            memory = attrs.evolve(memory, delete_handshake=False)
    if memory.marked and not shown:
        marker_write = HandshakeWrite(rules.marker_annotation, format_marker(_cleanup_marker(memory), now))
    sends = write is not None or marker_write is not None
    if sends and not obs.view_current:
        return _withheld(judged)  # the cleanup's patch is decided again once the view is current
    return Decision(
        write=write,
        memory=memory,
        reason=Reason.AWAITING_SIGN_OF_LIFE,
        verdict=Verdict.NOT_JUDGED,
        marker=marker_write,
        conditional=sends,
    )


def decide(
    obs: Observation,
    memory: VendorMemory,
    answers: DriverAnswers,
    *,
    now: datetime,
    rules: VendorRules,
    window: timedelta = DEFAULT_WINDOW,
    mono: float | None = None,
    wall_step_at: float | None = None,
) -> Decision:
    """Decide one vendor on one node: the handshake write, the cache change and the new memory.

    ``now`` is the scheduler's clock as an aware datetime in its zone: stamps are written in that zone
    and zone-less stamps are read in it. ``answers`` holds what the driver's codec and liveness rule said
    (``hami_core.protocol.evaluate.ask_driver``); ``decide`` itself runs no driver code.

    A vendor without a handshake annotation has no stamp that could expire: its liveness rule is asked
    with ``stamp_expired=False``, so the built-in ``handshake`` rule keeps it while its register
    annotation is there (as HAMi does for a device type without a handshake key), and the
    ``allocatable`` rule cleans it up once a count seen above zero drops to zero.

    ``mono`` is the process's monotonic clock (seconds) at ``now``, and ``wall_step_at`` the monotonic
    time of the last wall-clock step it detected (``None``: none). Without ``mono`` (``hami doctor``, a
    process of its own) every stamp is judged by wall time and no step is known.
    """
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError(f"decide: now must be an aware datetime in the scheduler's zone, got {now!r}")
    if window <= timedelta(0):
        raise ValueError(f"decide: the handshake window must be positive, got {window}")
    if not obs.present or not obs.selected:  # everything about the vendor goes, nothing is written
        cache = CacheChange.DROP if memory.registered else CacheChange.KEEP
        reason = Reason.NODE_DELETED if not obs.present else Reason.NOT_SELECTED
        return Decision(memory=_NOTHING, cache=cache, reason=reason, verdict=Verdict.NOT_JUDGED)
    if vendor_absent(obs, memory):
        return Decision(memory=memory, reason=Reason.NO_VENDOR, verdict=Verdict.UNSTAMPED)

    has_handshake = rules.handshake_annotation is not None
    observed = obs.handshake if has_handshake else None
    tz = now.tzinfo
    handshake = classify(observed, tz=tz)
    standing = stamp_standing(handshake, now=now, window=window)
    expires_at = None if handshake.time is None else handshake.time + window
    clock_stepped = False
    seen_at = memory.seen_at if mono is not None and observed == memory.seen_handshake else None
    if seen_at is not None and handshake.kind is HandshakeKind.STAMP:
        stepped = wall_step_at is not None and wall_step_at > seen_at  # detected after it was seen
        if memory.own_stamp and not stepped:  # ours: its age is on the monotonic clock
            left = window.total_seconds() - (mono or 0.0) + seen_at
            standing = StampStanding.FRESH if left > 0 else StampStanding.EXPIRED
            expires_at = now + timedelta(seconds=left)
        elif stepped and (memory.own_stamp or standing is StampStanding.EXPIRED):
            standing, clock_stepped = StampStanding.MISSING, True  # its wall-clock age says nothing now

    marker = parse_marker(obs.cleaned)
    dropped = False  # a cleanup this process had not made its own, found on the Node: the cache entry goes
    if marker is not None and not (memory.awaiting_sign_of_life and marker == _cleanup_marker(memory)):
        # The Node says the vendor was cleaned up (a restart, another leader, or our own memory behind
        # the Node's): the marker is the truth about it; what was registered stays in memory only in
        # case this very observation readmits it. (On a view not current, a registered vendor is not
        # dropped for it: the marker may be one a readmission has removed since.)
        if memory.registered and not obs.view_current:
            return _withheld(memory)
        dropped = memory.registered
        memory = attrs.evolve(
            memory,
            awaiting_sign_of_life=True,
            marked=True,
            register_at_cleanup=marker.register,
            handshake_at_cleanup=marker.handshake,
            delete_handshake=False,
            allocatable_seen=False,
        )
    elif (
        has_handshake
        and memory.registered
        and memory.handshake_seen
        and handshake.kind is HandshakeKind.ABSENT
        and answers.alive_at_expiry is False
    ):
        # The handshake a registered vendor showed is gone, and its rule finds it dead once a stamp
        # expires: a scheduler cleaned it up (beyond HAMi: spec 4 rule 4, seen by another replica).
        # Plugins never delete a handshake; a scheduler does only in a cleanup, when the stamp expired by
        # the cleaning replica's clock (a leader's clock ahead of ours, or a previous leader's last write
        # landing after the takeover). Deciding as if nothing had happened would stamp it again: a
        # follower's stamp never lands, so it would keep the dead vendor cached for good, and stamp it
        # once it leads. A vendor the rule keeps alive at expiry (an allocatable count) is stamped again.
        if not obs.view_current:
            return _withheld(memory)
        cleaned = VendorMemory(awaiting_sign_of_life=True, register_at_cleanup=fingerprint(obs.register))
        return Decision(
            memory=cleaned, cache=CacheChange.DROP, reason=Reason.CLEANED_UP, verdict=Verdict.DEAD
        )

    if memory.awaiting_sign_of_life:
        if sign_of_life(obs, memory, reported=handshake.kind is HandshakeKind.REPORT) is None:
            if memory.registered or memory.register is not None:
                memory = attrs.evolve(memory, devices=None, register=None, degraded=None, degraded_value=None)
            decision = _awaiting(obs, memory, rules, marker, now)
            if dropped:
                decision = attrs.evolve(
                    decision, cache=CacheChange.DROP, reason=Reason.CLEANED_UP, verdict=Verdict.DEAD
                )
            return decision
        # Readmitted: a fresh start, so an old expired stamp does not clean the vendor again at once.
        if standing is StampStanding.EXPIRED:
            standing = StampStanding.MISSING

    carries_vendor = obs.register is not None or observed is not None
    needs_stamp = has_handshake and standing is StampStanding.MISSING and carries_vendor
    stamp = format_stamp(now) if needs_stamp else None
    expired = has_handshake and standing is StampStanding.EXPIRED
    allocatable_seen = memory.allocatable_seen or obs.allocatable > 0

    alive = answers.alive_expired if expired else answers.alive_fresh
    if isinstance(alive, str) and not carries_vendor and not memory.registered:
        alive = True  # a node without the vendor is none of the rule's business (nothing to judge or show)
    if isinstance(alive, str):  # the driver's rule failed: judge nothing, write nothing, show why
        return Decision(
            memory=attrs.evolve(memory, degraded=alive, degraded_value=None),
            reason=Reason.DEGRADED,
            verdict=Verdict.RULE_FAILED,
            error=alive,
            error_is_new=memory.degraded != alive,
        )
    if not alive and not obs.view_current:
        return _withheld(memory)
    if not alive:
        cleanup = memory.registered
        # A vendor without a handshake (its devices from the Node, or an annotation judged by capacity)
        # is never stamped, so it cannot flap: nothing is written for it, not even the marker.
        marked = cleanup and rules.handshake_annotation is not None
        delete = marked and observed is not None
        cleaned = VendorMemory(
            awaiting_sign_of_life=True,
            register_at_cleanup=fingerprint(obs.register),
            handshake_at_cleanup=fingerprint(observed),
            delete_handshake=delete,
            marked=marked,
        )
        marker_value = format_marker(_cleanup_marker(cleaned), now)
        return Decision(
            write=HandshakeWrite(rules.handshake_annotation or "", None) if delete else None,
            memory=cleaned,
            cache=CacheChange.DROP if cleanup else CacheChange.KEEP,
            reason=Reason.CLEANED_UP if cleanup else Reason.AWAITING_SIGN_OF_LIFE,
            verdict=Verdict.DEAD,
            marker=HandshakeWrite(rules.marker_annotation, marker_value) if marked else None,
            conditional=marked,
        )

    if not has_handshake:
        verdict = Verdict.NO_HANDSHAKE
    else:
        verdict = Verdict.STAMPED if stamp is not None else _VERDICTS[standing]
    write = None
    if stamp is not None and rules.handshake_annotation is not None:
        write = HandshakeWrite(rules.handshake_annotation, stamp)
    if memory.awaiting_sign_of_life or memory.delete_handshake or memory.marked:
        memory = attrs.evolve(memory, **_SETTLED)
    if memory.allocatable_seen != allocatable_seen:
        memory = attrs.evolve(memory, allocatable_seen=allocatable_seen)

    if stamp is not None:  # ours, new: by the monotonic clock when there is one, else by its wire time
        written = now if mono is not None else classify(stamp, tz=tz).time
        expires_at = None if written is None else written + window
    elif standing is not StampStanding.FRESH:
        expires_at = None
    recheck_at = expires_at if answers.alive_at_expiry is False else None

    memory, cache, reason, error, error_is_new = _register(obs, memory, answers.decoded)
    changes: dict[str, Any] = {}
    handshake_seen = memory.registered and handshake.kind is not HandshakeKind.ABSENT
    if memory.handshake_seen != handshake_seen:
        changes["handshake_seen"] = handshake_seen
    if mono is not None and has_handshake:
        seen: tuple[str | None, float, bool]
        if stamp is not None:
            seen = (stamp, mono, True)
        elif seen_at is not None:
            seen = (observed, seen_at, memory.own_stamp)
        else:
            seen = (observed, mono, False)
        if (memory.seen_handshake, memory.seen_at, memory.own_stamp) != seen:
            changes.update(seen_handshake=seen[0], seen_at=seen[1], own_stamp=seen[2])
    return Decision(
        write=write,
        memory=attrs.evolve(memory, **changes) if changes else memory,
        cache=cache,
        reason=reason,
        verdict=verdict,
        recheck_at=recheck_at,
        error=error,
        error_is_new=error_is_new,
        # readmitted, or a value under the marker's key that is none of ours
        marker=None if obs.cleaned is None else HandshakeWrite(rules.marker_annotation, None),
        clock_stepped=clock_stepped,
    )


#: What a live vendor's memory holds of a cleanup: nothing.
_SETTLED: dict[str, Any] = dict(
    awaiting_sign_of_life=False,
    register_at_cleanup=None,
    handshake_at_cleanup=None,
    delete_handshake=False,
    marked=False,
)
_Registered = tuple[VendorMemory, CacheChange, Reason, str | None, bool]


def _register(
    obs: Observation, memory: VendorMemory, decoded: tuple[DeviceInfo, ...] | str | None
) -> _Registered:
    """Spec 5 for a live vendor: what its register annotation does to the cache (the new memory, the
    cache change, the reason, and an error and whether it is new)."""
    healthy = memory
    if memory.degraded is not None or memory.degraded_value is not None:
        healthy = attrs.evolve(memory, degraded=None, degraded_value=None)
    value, registered, keep = obs.register, memory.registered, CacheChange.KEEP
    if value is None:
        if registered:
            return (
                attrs.evolve(healthy, devices=None, register=None),
                CacheChange.DROP,
                Reason.UNREGISTERED_ABSENT,
                None,
                False,
            )
        gone = healthy if healthy.register is None else attrs.evolve(healthy, register=None)
        return gone, keep, Reason.NO_VENDOR, None, False
    if value == memory.register:
        return healthy, keep, Reason.UNCHANGED if registered else Reason.UNREGISTERED_EMPTY, None, False
    if value == memory.degraded_value and memory.degraded is not None:
        return memory, keep, Reason.DEGRADED, memory.degraded, False
    if decoded is None:
        raise ValueError(
            f"decide: the register value of node {obs.node} was not read by the driver (register_to_decode)"
        )
    if isinstance(decoded, str):
        return (
            attrs.evolve(memory, degraded=decoded, degraded_value=value),
            keep,
            Reason.DEGRADED,
            decoded,
            True,
        )
    if not decoded:
        empty = attrs.evolve(healthy, devices=None, register=value)
        return empty, CacheChange.DROP if registered else keep, Reason.UNREGISTERED_EMPTY, None, False
    fresh = attrs.evolve(healthy, devices=decoded, register=value)
    return fresh, CacheChange.SET, Reason.UPDATED if registered else Reason.REGISTERED, None, False
