"""The pure decision core of the scheduler (spec sections 4, 4.1, 4.2 and 5).

``decide`` looks at one node for one vendor, together with what the scheduler remembers about it, and
says what to write to the handshake annotation, how the device cache changes, and why. It does no I/O and
reads no clock: the caller passes ``now``.

Choices the spec leaves open, made here:

* A vendor found dead while not registered is not cleaned (nothing to clean, no write, as HAMi) but does
  enter "awaiting a sign of life", so a scheduler that starts next to a dead node does not stamp it
  every window.
* A readmitted vendor starts a fresh window: an expired stamp still on the node is re-stamped, not
  cleaned again at once. A report counts as a sign of life only if it differs from the handshake seen at
  cleanup; a register annotation only if present and different from the value seen at cleanup.
* Leaving the selector forgets the vendor's memory, as deletion does.
* A stamp we asked to write is remembered until the node shows it, so a resync before the watch catches
  up does not write it twice; if it never shows, it is written again one window later. A cleanup's delete
  is not repeated here: resending a delete that was not sent (failed, or decided by a follower) is the
  registrar's job, while the node still shows the value cleaned up.
* A driver's liveness rule that raises judges nothing: no write, the cache entry kept and shown degraded
  with the error, never a cleanup because of a driver bug.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from datetime import datetime, timedelta, tzinfo

import attrs

from hami_core.protocol.codecs import JSON_CODEC, LEGACY_CODEC, MAX_ANNOTATION_BYTES, Codec, decode_any
from hami_core.protocol.errors import DecodeError, shorten
from hami_core.protocol.handshake import (
    DEFAULT_WINDOW,
    Handshake,
    HandshakeKind,
    StampStanding,
    classify,
    format_stamp,
    stamp_standing,
)
from hami_core.protocol.liveness import LivenessFacts, LivenessRule
from hami_core.protocol.model import DeviceInfo

__all__ = [
    "CacheChange",
    "Decision",
    "HandshakeWrite",
    "Observation",
    "Reason",
    "VendorMemory",
    "VendorRules",
    "Verdict",
    "decide",
]


def _non_empty(instance: object, attribute: attrs.Attribute[str], value: str) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"VendorRules.{attribute.name} must be a non-empty string, got {value!r}")


def _optional_non_empty(instance: object, attribute: attrs.Attribute[str | None], value: str | None) -> None:
    if value is not None and (not isinstance(value, str) or not value):
        raise ValueError(f"VendorRules.{attribute.name} must be None or a non-empty string, got {value!r}")


def _is_liveness_rule(instance: object, attribute: attrs.Attribute[LivenessRule], value: object) -> None:
    if not isinstance(value, LivenessRule):
        raise TypeError(f"VendorRules.liveness must have a name and alive(facts), got {value!r}")


def _is_codec(instance: object, attribute: attrs.Attribute[Codec], value: object) -> None:
    if not isinstance(value, Codec):
        raise TypeError(f"VendorRules.codec must have a name, decode() and encode(), got {value!r}")


@attrs.frozen(kw_only=True)
class VendorRules:
    """What the decision core needs to know of one vendor; built from a driver's description.

    ``handshake_annotation`` is ``None`` for a vendor without a handshake: then liveness rests on the
    register annotation and the allocatable count alone (see ``decide``).
    """

    #: HAMi's CommonWord, e.g. ``NVIDIA``; stamped into every cached device's ``devicevendor``.
    vendor_key: str = attrs.field(validator=_non_empty)
    #: The node annotation carrying the encoded device list, e.g. ``hami.io/node-nvidia-register``.
    register_annotation: str = attrs.field(validator=_non_empty)
    #: The node annotation of the handshake, e.g. ``hami.io/node-handshake``; ``None`` for no handshake.
    handshake_annotation: str | None = attrs.field(validator=_optional_non_empty)
    #: The ``status.allocatable`` resource counting the vendor's devices, e.g. ``nvidia.com/gpu``.
    count_resource: str = attrs.field(validator=_non_empty)
    #: Whether the vendor is alive, given the stamp's age and the allocatable count (spec 4.1).
    liveness: LivenessRule = attrs.field(validator=_is_liveness_rule)
    #: The vendor's encoding of the register annotation.
    codec: Codec = attrs.field(validator=_is_codec)


# --- what decide() reads --------------------------------------------------------------------------------


def _node_name(instance: object, attribute: attrs.Attribute[str], value: str) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"Observation.node must be a non-empty node name, got {value!r}")


def _count(instance: object, attribute: attrs.Attribute[int], value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"Observation.allocatable must be an int, got {value!r}")


@attrs.frozen(kw_only=True)
class Observation:
    """One node as seen for one vendor: the few facts the decision depends on."""

    node: str = attrs.field(validator=_node_name)
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
    #: The register value seen when the vendor was cleaned up.
    register_at_cleanup: str | None = None
    #: The handshake value seen when the vendor was cleaned up.
    handshake_at_cleanup: str | None = None
    #: A stamp we asked to write that the observations do not show yet.
    stamp_in_flight: str | None = None
    #: The handshake value that stamp replaces; while it is still observed, the write is in flight.
    stamp_replaces: str | None = None

    @property
    def registered(self) -> bool:
        return self.devices is not None


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
    """One change to the handshake annotation; ``value=None`` deletes it (merge patch with ``null``)."""

    annotation: str
    value: str | None


@attrs.frozen(kw_only=True)
class Decision:
    """The outcome of ``decide`` for one node and vendor."""

    #: The handshake change to make, or ``None`` for no write.
    write: HandshakeWrite | None
    #: What to remember for the next decision.
    memory: VendorMemory
    cache: CacheChange
    reason: Reason
    verdict: Verdict
    #: When the stamp expires, if its expiry would change the decision: evaluate again at that moment.
    recheck_at: datetime | None = None
    #: For ``Reason.DEGRADED``: why the register value does not decode, or how the driver's liveness rule
    #: failed (``Verdict.RULE_FAILED``); one line, naming the node.
    error: str | None = None
    #: The error was not seen before for this vendor on this node: log it, post the Event, count it.
    error_is_new: bool = False

    @property
    def devices(self) -> tuple[DeviceInfo, ...] | None:
        """The vendor's device list for the node after the decision (``None``: not registered)."""
        return self.memory.devices


# --- decoding -------------------------------------------------------------------------------------------


def _reader(codec: Codec) -> Callable[[str], list[DeviceInfo]]:
    """The register reader for a vendor codec: a built-in encoding reads both (spec 3.4), since a vendor's
    plugin of another HAMi version may write the other one; a driver's own codec reads its own."""
    if codec is JSON_CODEC or codec is LEGACY_CODEC:
        return decode_any
    return codec.decode


def _decode(
    value: str, decode: Callable[[str], list[DeviceInfo]], obs: Observation, rules: VendorRules
) -> tuple[DeviceInfo, ...] | str:
    """The devices of a register value with ``devicevendor`` set, or a one-line error."""
    where = f"node {obs.node}: annotation {rules.register_annotation}"
    # A str of n characters is at most 4n bytes in UTF-8: only a long one needs encoding to be measured.
    size = len(value.encode("utf-8", "surrogatepass")) if len(value) * 4 > MAX_ANNOTATION_BYTES else 0
    if size > MAX_ANNOTATION_BYTES:
        return f"{where}: value is {size} bytes, over the {MAX_ANNOTATION_BYTES}-byte annotation limit"
    try:
        decoded = decode(value)
    except DecodeError as exc:
        return f"{where}: {exc}"
    except Exception as exc:  # a driver's codec must not take the scheduler down
        return f"{where}: codec {rules.codec.name!r} failed: {type(exc).__name__}: {exc}"
    if not isinstance(decoded, list) or not all(isinstance(d, DeviceInfo) for d in decoded):
        kind = type(decoded).__name__
        return f"{where}: codec {rules.codec.name!r} returned {kind}, not a list of DeviceInfo"
    return tuple(attrs.evolve(d, devicevendor=rules.vendor_key) for d in decoded)


# --- the decision ---------------------------------------------------------------------------------------


def _forget(memory: VendorMemory, reason: Reason) -> Decision:
    """Node deleted or out of the selector: everything about the vendor goes, nothing is written."""
    return Decision(
        write=None,
        memory=VendorMemory(),
        cache=CacheChange.DROP if memory.registered else CacheChange.KEEP,
        reason=reason,
        verdict=Verdict.NOT_JUDGED,
    )


def _effective_handshake(
    observed: str | None, memory: VendorMemory, *, now: datetime, tz: tzinfo, window: timedelta
) -> tuple[str | None, bool]:
    """The handshake to judge by, and whether our stamp is still in flight.

    While the node still shows the value our stamp replaces and the stamp is fresh, judge by our stamp,
    so it is not written twice before the watch shows it. Once the node shows it, or shows anything
    else, or the stamp has aged out (a write that never landed), judge by what is observed.
    """
    stamp = memory.stamp_in_flight
    if stamp is None or observed == stamp or observed != memory.stamp_replaces:
        return observed, False
    ours = classify(stamp, tz=tz)
    in_flight = stamp_standing(ours, now=now, window=window) is StampStanding.FRESH
    return (stamp, True) if in_flight else (observed, False)


def _alive(rules: VendorRules, facts: LivenessFacts, obs: Observation) -> bool | str:
    """The vendor's liveness rule on ``facts``, or a one-line error when the rule (a driver's) raised."""
    try:
        return bool(rules.liveness.alive(facts))
    except Exception as exc:
        detail = shorten(" ".join(f"{type(exc).__name__}: {exc}".split()), 160)[1:-1]
        return f"node {obs.node}: liveness rule {rules.liveness.name!r} failed: {detail}"


def _sign_of_life(obs: Observation, handshake: Handshake, memory: VendorMemory) -> bool:
    """Spec 4.2: a plugin report, allocatable > 0, or a register value other than at cleanup."""
    if obs.allocatable > 0:
        return True
    if handshake.kind is HandshakeKind.REPORT and obs.handshake != memory.handshake_at_cleanup:
        return True
    return obs.register is not None and obs.register != memory.register_at_cleanup


def decide(
    obs: Observation,
    memory: VendorMemory,
    *,
    now: datetime,
    rules: VendorRules,
    window: timedelta = DEFAULT_WINDOW,
    decode: Callable[[str], list[DeviceInfo]] | None = None,
) -> Decision:
    """Decide one vendor on one node: the handshake write, the cache change and the new memory.

    ``now`` is the scheduler's clock as an aware datetime in its zone: stamps are written in that zone
    and zone-less stamps are read in it. ``decode`` may be a memoised reader; it defaults to the vendor's
    (for the built-in encodings, one that reads both).

    A vendor without a handshake annotation has no stamp that could expire: its liveness rule is asked
    with ``stamp_expired=False``, so the built-in ``handshake`` rule keeps it while its register
    annotation is there (as HAMi does for a device type without a handshake key), and the
    ``allocatable`` rule cleans it up once a count seen above zero drops to zero.
    """
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError(f"decide: now must be an aware datetime in the scheduler's zone, got {now!r}")
    if window <= timedelta(0):
        raise ValueError(f"decide: the handshake window must be positive, got {window}")
    if not obs.present:
        return _forget(memory, Reason.NODE_DELETED)
    if not obs.selected:
        return _forget(memory, Reason.NOT_SELECTED)

    has_handshake = rules.handshake_annotation is not None
    observed = obs.handshake if has_handshake else None
    tz = now.tzinfo
    effective, in_flight = _effective_handshake(observed, memory, now=now, tz=tz, window=window)
    handshake = classify(effective, tz=tz)
    standing = stamp_standing(handshake, now=now, window=window)

    if memory.awaiting_sign_of_life:
        if not _sign_of_life(obs, handshake, memory):
            return Decision(
                write=None,
                memory=memory,
                cache=CacheChange.KEEP,
                reason=Reason.AWAITING_SIGN_OF_LIFE,
                verdict=Verdict.NOT_JUDGED,
            )
        # Readmitted: a fresh start, so an old expired stamp does not clean the vendor again at once.
        if standing is StampStanding.EXPIRED:
            standing = StampStanding.MISSING

    carries_vendor = obs.register is not None or effective is not None
    needs_stamp = has_handshake and standing is StampStanding.MISSING and carries_vendor
    stamp = format_stamp(now) if needs_stamp else None
    facts = LivenessFacts(
        stamp_expired=has_handshake and standing is StampStanding.EXPIRED,
        allocatable=obs.allocatable,
        allocatable_seen=memory.allocatable_seen,
    )
    allocatable_seen = memory.allocatable_seen or obs.allocatable > 0

    alive = _alive(rules, facts, obs)
    if isinstance(alive, str) and not carries_vendor and not memory.registered:
        alive = True  # a node without the vendor is none of the rule's business (nothing to judge or show)
    if isinstance(alive, str):  # the driver's rule failed: judge nothing, write nothing, show why
        return Decision(
            write=None,
            memory=attrs.evolve(memory, degraded=alive, degraded_value=None),
            cache=CacheChange.KEEP,
            reason=Reason.DEGRADED,
            verdict=Verdict.RULE_FAILED,
            error=alive,
            error_is_new=memory.degraded != alive,
        )
    if not alive:
        cleanup = memory.registered
        delete = (
            HandshakeWrite(rules.handshake_annotation, None)
            if cleanup and rules.handshake_annotation is not None and effective is not None
            else None
        )
        return Decision(
            write=delete,
            memory=VendorMemory(
                awaiting_sign_of_life=True,
                register_at_cleanup=obs.register,
                handshake_at_cleanup=observed,
            ),
            cache=CacheChange.DROP if cleanup else CacheChange.KEEP,
            reason=Reason.CLEANED_UP if cleanup else Reason.AWAITING_SIGN_OF_LIFE,
            verdict=Verdict.DEAD,
        )

    if not has_handshake:
        verdict = Verdict.NO_HANDSHAKE
    elif stamp is not None:
        verdict = Verdict.STAMPED
    elif standing is StampStanding.FRESH:
        verdict = Verdict.FRESH
    elif standing is StampStanding.EXPIRED:
        verdict = Verdict.KEPT_BY_ALLOCATABLE
    else:
        verdict = Verdict.UNSTAMPED

    write = None
    if stamp is not None and rules.handshake_annotation is not None:
        write = HandshakeWrite(rules.handshake_annotation, stamp)
        memory = attrs.evolve(memory, stamp_in_flight=stamp, stamp_replaces=observed)
    elif not in_flight:
        memory = attrs.evolve(memory, stamp_in_flight=None, stamp_replaces=None)
    memory = attrs.evolve(memory, allocatable_seen=allocatable_seen, awaiting_sign_of_life=False,
                          register_at_cleanup=None, handshake_at_cleanup=None)

    recheck_at = None
    if stamp is not None:
        stamp_time = classify(stamp, tz=tz).time
    else:
        stamp_time = handshake.time if standing is StampStanding.FRESH else None
    if stamp_time is not None:
        at_expiry = LivenessFacts(stamp_expired=True, allocatable=obs.allocatable,
                                  allocatable_seen=allocatable_seen)
        if _alive(rules, at_expiry, obs) is False:
            recheck_at = stamp_time + window

    return _register(obs, memory, rules=rules, decode=decode, write=write, verdict=verdict,
                     recheck_at=recheck_at)


def _register(
    obs: Observation,
    memory: VendorMemory,
    *,
    rules: VendorRules,
    decode: Callable[[str], list[DeviceInfo]] | None,
    write: HandshakeWrite | None,
    verdict: Verdict,
    recheck_at: datetime | None,
) -> Decision:
    """Spec 5 for a live vendor: what its register annotation does to the cache."""

    def done(new: VendorMemory, cache: CacheChange, reason: Reason, error: str | None = None,
             error_is_new: bool = False) -> Decision:
        return Decision(write=write, memory=new, cache=cache, reason=reason, verdict=verdict,
                        recheck_at=recheck_at, error=error, error_is_new=error_is_new)

    healthy = attrs.evolve(memory, degraded=None, degraded_value=None)
    value = obs.register
    if value is None:
        gone = attrs.evolve(healthy, devices=None, register=None)
        if memory.registered:
            return done(gone, CacheChange.DROP, Reason.UNREGISTERED_ABSENT)
        return done(gone, CacheChange.KEEP, Reason.NO_VENDOR)
    if value == memory.register:
        if memory.registered:
            return done(healthy, CacheChange.KEEP, Reason.UNCHANGED)
        return done(healthy, CacheChange.KEEP, Reason.UNREGISTERED_EMPTY)
    if value == memory.degraded_value and memory.degraded is not None:
        return done(memory, CacheChange.KEEP, Reason.DEGRADED, memory.degraded)

    devices = _decode(value, decode or _reader(rules.codec), obs, rules)
    if isinstance(devices, str):
        degraded = attrs.evolve(memory, degraded=devices, degraded_value=value)
        return done(degraded, CacheChange.KEEP, Reason.DEGRADED, devices, error_is_new=True)
    if not devices:
        empty = attrs.evolve(healthy, devices=None, register=value)
        if memory.registered:
            return done(empty, CacheChange.DROP, Reason.UNREGISTERED_EMPTY)
        return done(empty, CacheChange.KEEP, Reason.UNREGISTERED_EMPTY)
    fresh = attrs.evolve(healthy, devices=devices, register=value)
    return done(fresh, CacheChange.SET, Reason.UPDATED if memory.registered else Reason.REGISTERED)
