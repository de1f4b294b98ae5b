"""The pure decision core of the scheduler (spec 4, 4.1, 4.2, 5, 5b): one vendor on one node.

No I/O, no clock (``now`` is passed), no driver code (``evaluate.ask_driver`` asks it first and passes
``DriverAnswers``). The choices the spec leaves open: ``docs/architecture.md``, "The decision core".
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


def _exact_str(value: Any) -> Any:
    # the keys are interned and looked up in every Node's annotations: a str subclass could hash as it likes
    return plain_str(value) if isinstance(value, str) else value


def _check(kind: type, shape: str, optional: bool = True) -> Callable[[Any, Any, Any], None]:
    def check(instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
        if optional and value is None:
            return
        if kind is str:
            ok = isinstance(value, str) and bool(value)
        else:
            ok = isinstance(value, kind) and not (kind is int and isinstance(value, bool))
        if not ok:
            error = ValueError if kind is str else TypeError
            raise error(f"{type(instance).__name__}.{attribute.name} must {shape}, got {value!r}")

    return check


_TEXT = _check(str, "be a non-empty string", False)
_OPTIONAL_TEXT = _check(str, "be None or a non-empty string")
_CODEC_SHAPE = "have a name, decode() and encode()"


def _key() -> Any:
    return attrs.field(default=None, converter=_exact_str, validator=_OPTIONAL_TEXT)


@attrs.frozen(kw_only=True)
class VendorRules:
    """One vendor as its driver describes it: devices from the register annotation (read by ``codec``),
    the Node (``node_source``, spec 1b, judged as ``node_path()`` where the Node shows its main input), or
    both. Without a ``handshake_annotation`` liveness rests on the register value and the count alone."""

    #: HAMi's CommonWord, e.g. ``NVIDIA``; stamped into every cached device's ``devicevendor``.
    vendor_key: str = attrs.field(converter=_exact_str, validator=_TEXT)
    #: e.g. ``hami.io/node-nvidia-register``; ``None`` when the devices come only from the Node.
    register_annotation: str | None = _key()
    #: e.g. ``hami.io/node-handshake``.
    handshake_annotation: str | None = _key()
    #: The ``status.allocatable`` resource counting the vendor's devices, e.g. ``nvidia.com/gpu``.
    count_resource: str = attrs.field(converter=_exact_str, validator=_TEXT)
    liveness: LivenessRule = attrs.field(
        validator=_check(LivenessRule, "have a name and alive(facts)", False)
    )
    #: ``protocol/marker.py``; computed before the validators run (a bad vendor key is theirs to report).
    marker_annotation: str = attrs.field(init=False)

    @marker_annotation.default
    def _marker_annotation(self) -> str:
        return marker_annotation(self.vendor_key) if isinstance(self.vendor_key, str) else ""

    codec: Codec | None = attrs.field(default=None, validator=_check(Codec, _CODEC_SHAPE))
    node_source: FromNode | None = attrs.field(
        default=None, validator=_check(FromNode, "be a FromNode or None")
    )
    #: HAMi's device pair scores (``hami.io/node-nvidia-score``), kept beside the devices, never decided on.
    pair_scores_annotation: str | None = _key()
    _node_path: VendorRules | None = attrs.field(init=False, default=None, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        if self.register_annotation is not None and self.codec is None:
            raise TypeError(f"VendorRules.codec must {_CODEC_SHAPE}, got None")
        source = self.node_source
        if source is None:
            if self.register_annotation is None:
                raise ValueError("VendorRules: a vendor needs a register_annotation, a node_source, or both")
            return
        rule = BUILTIN_RULES[source.liveness] if isinstance(source.liveness, str) else source.liveness
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
        """The vendor as judged on its node source (no register annotation or handshake), or ``None``."""
        return self._node_path


@attrs.frozen(kw_only=True)
class Observation:
    """One node as seen for one vendor: the few facts the decision depends on."""

    node: str = attrs.field(validator=_TEXT)
    #: The Node exists (false on a delete event), and matches the scheduler's node label selector.
    present: bool = True
    selected: bool = True
    #: The annotation values, ``None`` when absent (``handshake`` ignored for a vendor without one).
    register: str | None = None
    handshake: str | None = None
    #: ``status.allocatable[<count resource>]``, 0 when absent or unparsable.
    allocatable: int = attrs.field(default=0, validator=_check(int, "be an int", False))
    #: The view this was seen in is known current (spec 5b); only then is a cleanup decided.
    view_current: bool = True
    #: The vendor's "cleaned" marker annotation (``protocol/marker.py``), ``None`` when absent.
    cleaned: str | None = None
    #: ``status.capacity[<count resource>]`` as HAMi's ``AsInt64`` reads it, 0 when absent or not an int64;
    #: observed only for a rule that reads it (``liveness.reads_capacity``).
    capacity: int = attrs.field(default=0, validator=_check(int, "be an int", False))


@attrs.frozen(kw_only=True)
class VendorMemory:
    """What the scheduler remembers of one vendor on one node between decisions. ``VendorMemory()`` is
    "nothing known", which is also what a freshly started scheduler has."""

    #: The cached device list (``devicevendor`` set), ``None`` while the vendor is not registered.
    devices: tuple[DeviceInfo, ...] | None = None
    #: The fingerprint (``protocol/marker.fingerprint``) of the register value the cache state came from
    #: (also kept for a value that decoded to no devices): the value itself is the Node's, not memory's.
    register: str | None = None
    #: Why the current register value does not decode; the cache keeps the last good list meanwhile.
    degraded: str | None = None
    #: The fingerprint of the register value ``degraded`` is about.
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
    """What the driver said (or a one-line error how it failed): the register value read by the codec
    (``None``: nothing to read, ``register_to_decode``), and the liveness rule with the stamp fresh,
    expired, and expired with the allocatable count counted as seen (``at_expiry``)."""

    decoded: tuple[DeviceInfo, ...] | str | None = None
    alive_fresh: bool | str = True
    alive_expired: bool | str = True
    alive_at_expiry: bool | str = True


class CacheChange(enum.Enum):
    """What happens to the vendor's cache entry for the node: kept, set to ``Decision.devices``, dropped."""

    KEEP = "keep"
    SET = "set"
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

    #: No usable stamp: one is written now, and its window starts.
    STAMPED = "stamped"
    #: The stamp (observed, or ours in flight) is younger than the window.
    FRESH = "fresh"
    #: Expired, but the liveness rule keeps the vendor (allocatable > 0).
    KEPT_BY_ALLOCATABLE = "kept-by-allocatable"
    NO_HANDSHAKE = "no-handshake"
    #: No usable stamp, and none written: the node carries nothing of this vendor (spec 4, rule 6).
    UNSTAMPED = "unstamped"
    DEAD = "dead"
    #: Node deleted, not selected, or awaiting a sign of life.
    NOT_JUDGED = "not-judged"
    #: The driver's liveness rule raised (the decision's ``error`` says how).
    RULE_FAILED = "rule-failed"


@attrs.frozen
class HandshakeWrite:
    """One change to the handshake (or marker) annotation; ``value=None`` deletes it (``null``)."""

    annotation: str
    value: str | None


@attrs.frozen(kw_only=True)
class Decision:
    """The outcome of ``decide`` for one node and vendor."""

    memory: VendorMemory
    reason: Reason
    verdict: Verdict
    cache: CacheChange = CacheChange.KEEP
    write: HandshakeWrite | None = None
    #: When the stamp expires, if its expiry would change the decision: evaluate again at that moment.
    recheck_at: datetime | None = None
    #: Why the register value does not decode, or how the liveness rule failed; one line, naming the node.
    error: str | None = None
    #: The error was not seen before for this vendor on this node: log it, post the Event, count it.
    error_is_new: bool = False
    #: The change to the vendor's "cleaned" marker annotation.
    marker: HandshakeWrite | None = None
    #: The writes may land only on the Node as judged (a cleanup's): sent with its resourceVersion.
    conditional: bool = False
    #: The stamp is written again, not judged by its age: the wall clock stepped since it was seen.
    clock_stepped: bool = False

    @property
    def devices(self) -> tuple[DeviceInfo, ...] | None:
        """The vendor's device list for the node after the decision (``None``: not registered)."""
        return self.memory.devices


_NOTHING = VendorMemory()
#: The verdict on a live vendor with a handshake and no stamp written now, by where its stamp stands.
_VERDICTS = {
    StampStanding.FRESH: Verdict.FRESH,
    StampStanding.EXPIRED: Verdict.KEPT_BY_ALLOCATABLE,
    StampStanding.MISSING: Verdict.UNSTAMPED,
}


def vendor_absent(obs: Observation, memory: VendorMemory) -> bool:
    """The node carries nothing of the vendor and nothing is remembered of it: nothing to judge."""
    return obs.present and {obs.register, obs.handshake, obs.cleaned} == {None} and memory == _NOTHING


def register_to_decode(obs: Observation, memory: VendorMemory) -> str | None:
    """The register value ``decide`` needs read by the codec: one it has not read before, or ``None``."""
    value = obs.register
    if value is None:
        return None
    seen = fingerprint(value)
    if seen == memory.register or (seen == memory.degraded_value and memory.degraded is not None):
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

    ``now``: the scheduler's clock, aware, in the zone stamps are written and zone-less ones read in.
    ``mono``: the monotonic clock at ``now``; ``wall_step_at``: when the last wall-clock step was detected
    on it. Without ``mono`` (``hami doctor``) every stamp is judged by wall time."""
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
        # The marker is the truth (a restart, another leader, our memory behind the Node); on a view not
        # current a registered vendor stays: a readmission may have removed the marker since.
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
        # Another replica cleaned it up (only a cleanup deletes a handshake): drop it, do not stamp it.
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
        # a vendor without a handshake is never stamped, so it cannot flap: no marker either
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

    verdict = _VERDICTS[standing] if has_handshake else Verdict.NO_HANDSHAKE
    write = None  # a stamp is only ever decided for a vendor with a handshake
    if stamp is not None and rules.handshake_annotation is not None:
        verdict, write = Verdict.STAMPED, HandshakeWrite(rules.handshake_annotation, stamp)
    if memory.awaiting_sign_of_life or memory.delete_handshake or memory.marked:  # a live vendor: no cleanup
        memory = attrs.evolve(
            memory,
            awaiting_sign_of_life=False,
            register_at_cleanup=None,
            handshake_at_cleanup=None,
            delete_handshake=False,
            marked=False,
        )
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


def _register(
    obs: Observation, memory: VendorMemory, decoded: tuple[DeviceInfo, ...] | str | None
) -> tuple[VendorMemory, CacheChange, Reason, str | None, bool]:
    """Spec 5 for a live vendor: what its register annotation does to the cache (the new memory, the
    cache change, the reason, and an error and whether it is new)."""
    healthy = memory
    if memory.degraded is not None or memory.degraded_value is not None:
        healthy = attrs.evolve(memory, degraded=None, degraded_value=None)
    value, registered, keep = obs.register, memory.registered, CacheChange.KEEP
    if value is None:
        if registered:
            gone = attrs.evolve(healthy, devices=None, register=None)
            return gone, CacheChange.DROP, Reason.UNREGISTERED_ABSENT, None, False
        gone = healthy if healthy.register is None else attrs.evolve(healthy, register=None)
        return gone, keep, Reason.NO_VENDOR, None, False
    seen = fingerprint(value)
    if seen == memory.register:
        return healthy, keep, Reason.UNCHANGED if registered else Reason.UNREGISTERED_EMPTY, None, False
    if seen == memory.degraded_value and memory.degraded is not None:
        return memory, keep, Reason.DEGRADED, memory.degraded, False
    if decoded is None:
        raise ValueError(
            f"decide: the register value of node {obs.node} was not read by the driver (register_to_decode)"
        )
    if isinstance(decoded, str):
        degraded = attrs.evolve(memory, degraded=decoded, degraded_value=seen)
        return degraded, keep, Reason.DEGRADED, decoded, True
    if not decoded:
        empty = attrs.evolve(healthy, devices=None, register=seen)
        return empty, CacheChange.DROP if registered else keep, Reason.UNREGISTERED_EMPTY, None, False
    fresh = attrs.evolve(healthy, devices=decoded, register=seen)
    return fresh, CacheChange.SET, Reason.UPDATED if registered else Reason.REGISTERED, None, False
