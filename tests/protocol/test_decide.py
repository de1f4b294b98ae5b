"""The pure decision core: VendorRules and evaluate() against every row of spec sections 4, 4.1, 4.2, 5."""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta, timezone
from typing import Any

import attrs
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hami_core import (
    ALLOCATABLE,
    HANDSHAKE,
    JSON_CODEC,
    LEGACY_CODEC,
    MAX_ANNOTATION_BYTES,
    DecodeError,
    DeviceInfo,
    VendorRules,
)
from hami_core.protocol.decide import (
    CacheChange,
    Decision,
    HandshakeWrite,
    Observation,
    Reason,
    VendorMemory,
    Verdict,
)
from hami_core.protocol.evaluate import evaluate
from hami_core.protocol.handshake import format_report, format_stamp
from hami_core.protocol.marker import Marker, format_marker, parse_marker
from hami_core.protocol.marker import fingerprint as fp


@attrs.frozen
class TinyCodec:
    """A test codec: ``id1;id2`` <-> devices with those ids; ``!`` anywhere is a decode error."""

    name: str = "tiny"

    def decode(self, value: str) -> list[DeviceInfo]:
        if "!" in value:
            raise DecodeError(f"tiny: bad value {value!r}")
        return [DeviceInfo(id=part, count=10, health=True) for part in value.split(";") if part]

    def encode(self, devices: Sequence[DeviceInfo]) -> str:
        return ";".join(d.id for d in devices)


TINY = TinyCodec()


def rules(**changes: object) -> VendorRules:
    base: dict[str, object] = {
        "vendor_key": "MLU",
        "register_annotation": "hami.io/node-mlu-register",
        "handshake_annotation": "hami.io/node-handshake-mlu",
        "count_resource": "cambricon.com/mlu",
        "liveness": HANDSHAKE,
        "codec": TINY,
    }
    base.update(changes)
    return VendorRules(**base)  # type: ignore[arg-type]


@attrs.frozen
class _Decoding:
    """A driver's own codec that decodes by a given function (named and encoding as ``TINY``)."""

    decode: Callable[[str], list[DeviceInfo]]
    name: str = "tiny"

    def encode(self, devices: Sequence[DeviceInfo]) -> str:
        return TINY.encode(devices)


def decoding(decode: Callable[[str], list[DeviceInfo]]) -> VendorRules:
    """The MLU rules with a driver codec that decodes by ``decode``."""
    return rules(codec=_Decoding(decode))


def test_vendor_rules_accepts_a_driver_description() -> None:
    r = rules(liveness=ALLOCATABLE, handshake_annotation=None)
    assert (r.vendor_key, r.handshake_annotation, r.liveness.name, r.codec) == (
        "MLU",
        None,
        "allocatable",
        TINY,
    )


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("vendor_key", "", "vendor_key"),
        ("register_annotation", "", "register_annotation"),
        ("handshake_annotation", "", "handshake_annotation"),
        ("count_resource", "", "count_resource"),
        ("liveness", "handshake", "liveness"),
        ("codec", object(), "codec"),
    ],
)
def test_vendor_rules_refuses_bad_fields(field: str, value: object, message: str) -> None:
    with pytest.raises((ValueError, TypeError), match=message):
        rules(**{field: value})


class _Key(str):
    """A key as a driver might describe it: a str subclass hashing and comparing as it likes."""

    def __hash__(self) -> int:
        return 1

    def __eq__(self, other: object) -> bool:
        return False


def test_vendor_rules_hold_a_drivers_keys_as_exact_strings() -> None:
    """The keys are interned and looked up in every Node's annotations; a subclass would fail the
    scheduler's start ("can't intern") or never find its own annotation."""
    r = rules(
        vendor_key=_Key("MLU"),
        register_annotation=_Key("hami.io/node-mlu-register"),
        handshake_annotation=_Key("hami.io/node-handshake-mlu"),
        count_resource=_Key("cambricon.com/mlu"),
    )
    keys = (r.vendor_key, r.register_annotation, r.handshake_annotation, r.count_resource)
    assert [type(k) for k in keys] == [str] * 4
    assert r.register_annotation is not None
    assert {"hami.io/node-mlu-register": "x"}.get(r.register_annotation) == "x"
    assert sys.intern(r.register_annotation) == "hami.io/node-mlu-register"
    with pytest.raises((TypeError, ValueError), match="vendor_key"):
        rules(vendor_key=b"MLU")


# --- evaluate(): fixed clock, scheduler zone UTC+8 ----------------------------------------------------------

TZ = timezone(timedelta(hours=8))
NOW = datetime(2026, 11, 29, 18, 4, 5, tzinfo=TZ)
MLU = rules()
NVIDIA = rules(
    vendor_key="NVIDIA",
    register_annotation="hami.io/node-nvidia-register",
    handshake_annotation="hami.io/node-handshake",
    count_resource="nvidia.com/gpu",
    liveness=ALLOCATABLE,
)
HS = "hami.io/node-handshake-mlu"
NODE = "node-1"


def stamp(age: timedelta = timedelta(0)) -> str:
    return format_stamp(NOW - age)


def devs(value: str, vendor: str = "MLU") -> tuple[DeviceInfo, ...]:
    return tuple(attrs.evolve(d, devicevendor=vendor) for d in TINY.decode(value))


def registered(value: str = "a;b", vendor: str = "MLU", **more: Any) -> VendorMemory:
    return VendorMemory(devices=devs(value, vendor), register=fp(value), **more)


def obs(**kw: Any) -> Observation:
    kw.setdefault("node", NODE)
    return Observation(**kw)


SEC = timedelta(seconds=1)
SEED_STRING = "Requesting_2024-01-23 04:30:04.434037031 +0000 UTC m=+1104711.777756895"


@attrs.frozen
class Row:
    """One row of the spec as a decision: inputs and the expected outcome."""

    id: str
    observation: Observation
    memory: VendorMemory
    write: HandshakeWrite | None
    cache: CacheChange
    reason: Reason
    verdict: Verdict
    rules: VendorRules = MLU
    now: datetime = NOW


def stamped() -> HandshakeWrite:
    return HandshakeWrite(HS, stamp())


DELETE = HandshakeWrite(HS, None)
KEEP, SET, DROP = CacheChange.KEEP, CacheChange.SET, CacheChange.DROP
R, V = Reason, Verdict

ROWS = [
    # spec 4: every handshake value form, on a registered vendor with an unchanged register annotation
    Row(
        "absent handshake is stamped",
        obs(register="a;b"),
        registered(),
        stamped(),
        KEEP,
        R.UNCHANGED,
        V.STAMPED,
    ),
    Row(
        "Go DateTime stamp, fresh",
        obs(register="a;b", handshake=stamp(10 * SEC)),
        registered(),
        None,
        KEEP,
        R.UNCHANGED,
        V.FRESH,
    ),
    Row(
        "dotted stamp (HAMi <= v2.4), fresh",
        obs(register="a;b", handshake="Requesting_2026.11.29 18:03:30"),
        registered(),
        None,
        KEEP,
        R.UNCHANGED,
        V.FRESH,
    ),
    Row(
        "Time.String() stamp with zone and monotonic suffix, fresh",
        obs(register="a;b", handshake="Requesting_2026-11-29 10:03:50.25 +0000 UTC m=+12.000000001"),
        registered(),
        None,
        KEEP,
        R.UNCHANGED,
        V.FRESH,
    ),
    Row(
        "Time.String() stamp, seed example, long expired: cleaned up",
        obs(register="a;b", handshake=SEED_STRING),
        registered(),
        DELETE,
        DROP,
        R.CLEANED_UP,
        V.DEAD,
    ),
    Row(
        "'Reported <Time.String()>' is a report: stamped",
        obs(register="a;b", handshake="Reported 2024-01-23 04:30:04.434037031 +0000 UTC m=+1104711.7"),
        registered(),
        stamped(),
        KEEP,
        R.UNCHANGED,
        V.STAMPED,
    ),
    Row(
        "'Reported_<dotted>' is a report: stamped",
        obs(register="a;b", handshake="Reported_2024.01.23 04:30:05"),
        registered(),
        stamped(),
        KEEP,
        R.UNCHANGED,
        V.STAMPED,
    ),
    Row(
        "'Deleted_...' counts as not Requesting: stamped",
        obs(register="a;b", handshake="Deleted_2024-01-02 00:00:00"),
        registered(),
        stamped(),
        KEEP,
        R.UNCHANGED,
        V.STAMPED,
    ),
    Row(
        "garbage is not a stamp: stamped",
        obs(register="a;b", handshake="Unknown"),
        registered(),
        stamped(),
        KEEP,
        R.UNCHANGED,
        V.STAMPED,
    ),
    Row(
        "unparseable Requesting is no stamp (spec 4 rule 5): re-stamped",
        obs(register="a;b", handshake="Requesting_garbage"),
        registered(),
        stamped(),
        KEEP,
        R.UNCHANGED,
        V.STAMPED,
    ),
    Row(
        "Requesting without '_' is no stamp (spec 4 rule 5): re-stamped",
        obs(register="a;b", handshake="Requesting"),
        registered(),
        stamped(),
        KEEP,
        R.UNCHANGED,
        V.STAMPED,
    ),
    Row(
        "far-future stamp (2128) is no stamp (spec 4 rule 5): re-stamped",
        obs(register="a;b", handshake="Requesting_2128-12-02 00:00:00"),
        registered(),
        stamped(),
        KEEP,
        R.UNCHANGED,
        V.STAMPED,
    ),
    Row(
        "stamp 61 s ahead is no stamp: re-stamped",
        obs(register="a;b", handshake=stamp(-61 * SEC)),
        registered(),
        stamped(),
        KEEP,
        R.UNCHANGED,
        V.STAMPED,
    ),
    Row(
        "stamp 60 s ahead is fresh",
        obs(register="a;b", handshake=stamp(-60 * SEC)),
        registered(),
        None,
        KEEP,
        R.UNCHANGED,
        V.FRESH,
    ),
    # spec 4 rule 3: the boundary
    Row(
        "59.999 s old is fresh",
        obs(register="a;b", handshake=stamp()),
        registered(),
        None,
        KEEP,
        R.UNCHANGED,
        V.FRESH,
        now=NOW + timedelta(seconds=59.999),
    ),
    Row(
        "exactly 60 s old is expired: cleaned up",
        obs(register="a;b", handshake=stamp()),
        registered(),
        DELETE,
        DROP,
        R.CLEANED_UP,
        V.DEAD,
        now=NOW + 60 * SEC,
    ),
    # spec 4 rule 4 and 4.1 (handshake rule)
    Row(
        "expired, allocatable > 0: kept",
        obs(register="a;b", handshake=stamp(timedelta(hours=2)), allocatable=4),
        registered(),
        None,
        KEEP,
        R.UNCHANGED,
        V.KEPT_BY_ALLOCATABLE,
    ),
    Row(
        "expired, allocatable 0: cleaned up",
        obs(register="a;b", handshake=stamp(timedelta(hours=2))),
        registered(),
        DELETE,
        DROP,
        R.CLEANED_UP,
        V.DEAD,
    ),
    Row(
        "expired, not registered: nothing to clean, no write",
        obs(register="a;b", handshake=stamp(timedelta(hours=2))),
        VendorMemory(),
        None,
        KEEP,
        R.AWAITING_SIGN_OF_LIFE,
        V.DEAD,
    ),
    # spec 4.1 allocatable rule (NVIDIA)
    Row(
        "NVIDIA: count seen and still > 0, stamp hours old: kept",
        obs(register="a;b", handshake=format_stamp(NOW - timedelta(hours=5)), allocatable=8),
        registered("a;b", "NVIDIA", allocatable_seen=True),
        None,
        KEEP,
        R.UNCHANGED,
        V.KEPT_BY_ALLOCATABLE,
        NVIDIA,
    ),
    Row(
        "NVIDIA: count seen > 0 drops to 0: cleaned up at once, stamp fresh or not",
        obs(register="a;b", handshake=stamp(5 * SEC)),
        registered("a;b", "NVIDIA", allocatable_seen=True),
        HandshakeWrite("hami.io/node-handshake", None),
        DROP,
        R.CLEANED_UP,
        V.DEAD,
        NVIDIA,
    ),
    Row(
        "NVIDIA: count never > 0, stamp fresh: generic rule keeps it",
        obs(register="a;b", handshake=stamp(5 * SEC)),
        registered("a;b", "NVIDIA"),
        None,
        KEEP,
        R.UNCHANGED,
        V.FRESH,
        NVIDIA,
    ),
    Row(
        "NVIDIA: count never > 0, stamp expired: generic rule cleans up",
        obs(register="a;b", handshake=stamp(2 * 60 * SEC)),
        registered("a;b", "NVIDIA"),
        HandshakeWrite("hami.io/node-handshake", None),
        DROP,
        R.CLEANED_UP,
        V.DEAD,
        NVIDIA,
    ),
    # spec 4 rule 6: no stamping on nodes without the vendor
    Row(
        "node without the vendor: nothing written",
        obs(),
        VendorMemory(),
        None,
        KEEP,
        R.NO_VENDOR,
        V.UNSTAMPED,
    ),
    Row(
        "node without the vendor but with allocatable: nothing written",
        obs(allocatable=3),
        VendorMemory(),
        None,
        KEEP,
        R.NO_VENDOR,
        V.UNSTAMPED,
    ),
    Row(
        "node carrying only the handshake: stamped",
        obs(handshake="Reported_2024.01.23 04:30:05"),
        VendorMemory(),
        stamped(),
        KEEP,
        R.NO_VENDOR,
        V.STAMPED,
    ),
    Row(
        "node carrying the register annotation: stamped and registered",
        obs(register="a"),
        VendorMemory(),
        stamped(),
        SET,
        R.REGISTERED,
        V.STAMPED,
    ),
    # spec 5: the register annotation
    Row(
        "register changed: picked up at once",
        obs(register="a;c", handshake=stamp(SEC)),
        registered(),
        None,
        SET,
        R.UPDATED,
        V.FRESH,
    ),
    Row(
        "register changed under an expired stamp kept by allocatable: picked up",
        obs(register="c", handshake=stamp(timedelta(hours=1)), allocatable=1),
        registered(),
        None,
        SET,
        R.UPDATED,
        V.KEPT_BY_ALLOCATABLE,
    ),
    Row(
        "register decodes to no devices: removed",
        obs(register="", handshake=stamp(SEC)),
        registered(),
        None,
        DROP,
        R.UNREGISTERED_EMPTY,
        V.FRESH,
    ),
    Row(
        "register absent: removed",
        obs(handshake=stamp(SEC)),
        registered(),
        None,
        DROP,
        R.UNREGISTERED_ABSENT,
        V.FRESH,
    ),
    Row(
        "register undecodable: last good list kept, degraded",
        obs(register="a;!", handshake=stamp(SEC)),
        registered(),
        None,
        KEEP,
        R.DEGRADED,
        V.FRESH,
    ),
    Row(
        "register undecodable, never registered: degraded, nothing cached",
        obs(register="!", handshake=stamp(SEC)),
        VendorMemory(),
        None,
        KEEP,
        R.DEGRADED,
        V.FRESH,
    ),
    # spec 5: node deleted, node leaving the selector
    Row(
        "node deleted: everything goes",
        obs(present=False, register="a;b", handshake=stamp()),
        registered(),
        None,
        DROP,
        R.NODE_DELETED,
        V.NOT_JUDGED,
    ),
    Row(
        "node deleted, nothing cached",
        obs(present=False),
        VendorMemory(),
        None,
        KEEP,
        R.NODE_DELETED,
        V.NOT_JUDGED,
    ),
    Row(
        "node leaves the selector: dropped, nothing written",
        obs(selected=False, register="a;b"),
        registered(),
        None,
        DROP,
        R.NOT_SELECTED,
        V.NOT_JUDGED,
    ),
    # spec 4.2: no flapping after cleanup
    Row(
        "cleaned, handshake gone, register unchanged: stays out, no stamp",
        obs(register="a;b"),
        VendorMemory(
            awaiting_sign_of_life=True,
            register_at_cleanup=fp("a;b"),
            handshake_at_cleanup=fp(stamp(timedelta(hours=1))),
        ),
        None,
        KEEP,
        R.AWAITING_SIGN_OF_LIFE,
        V.NOT_JUDGED,
    ),
    Row(
        "cleaned, someone else's fresh stamp: stamping alone does not readmit",
        obs(register="a;b", handshake=stamp(SEC)),
        VendorMemory(awaiting_sign_of_life=True, register_at_cleanup=fp("a;b")),
        None,
        KEEP,
        R.AWAITING_SIGN_OF_LIFE,
        V.NOT_JUDGED,
    ),
    Row(
        "cleaned, the same report as at cleanup: not a new sign of life",
        obs(register="a;b", handshake="Reported_2024.01.23 04:30:05"),
        VendorMemory(
            awaiting_sign_of_life=True,
            register_at_cleanup=fp("a;b"),
            handshake_at_cleanup=fp("Reported_2024.01.23 04:30:05"),
        ),
        None,
        KEEP,
        R.AWAITING_SIGN_OF_LIFE,
        V.NOT_JUDGED,
    ),
    Row(
        "cleaned, a plugin report: readmitted and stamped",
        obs(register="a;b", handshake="Reported_2026-11-29 18:04:04"),
        VendorMemory(awaiting_sign_of_life=True, register_at_cleanup=fp("a;b")),
        stamped(),
        SET,
        R.REGISTERED,
        V.STAMPED,
    ),
    Row(
        "cleaned, allocatable > 0: readmitted",
        obs(register="a;b", allocatable=2),
        VendorMemory(awaiting_sign_of_life=True, register_at_cleanup=fp("a;b")),
        stamped(),
        SET,
        R.REGISTERED,
        V.STAMPED,
    ),
    Row(
        "cleaned, register changed, old expired stamp still visible: readmitted with a fresh window",
        obs(register="a;c", handshake=stamp(timedelta(hours=1))),
        VendorMemory(
            awaiting_sign_of_life=True,
            register_at_cleanup=fp("a;b"),
            handshake_at_cleanup=fp(stamp(timedelta(hours=1))),
        ),
        stamped(),
        SET,
        R.REGISTERED,
        V.STAMPED,
    ),
    Row(
        "cleaned, register removed: not a sign of life",
        obs(),
        VendorMemory(awaiting_sign_of_life=True, register_at_cleanup=fp("a;b")),
        None,
        KEEP,
        R.AWAITING_SIGN_OF_LIFE,
        V.NOT_JUDGED,
    ),
    # vendors without a handshake annotation
    Row(
        "no handshake annotation: registered, never stamped",
        obs(register="a", handshake="ignored"),
        VendorMemory(),
        None,
        SET,
        R.REGISTERED,
        V.NO_HANDSHAKE,
        rules(handshake_annotation=None),
    ),
    Row(
        "no handshake annotation, allocatable rule: count drops to 0, cleaned without a write",
        obs(register="a;b"),
        registered(allocatable_seen=True),
        None,
        DROP,
        R.CLEANED_UP,
        V.DEAD,
        rules(handshake_annotation=None, liveness=ALLOCATABLE),
    ),
]


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_spec_rows(row: Row) -> None:
    d = evaluate(row.observation, row.memory, now=row.now, rules=row.rules)
    assert (d.write, d.cache, d.reason, d.verdict) == (row.write, row.cache, row.reason, row.verdict)
    # the memory always agrees with the cache change
    if d.cache is SET:
        assert d.devices is not None and d.devices
        assert all(dev.devicevendor == row.rules.vendor_key for dev in d.devices)
    elif d.cache is DROP:
        assert d.devices is None
    else:
        assert d.devices == row.memory.devices
    assert d.memory.awaiting_sign_of_life == (d.reason in (R.CLEANED_UP, R.AWAITING_SIGN_OF_LIFE))
    assert (d.error is not None) == (d.reason is R.DEGRADED)


# --- spec 5b: no cleanup on a view that is not known current ------------------------------------------------


def _found_dead(row: Row) -> bool:
    return row.verdict is V.DEAD


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_spec_rows_on_a_view_not_known_current_withhold_every_cleanup_and_nothing_else(row: Row) -> None:
    stale = attrs.evolve(row.observation, view_current=False)
    d = evaluate(stale, row.memory, now=row.now, rules=row.rules)
    if _found_dead(row):
        assert (d.write, d.cache, d.reason, d.verdict) == (None, KEEP, R.CLEANUP_WITHHELD, V.DEAD)
        assert d.memory == row.memory  # nothing remembered: decided afresh once the view is current
    else:
        assert (d.write, d.cache, d.reason, d.verdict) == (row.write, row.cache, row.reason, row.verdict)
    assert d.write is None or d.write.value is not None  # stamps go on; a delete never


def test_a_cleanups_delete_decided_again_waits_for_a_current_view() -> None:
    old = stamp(61 * SEC)
    cleaned = evaluate(obs(register="a", handshake=old), registered("a"), now=NOW, rules=MLU)
    assert cleaned.write == DELETE
    stale = evaluate(
        obs(register="a", handshake=old, view_current=False), cleaned.memory, now=NOW + SEC, rules=MLU
    )
    assert (stale.write, stale.reason, stale.memory) == (None, R.CLEANUP_WITHHELD, cleaned.memory)
    again = evaluate(obs(register="a", handshake=old), stale.memory, now=NOW + 2 * SEC, rules=MLU)
    assert (again.write, again.reason) == (DELETE, R.AWAITING_SIGN_OF_LIFE)


def test_a_handshake_deleted_elsewhere_is_not_taken_as_a_cleanup_on_a_stale_view() -> None:
    seen = evaluate(obs(register="a", handshake=stamp(55 * SEC)), registered("a"), now=NOW, rules=MLU)
    stale = evaluate(obs(register="a", view_current=False), seen.memory, now=NOW + SEC, rules=MLU)
    assert (stale.reason, stale.write, stale.cache, stale.memory) == (
        R.CLEANUP_WITHHELD,
        None,
        KEEP,
        seen.memory,
    )


def test_a_report_seen_once_the_view_is_current_again_keeps_the_vendor() -> None:
    """The harm the gate prevents: our stamp expired in a view that missed the plugin's report."""
    ours = stamp(61 * SEC)
    withheld = evaluate(
        obs(register="a", handshake=ours, view_current=False), registered("a"), now=NOW, rules=MLU
    )
    assert withheld.reason is R.CLEANUP_WITHHELD and withheld.write is None
    report = "Reported_2026-11-29 18:03:50"  # what the fresh list shows: the plugin answered meanwhile
    d = evaluate(obs(register="a", handshake=report), withheld.memory, now=NOW + SEC, rules=MLU)
    assert (d.reason, d.write, d.cache) == (R.UNCHANGED, HandshakeWrite(HS, format_stamp(NOW + SEC)), KEEP)


def test_cache_entry_is_the_decoded_list_with_the_vendor_key() -> None:
    d = evaluate(obs(register="x;y", handshake=stamp()), VendorMemory(), now=NOW, rules=NVIDIA)
    assert d.devices == (
        DeviceInfo(id="x", count=10, health=True, devicevendor="NVIDIA"),
        DeviceInfo(id="y", count=10, health=True, devicevendor="NVIDIA"),
    )
    assert d.memory.register == fp("x;y")  # its fingerprint: the value itself is the Node's


def test_cleanup_resets_memory_and_remembers_what_it_saw() -> None:
    old = stamp(timedelta(hours=2))
    d = evaluate(
        obs(register="a;b", handshake=old),
        registered(allocatable_seen=True, degraded="x", degraded_value=fp("!")),
        now=NOW,
        rules=MLU,
    )
    assert d.memory == VendorMemory(
        awaiting_sign_of_life=True,
        register_at_cleanup=fp("a;b"),
        handshake_at_cleanup=fp(old),
        delete_handshake=True,
        marked=True,
    )


def test_no_flapping_sequence_after_cleanup() -> None:
    """HAMi re-stamps a cleaned node, re-adds it, and cleans it 60 s later, forever. We do not."""
    memory = registered()
    d = evaluate(obs(register="a;b", handshake=stamp(2 * 60 * SEC)), memory, now=NOW, rules=MLU)
    assert (d.reason, d.write) == (R.CLEANED_UP, DELETE)
    memory = d.memory
    # Until the node shows the delete, it is decided again (the scheduler's view keeps it from being sent
    # twice); once the node shows it, nothing more.
    d = evaluate(obs(register="a;b", handshake=stamp(2 * 60 * SEC)), memory, now=NOW + SEC, rules=MLU)
    assert (d.write, d.reason, d.devices) == (DELETE, R.AWAITING_SIGN_OF_LIFE, None)
    memory = d.memory
    for minute in range(1, 30):
        later = NOW + minute * 60 * SEC
        for handshake in (None, stamp(2 * 60 * SEC)):
            d = evaluate(obs(register="a;b", handshake=handshake), memory, now=later, rules=MLU)
            assert (d.write, d.reason, d.devices) == (None, R.AWAITING_SIGN_OF_LIFE, None)
            memory = d.memory
    report = "Reported_2026-11-29 18:40:00"
    d = evaluate(obs(register="a;b", handshake=report), memory, now=NOW + 31 * 60 * SEC, rules=MLU)
    assert (d.reason, d.verdict, d.write) == (
        R.REGISTERED,
        V.STAMPED,
        HandshakeWrite(HS, format_stamp(NOW + 31 * 60 * SEC)),
    )
    assert not d.memory.awaiting_sign_of_life


def test_nvidia_allocatable_seen_is_remembered_and_reset_by_cleanup() -> None:
    d = evaluate(obs(register="a", handshake=stamp()), VendorMemory(), now=NOW, rules=NVIDIA)
    assert not d.memory.allocatable_seen
    d = evaluate(obs(register="a", handshake=stamp(), allocatable=10), d.memory, now=NOW + SEC, rules=NVIDIA)
    assert d.memory.allocatable_seen and d.reason is R.UNCHANGED
    # an hour later the stamp is long expired: the steady state of an NVIDIA node, still registered
    d = evaluate(
        obs(register="a", handshake=stamp(), allocatable=10), d.memory, now=NOW + 3600 * SEC, rules=NVIDIA
    )
    assert (d.verdict, d.reason, d.write) == (V.KEPT_BY_ALLOCATABLE, R.UNCHANGED, None)
    d = evaluate(obs(register="a", handshake=stamp()), d.memory, now=NOW + 3601 * SEC, rules=NVIDIA)
    assert (d.reason, d.memory.allocatable_seen) == (R.CLEANED_UP, False)
    d = evaluate(obs(register="a", allocatable=10), d.memory, now=NOW + 3700 * SEC, rules=NVIDIA)
    assert d.reason is R.REGISTERED and d.memory.allocatable_seen


# --- a cleanup's delete is decided until the node no longer shows the cleaned-up stamp -------------------


def test_a_cleanup_delete_is_decided_again_while_the_node_still_shows_the_stamp() -> None:
    old = stamp(61 * SEC)
    cleaned = evaluate(obs(register="a", handshake=old), registered("a"), now=NOW, rules=MLU)
    assert (cleaned.reason, cleaned.write) == (R.CLEANED_UP, HandshakeWrite(HS, None))
    # not sent (a follower), or it failed: the node still shows the stamp, so the delete is decided again
    again = evaluate(obs(register="a", handshake=old), cleaned.memory, now=NOW + 15 * SEC, rules=MLU)
    assert (again.reason, again.write) == (R.AWAITING_SIGN_OF_LIFE, HandshakeWrite(HS, None))
    # the node shows it gone: the cleanup is done, nothing more is written
    done = evaluate(obs(register="a"), again.memory, now=NOW + 16 * SEC, rules=MLU)
    assert (done.reason, done.write, done.memory.delete_handshake) == (R.AWAITING_SIGN_OF_LIFE, None, False)
    back = evaluate(obs(register="a", handshake=old), done.memory, now=NOW + 17 * SEC, rules=MLU)
    assert back.write is None  # the same stamp written back by someone else is not deleted twice


def test_a_vendor_found_dead_unregistered_has_nothing_to_delete() -> None:
    old = stamp(61 * SEC)
    d = evaluate(obs(register="!", handshake=old), VendorMemory(), now=NOW, rules=MLU)
    assert (d.reason, d.write) == (R.AWAITING_SIGN_OF_LIFE, None)
    again = evaluate(obs(register="!", handshake=old), d.memory, now=NOW + SEC, rules=MLU)
    assert again.write is None


# --- a handshake deleted by another replica's cleanup ----------------------------------------------------


def test_a_handshake_deleted_by_a_cleanup_elsewhere_is_a_cleanup_here_too() -> None:
    """A replica whose clock is behind the leader's sees the leader's cleanup delete before its own
    timer: the vendor is dead at expiry (no allocatable count), so the delete is the cleanup, not a
    reason to stamp the node again. After it, a stamp alone does not readmit; a report does."""
    seen = evaluate(obs(register="a", handshake=stamp(55 * SEC)), registered("a"), now=NOW, rules=MLU)
    assert seen.memory.handshake_seen and seen.reason is R.UNCHANGED
    gone = evaluate(obs(register="a"), seen.memory, now=NOW + SEC, rules=MLU)
    assert (gone.reason, gone.verdict, gone.write, gone.cache) == (
        R.CLEANED_UP,
        V.DEAD,
        None,
        CacheChange.DROP,
    )
    assert gone.memory == VendorMemory(awaiting_sign_of_life=True, register_at_cleanup=fp("a"))
    restamped = evaluate(obs(register="a", handshake=stamp()), gone.memory, now=NOW + 2 * SEC, rules=MLU)
    assert (restamped.reason, restamped.write) == (R.AWAITING_SIGN_OF_LIFE, None)
    report = "Reported_2026-11-29 18:05:00"
    back = evaluate(obs(register="a", handshake=report), restamped.memory, now=NOW + 3 * SEC, rules=MLU)
    assert back.reason is R.REGISTERED and back.write == HandshakeWrite(HS, format_stamp(NOW + 3 * SEC))


def test_a_deleted_handshake_is_stamped_again_while_the_rule_keeps_the_vendor() -> None:
    """An allocatable count keeps the vendor alive at expiry: nobody cleaned it up, it is stamped again."""
    seen = evaluate(obs(register="a", handshake=stamp(), allocatable=1), registered("a"), now=NOW, rules=MLU)
    gone = evaluate(obs(register="a", allocatable=1), seen.memory, now=NOW + SEC, rules=MLU)
    assert (gone.reason, gone.verdict, gone.write) == (
        R.UNCHANGED,
        V.STAMPED,
        HandshakeWrite(HS, format_stamp(NOW + SEC)),
    )
    nvidia = evaluate(
        obs(register="a", handshake=stamp(), allocatable=10), VendorMemory(), now=NOW, rules=NVIDIA
    )
    nvidia = evaluate(obs(register="a", allocatable=10), nvidia.memory, now=NOW + SEC, rules=NVIDIA)
    assert nvidia.reason is R.UNCHANGED and nvidia.write is not None


def test_only_a_handshake_the_node_showed_counts_not_our_own_stamp_on_its_way() -> None:
    """A follower's first decision on a new node stamps (it sends nothing): until the leader's stamp
    shows on the node, its absence is no cleanup."""
    first = evaluate(obs(register="a"), VendorMemory(), now=NOW, rules=MLU)
    assert (first.reason, first.verdict, first.memory.handshake_seen) == (R.REGISTERED, V.STAMPED, False)
    again = evaluate(obs(register="a"), first.memory, now=NOW + SEC, rules=MLU)
    assert again.memory.registered and again.verdict is V.STAMPED
    shown = evaluate(obs(register="a", handshake=stamp()), again.memory, now=NOW + 2 * SEC, rules=MLU)
    assert shown.memory.handshake_seen


def test_a_report_arriving_while_our_stamp_is_in_flight_is_stamped_again() -> None:
    first = evaluate(obs(register="a"), VendorMemory(), now=NOW, rules=MLU)
    d = evaluate(
        obs(register="a", handshake="Reported_2026-11-29 18:04:06"), first.memory, now=NOW + SEC, rules=MLU
    )
    assert d.write == HandshakeWrite(HS, format_stamp(NOW + SEC))


# --- recheck_at ----------------------------------------------------------------------------------------


def test_recheck_at_expiry_when_expiry_would_change_the_decision() -> None:
    d = evaluate(obs(register="a", handshake=stamp(10 * SEC)), registered("a"), now=NOW, rules=MLU)
    assert d.recheck_at == NOW + 50 * SEC
    # our own stamp has 1 s resolution: it expires 60 s after the second it names
    d = evaluate(obs(register="a"), registered("a"), now=NOW + timedelta(milliseconds=700), rules=MLU)
    assert d.recheck_at == NOW + 60 * SEC


@pytest.mark.parametrize(
    ("observation", "memory", "rule"),
    [
        (obs(register="a", handshake=stamp(10 * SEC), allocatable=1), registered("a"), MLU),
        (obs(register="a", handshake=stamp(2 * 60 * SEC), allocatable=1), registered("a"), MLU),
        (
            obs(register="a", handshake=stamp(10 * SEC)),
            registered("a", allocatable_seen=True),
            rules(handshake_annotation=None),
        ),
        (obs(register="a", handshake=stamp(2 * 60 * SEC)), registered("a"), MLU),
    ],
    ids=["allocatable keeps it anyway", "already expired", "no handshake", "dead"],
)
def test_no_recheck_when_expiry_changes_nothing(
    observation: Observation, memory: VendorMemory, rule: VendorRules
) -> None:
    assert evaluate(observation, memory, now=NOW, rules=rule).recheck_at is None


# --- decoding ------------------------------------------------------------------------------------------


def test_degraded_error_is_new_once_per_value_and_clears_on_recovery() -> None:
    d = evaluate(obs(register="a;!", handshake=stamp()), registered(), now=NOW, rules=MLU)
    assert d.error is not None and d.error_is_new
    assert NODE in d.error and "hami.io/node-mlu-register" in d.error and "a;!" in d.error
    assert d.devices == devs("a;b")
    d2 = evaluate(obs(register="a;!", handshake=stamp()), d.memory, now=NOW + SEC, rules=MLU)
    assert (d2.reason, d2.error, d2.error_is_new) == (R.DEGRADED, d.error, False)
    d3 = evaluate(obs(register="b!", handshake=stamp()), d2.memory, now=NOW + SEC, rules=MLU)
    assert d3.error_is_new and "b!" in (d3.error or "")
    d4 = evaluate(obs(register="c", handshake=stamp()), d3.memory, now=NOW + SEC, rules=MLU)
    assert (d4.reason, d4.cache, d4.memory.degraded, d4.error) == (R.UPDATED, SET, None, None)
    # back to the last good value after a bad one: unchanged, and no longer degraded
    d5 = evaluate(obs(register="!", handshake=stamp()), registered(), now=NOW, rules=MLU)
    d6 = evaluate(obs(register="a;b", handshake=stamp()), d5.memory, now=NOW, rules=MLU)
    assert (d6.reason, d6.memory.degraded) == (R.UNCHANGED, None)


def test_an_unchanged_value_is_not_decoded_again() -> None:
    calls: list[str] = []

    def counting(value: str) -> list[DeviceInfo]:
        calls.append(value)
        return TINY.decode(value)

    m, counted = VendorMemory(), decoding(counting)
    for second in range(3):
        m = evaluate(obs(register="a", handshake=stamp()), m, now=NOW + second * SEC, rules=counted).memory
    m = evaluate(obs(register="", handshake=stamp()), m, now=NOW, rules=counted).memory
    m = evaluate(obs(register="", handshake=stamp()), m, now=NOW, rules=counted).memory
    assert calls == ["a", ""]


def test_a_failing_driver_codec_degrades_instead_of_crashing() -> None:
    def broken(value: str) -> list[DeviceInfo]:
        raise KeyError("boom")

    d = evaluate(obs(register="a", handshake=stamp()), registered(), now=NOW, rules=decoding(broken))
    assert d.reason is R.DEGRADED and "KeyError" in (d.error or "") and d.devices == devs("a;b")

    def wrong(value: str) -> list[DeviceInfo]:
        return "a"  # type: ignore[return-value]

    d = evaluate(obs(register="a", handshake=stamp()), VendorMemory(), now=NOW, rules=decoding(wrong))
    assert d.reason is R.DEGRADED and "not a list of DeviceInfo" in (d.error or "")


class _Text(str):
    """What a driver's codec might hand over: a str subclass (DeviceInfo's validators take it)."""


class _Number(int):
    """An int subclass, the same."""

    def __hash__(self) -> int:
        return 7


def test_a_driver_codec_handing_over_subclasses_registers_plain_values() -> None:
    """sys.intern refuses a str subclass: the registrar crashed on such a device instead of registering
    it; and an int subclass must not become the shared object every equal size is replaced with."""

    def subclassing(value: str) -> list[DeviceInfo]:
        return [DeviceInfo(id=_Text("x"), type=_Text("A100"), mode=_Text("hami-core"), devmem=_Number(81920))]

    d = evaluate(obs(register="x", handshake=stamp()), VendorMemory(), now=NOW, rules=decoding(subclassing))
    assert d.reason is R.REGISTERED and d.devices is not None
    (device,) = d.devices
    assert (type(device.type), type(device.mode), type(device.devmem)) == (str, str, int)
    assert (device.type, device.mode, device.devmem, device.devicevendor) == (
        "A100",
        "hami-core",
        81920,
        "MLU",
    )
    plain = evaluate(
        obs(register="y", handshake=stamp()),
        VendorMemory(),
        now=NOW,
        rules=decoding(lambda value: [DeviceInfo(id="y", devmem=81920)]),
    )
    assert plain.devices is not None and type(plain.devices[0].devmem) is int


def test_an_oversized_register_value_is_refused_unparsed() -> None:
    def never(value: str) -> list[DeviceInfo]:
        raise AssertionError("decoded an oversized value")

    big = "a;" * (MAX_ANNOTATION_BYTES // 2 + 1)
    d = evaluate(obs(register=big, handshake=stamp()), VendorMemory(), now=NOW, rules=decoding(never))
    assert d.reason is R.DEGRADED and "limit" in (d.error or "")


# --- bad input -----------------------------------------------------------------------------------------


def test_decide_refuses_a_naive_clock_and_a_bad_window() -> None:
    with pytest.raises(ValueError, match="aware"):
        evaluate(obs(), VendorMemory(), now=datetime(2026, 1, 1), rules=MLU)
    with pytest.raises(ValueError, match="window"):
        evaluate(obs(), VendorMemory(), now=NOW, rules=MLU, window=timedelta(0))


@pytest.mark.parametrize(
    ("kw", "message"),
    [({"node": ""}, "node"), ({"allocatable": True}, "allocatable"), ({"allocatable": "4"}, "allocatable")],
)
def test_observation_refuses_bad_fields(kw: dict[str, Any], message: str) -> None:
    kw.setdefault("node", NODE)
    with pytest.raises((ValueError, TypeError), match=message):
        Observation(**kw)


# --- invariants over random histories of one node ---------------------------------------------------------

_REGISTERS = st.sampled_from([None, "", "a", "a;b", "!"])
_HANDSHAKES = st.one_of(
    st.sampled_from(
        [None, "Reported_1", "Reported_2", "Requesting_garbage", "Deleted_2024-01-02 00:00:00", "ours"]
    ),  # "ours": the last stamp written, as the watch would show it
    st.integers(-120, 300).map(lambda age: f"age:{age}"),
)
_STEP = st.tuples(
    st.integers(0, 90),
    _REGISTERS,
    _HANDSHAKES,
    st.integers(0, 2),
    st.sampled_from([True] * 8 + [False]),
    st.sampled_from([True] * 8 + [False]),
    st.sampled_from([None, "ours", "ours", "garbage"]),  # the marker: absent, the last one written, junk
)


@settings(max_examples=300, deadline=None)
@given(steps=st.lists(_STEP, min_size=1, max_size=25), nvidia=st.booleans())
def test_invariants_over_random_histories(
    steps: list[tuple[int, str | None, str | None, int, bool, bool, str | None]], nvidia: bool
) -> None:
    rule = NVIDIA if nvidia else MLU
    memory, now, last_stamp, last_marker = VendorMemory(), NOW, None, None
    previous: tuple[Observation, Decision] | None = None
    for dt, register, handshake, allocatable, present, selected, cleaned in steps:
        now += dt * SEC
        if cleaned == "ours":
            cleaned = last_marker
        if handshake == "ours":
            handshake = last_stamp
        elif handshake is not None and handshake.startswith("age:"):
            handshake = format_stamp(now - int(handshake[4:]) * SEC)
        o = obs(
            register=register,
            handshake=handshake,
            allocatable=allocatable,
            present=present,
            selected=selected,
            cleaned=cleaned,
        )
        d = evaluate(o, memory, now=now, rules=rule)
        assert d == evaluate(o, memory, now=now, rules=rule)  # pure
        if d.write is not None:
            assert d.write.annotation == rule.handshake_annotation
            assert present and selected
        if d.marker is not None:
            assert d.marker.annotation == rule.marker_annotation and present and selected
            if d.marker.value is not None:
                # only a cleanup writes a marker, in a conditional patch, and only where the node lacks it
                assert d.conditional and d.memory.marked and d.memory.awaiting_sign_of_life
                assert o.cleaned != d.marker.value
                last_marker = d.marker.value
            else:
                assert o.cleaned is not None and not d.memory.awaiting_sign_of_life
        if d.write is not None and d.write.value is None:
            assert d.conditional  # every delete of a handshake is conditional on the Node as judged
        if d.write is not None and d.write.value is not None:
            assert register is not None or handshake is not None  # spec 4 rule 6
            assert d.write.value == format_stamp(now)
            last_stamp = d.write.value
        if d.cache is CacheChange.SET:
            assert d.devices and all(x.devicevendor == rule.vendor_key for x in d.devices)
        elif d.cache is CacheChange.DROP:
            assert memory.devices is not None and d.devices is None
        else:
            assert d.devices == memory.devices
        if previous is not None:
            before, was = previous
            quiet = (
                o.register == before.register
                and o.handshake == before.handshake
                and allocatable == 0
                and present
                and selected
            )
            if was.reason in (Reason.CLEANED_UP, Reason.AWAITING_SIGN_OF_LIFE) and quiet:
                # spec 4.2: no new sign of life, no readmission; the only write is the cleanup's patch
                # (its delete while the node still shows the stamp it was cleaned up with, and its
                # marker), while the node does not show the marker
                assert d.reason is Reason.AWAITING_SIGN_OF_LIFE or (
                    d.reason is Reason.CLEANED_UP and o.cleaned is not None
                )
                if d.write is not None:
                    assert d.write.value is None and memory.delete_handshake
                    assert fp(o.handshake) == memory.handshake_at_cleanup
                if d.write is not None or (d.marker is not None and d.marker.value is not None):
                    assert o.cleaned is None or parse_marker(o.cleaned) is None or not memory.marked
        memory = d.memory
        previous = (o, d)


# --- the real codecs: readers accept both encodings (spec 3.4) --------------------------------------------

JSON_NVIDIA = attrs.evolve(NVIDIA, codec=JSON_CODEC)
LEGACY_MLU = attrs.evolve(MLU, codec=LEGACY_CODEC)
A10_JSON = (
    '[{"id":"GPU-0","count":10,"devmem":24576,"devcore":100,"type":"NVIDIA-A10","mode":"hami-core",'
    '"health":true}]'
)
A10_LEGACY = "GPU-0,10,24576,100,NVIDIA-A10,0,true,0,hami-core:"
A10 = DeviceInfo(
    id="GPU-0", count=10, devmem=24576, devcore=100, type="NVIDIA-A10", mode="hami-core", health=True
)


@pytest.mark.parametrize("value", [A10_JSON, A10_LEGACY], ids=["json", "legacy"])
@pytest.mark.parametrize("rule", [JSON_NVIDIA, LEGACY_MLU], ids=["json vendor", "legacy vendor"])
def test_a_built_in_codec_reads_both_encodings(rule: VendorRules, value: str) -> None:
    d = evaluate(obs(register=value, handshake=stamp()), VendorMemory(), now=NOW, rules=rule)
    assert (d.reason, d.devices) == (R.REGISTERED, (attrs.evolve(A10, devicevendor=rule.vendor_key),))


def test_an_old_nvidia_plugin_switching_encoding_is_an_update_not_a_loss() -> None:
    """A rolling upgrade: the legacy value of a v2.7 plugin replaced by the JSON of a v2.8 one."""
    first = evaluate(
        obs(register=A10_LEGACY, handshake=stamp(), allocatable=10),
        VendorMemory(),
        now=NOW,
        rules=JSON_NVIDIA,
    )
    second = evaluate(
        obs(register=A10_JSON, handshake=stamp(), allocatable=10),
        first.memory,
        now=NOW + SEC,
        rules=JSON_NVIDIA,
    )
    assert (second.reason, second.devices) == (R.UPDATED, first.devices)


SEED_MLU = (
    "MLU-45013011-2257-0000-0000-000000000000,10,23308,0,MLU-MLU370-X4,0,false:"
    "MLU-54043011-2257-0000-0000-000000000000,10,23308,0,"
)


@pytest.mark.parametrize(
    ("rule", "value", "quoted"),
    [(LEGACY_MLU, SEED_MLU, "MLU-54043011"), (JSON_NVIDIA, "[null]", "null"), (JSON_NVIDIA, "[{", "")],
    ids=["seed's truncated MLU value", "[null] element", "broken JSON"],
)
def test_real_decode_errors_degrade_with_a_clear_message(rule: VendorRules, value: str, quoted: str) -> None:
    memory = VendorMemory(devices=(attrs.evolve(A10, devicevendor=rule.vendor_key),), register=fp(A10_JSON))
    d = evaluate(obs(register=value, handshake=stamp()), memory, now=NOW, rules=rule)
    assert (d.reason, d.cache, d.devices, d.error_is_new) == (R.DEGRADED, KEEP, memory.devices, True)
    assert d.error is not None and "\n" not in d.error
    assert d.error.startswith(f"node {NODE}: annotation {rule.register_annotation}: ")
    assert quoted in d.error


def test_a_driver_codec_reads_only_its_own_encoding() -> None:
    # TINY would take a JSON value as a device id; nothing reads it as JSON on a custom codec's behalf
    d = evaluate(obs(register="[x]", handshake=stamp()), VendorMemory(), now=NOW, rules=MLU)
    assert d.devices is not None and [x.id for x in d.devices] == ["[x]"]


@settings(max_examples=300, deadline=None)
@given(
    steps=st.lists(st.tuples(_STEP, st.sampled_from([True, True, False])), min_size=1, max_size=25),
    nvidia=st.booleans(),
)
def test_on_a_stale_view_nothing_is_deleted_dropped_or_forgotten_for_being_dead(
    steps: list[tuple[tuple[int, str | None, str | None, int, bool, bool, str | None], bool]], nvidia: bool
) -> None:
    """Spec 5b over random histories with views that are now and then not known current: on such a view
    no decision deletes a handshake or drops a vendor found dead; a withheld one changes nothing."""
    rule = NVIDIA if nvidia else MLU
    memory, now, last_stamp = VendorMemory(), NOW, None
    for (dt, register, handshake, allocatable, present, selected, cleaned), current in steps:
        now += dt * SEC
        if handshake == "ours":
            handshake = last_stamp
        elif handshake is not None and handshake.startswith("age:"):
            handshake = format_stamp(now - int(handshake[4:]) * SEC)
        o = obs(
            register=register,
            handshake=handshake,
            allocatable=allocatable,
            present=present,
            selected=selected,
            view_current=current,
            cleaned=None if cleaned == "ours" else cleaned,
        )
        d = evaluate(o, memory, now=now, rules=rule)
        if not current:
            assert d.reason is not Reason.CLEANED_UP
            assert d.write is None or d.write.value is not None  # stamps only
            if d.cache is CacheChange.DROP:  # only what the view shows: gone, unselected, unregistered
                assert d.reason in (
                    Reason.NODE_DELETED,
                    Reason.NOT_SELECTED,
                    Reason.UNREGISTERED_ABSENT,
                    Reason.UNREGISTERED_EMPTY,
                )
            if d.reason is Reason.CLEANUP_WITHHELD:
                assert (d.memory, d.cache, d.write) == (memory, CacheChange.KEEP, None)
        if d.write is not None and d.write.value is not None:
            last_stamp = d.write.value
        memory = d.memory


# --- conditional cleanups and the "cleaned" marker (spec 4.2 across restarts, 5b) ------------------------

MARKER_KEY = "cleaned.hami-core.io/MLU"
AT_CLEANUP = format_marker(Marker(register=fp("a;b"), handshake=fp(stamp(2 * 60 * SEC))), NOW - 60 * SEC)
REPORT = "Reported_2026-11-29 18:04:04"


@attrs.frozen
class MarkerRow:
    """One decision about the marker: inputs, and the writes, cache change and reason expected."""

    id: str
    observation: Observation
    memory: VendorMemory
    write: HandshakeWrite | None
    marker: Any  # the marker's new value; None: removed; ...: not written
    conditional: bool
    cache: CacheChange
    reason: Reason


NOT_WRITTEN = ...
MARKER_ROWS = [
    MarkerRow(
        "a cleanup deletes the handshake and leaves its marker, conditionally",
        obs(register="a;b", handshake=stamp(2 * 60 * SEC)),
        registered(),
        DELETE,
        AT_CLEANUP.replace((NOW - 60 * SEC).strftime("%Y-%m-%d %H:%M:%S"), NOW.strftime("%Y-%m-%d %H:%M:%S")),
        True,
        DROP,
        R.CLEANED_UP,
    ),
    MarkerRow(
        "a stamp is unconditional",
        obs(register="a;b", handshake=REPORT),
        registered(),
        stamped(),
        NOT_WRITTEN,
        False,
        KEEP,
        R.UNCHANGED,
    ),
    MarkerRow(
        "no memory (a restart), the marker on the node, nothing new: waits, writes nothing, no stamp",
        obs(register="a;b", cleaned=AT_CLEANUP),
        VendorMemory(),
        None,
        NOT_WRITTEN,
        False,
        KEEP,
        R.AWAITING_SIGN_OF_LIFE,
    ),
    MarkerRow(
        "no memory, the marker, someone's fresh stamp: stamping alone does not readmit",
        obs(register="a;b", handshake=stamp(SEC), cleaned=AT_CLEANUP),
        VendorMemory(),
        None,
        NOT_WRITTEN,
        False,
        KEEP,
        R.AWAITING_SIGN_OF_LIFE,
    ),
    MarkerRow(
        "no memory, the marker, the very stamp cleaned up written back: no sign of life, not deleted",
        obs(register="a;b", handshake=stamp(2 * 60 * SEC), cleaned=AT_CLEANUP),
        VendorMemory(),
        None,
        NOT_WRITTEN,
        False,
        KEEP,
        R.AWAITING_SIGN_OF_LIFE,
    ),
    MarkerRow(
        "no memory, the marker, a plugin report: readmitted, stamped, the marker removed",
        obs(register="a;b", handshake=REPORT, cleaned=AT_CLEANUP),
        VendorMemory(),
        stamped(),
        None,
        False,
        SET,
        R.REGISTERED,
    ),
    MarkerRow(
        "no memory, the marker, allocatable > 0: readmitted, the marker removed",
        obs(register="a;b", allocatable=1, cleaned=AT_CLEANUP),
        VendorMemory(),
        stamped(),
        None,
        False,
        SET,
        R.REGISTERED,
    ),
    MarkerRow(
        "no memory, the marker, another register value: readmitted, the marker removed",
        obs(register="a;c", cleaned=AT_CLEANUP),
        VendorMemory(),
        stamped(),
        None,
        False,
        SET,
        R.REGISTERED,
    ),
    MarkerRow(
        "registered here, the marker appears (the leader cleaned it up): a cleanup here too, no write",
        obs(register="a;b", cleaned=AT_CLEANUP),
        registered(handshake_seen=True),
        None,
        NOT_WRITTEN,
        False,
        DROP,
        R.CLEANED_UP,
    ),
    MarkerRow(
        "waiting, the node lacks the marker (the patch lost or refused): the cleanup's patch again",
        obs(register="a;b", handshake=stamp(2 * 60 * SEC)),
        VendorMemory(
            awaiting_sign_of_life=True,
            register_at_cleanup=fp("a;b"),
            handshake_at_cleanup=fp(stamp(2 * 60 * SEC)),
            delete_handshake=True,
            marked=True,
        ),
        DELETE,
        AT_CLEANUP.replace((NOW - 60 * SEC).strftime("%Y-%m-%d %H:%M:%S"), NOW.strftime("%Y-%m-%d %H:%M:%S")),
        True,
        KEEP,
        R.AWAITING_SIGN_OF_LIFE,
    ),
    MarkerRow(
        "found dead unregistered: no cleanup, no marker (a dead node costs no writes)",
        obs(register="a;b", handshake=stamp(2 * 60 * SEC)),
        VendorMemory(),
        None,
        NOT_WRITTEN,
        False,
        KEEP,
        R.AWAITING_SIGN_OF_LIFE,
    ),
    MarkerRow(
        "a value under the marker's key that is none of ours, on a live vendor: removed",
        obs(register="a;b", handshake=stamp(SEC), cleaned="by hand"),
        registered(),
        None,
        None,
        False,
        KEEP,
        R.UNCHANGED,
    ),
]


@pytest.mark.parametrize("row", MARKER_ROWS, ids=[r.id for r in MARKER_ROWS])
def test_marker_rows(row: MarkerRow) -> None:
    d = evaluate(row.observation, row.memory, now=NOW, rules=MLU)
    assert (d.write, d.cache, d.reason, d.conditional) == (row.write, row.cache, row.reason, row.conditional)
    if row.marker is NOT_WRITTEN:
        assert d.marker is None
    else:
        assert d.marker == HandshakeWrite(MARKER_KEY, row.marker)
    assert d.memory.awaiting_sign_of_life == (d.reason in (R.CLEANED_UP, R.AWAITING_SIGN_OF_LIFE))


def test_the_marker_holds_what_readmission_compares_and_a_new_process_finds_it() -> None:
    """A process cleans up; the node shows its patch; a process with no memory (a restart, another leader)
    decides the node: it waits for a sign of life instead of readmitting the vendor for a window."""
    dead = obs(register="a;b", handshake=stamp(2 * 60 * SEC))
    cleaned = evaluate(dead, registered(), now=NOW, rules=MLU)
    assert cleaned.marker is not None and cleaned.marker.value is not None and cleaned.conditional
    assert parse_marker(cleaned.marker.value) == Marker(register=fp("a;b"), handshake=fp(dead.handshake))
    landed = obs(register="a;b", cleaned=cleaned.marker.value)
    shown = evaluate(landed, cleaned.memory, now=NOW + SEC, rules=MLU)
    assert (shown.write, shown.marker, shown.memory.delete_handshake) == (None, None, False)
    memory = VendorMemory()  # restarted
    for minute in range(0, 10):
        d = evaluate(landed, memory, now=NOW + minute * 60 * SEC, rules=MLU)
        assert (d.write, d.marker, d.reason, d.devices) == (None, None, R.AWAITING_SIGN_OF_LIFE, None)
        memory = d.memory
    back = evaluate(
        obs(register="a;b", handshake=REPORT, cleaned=landed.cleaned), memory, now=NOW + 600 * SEC, rules=MLU
    )
    assert back.reason is R.REGISTERED and back.marker == HandshakeWrite(MARKER_KEY, None)
    assert not back.memory.awaiting_sign_of_life and not back.conditional


@pytest.mark.parametrize(
    "value",
    [
        "",
        "{",
        "[]",
        '{"register":"sha256:00"}',
        '{"cleanedAt":"x","register":5}',
        '{"cleanedAt":"x","handshake":"md5:abc"}',
        "{" + " " * 600 + "}",
    ],
)
def test_a_value_that_is_not_a_marker_of_ours_is_none(value: str) -> None:
    assert parse_marker(value) is None


def test_the_marker_key_fits_every_vendor_key() -> None:
    longest = "V" * 63  # a vendor key is a label value: at most 63 characters
    assert rules(vendor_key=longest).marker_annotation == f"cleaned.hami-core.io/{longest}"
    assert MLU.marker_annotation == MARKER_KEY


# --- wall-clock steps never clean (spec 5b) --------------------------------------------------------------

MONO = 5000.0  # the process's monotonic clock at NOW
HOUR = timedelta(hours=1)


@attrs.frozen
class ClockRow:
    """One decision on a stamp whose age the monotonic clock and a detected step may say otherwise."""

    id: str
    observation: Observation
    memory: VendorMemory
    now: datetime
    mono: float | None
    wall_step_at: float | None
    write: HandshakeWrite | None
    reason: Reason
    verdict: Verdict
    clock_stepped: bool = False


def ours(value: str, at: float, **more: Any) -> VendorMemory:
    """Registered, with ``value`` a stamp this process wrote at monotonic time ``at``."""
    return registered(seen_handshake=value, seen_at=at, own_stamp=True, handshake_seen=True, **more)


def theirs(value: str, at: float) -> VendorMemory:
    """Registered, with ``value`` a handshake this process first saw at monotonic time ``at``."""
    return registered(seen_handshake=value, seen_at=at, own_stamp=False, handshake_seen=True)


OURS = stamp()  # written at NOW (MONO)
CLOCK_ROWS = [
    ClockRow(
        "ours, 10 s old on the monotonic clock, the wall clock stepped an hour ahead since: stamped again",
        obs(register="a;b", handshake=OURS),
        ours(OURS, MONO),
        NOW + HOUR + 10 * SEC,
        MONO + 10,
        MONO + 5,
        HandshakeWrite(HS, format_stamp(NOW + HOUR + 10 * SEC)),
        R.UNCHANGED,
        V.STAMPED,
        clock_stepped=True,
    ),
    ClockRow(
        "ours, the wall clock stepped an hour back since: stamped again (not 'far future')",
        obs(register="a;b", handshake=OURS),
        ours(OURS, MONO),
        NOW - HOUR + 10 * SEC,
        MONO + 10,
        MONO + 5,
        HandshakeWrite(HS, format_stamp(NOW - HOUR + 10 * SEC)),
        R.UNCHANGED,
        V.STAMPED,
        clock_stepped=True,
    ),
    ClockRow(
        "ours, 10 s old on the monotonic clock, an hour on the wall clock, no step known: fresh",
        obs(register="a;b", handshake=OURS),
        ours(OURS, MONO),
        NOW + HOUR,
        MONO + 10,
        None,
        None,
        R.UNCHANGED,
        V.FRESH,
    ),
    ClockRow(
        "ours, a window old on the monotonic clock (the wall clock says 10 s): expired, cleaned up",
        obs(register="a;b", handshake=OURS),
        ours(OURS, MONO),
        NOW + 10 * SEC,
        MONO + 60,
        None,
        DELETE,
        R.CLEANED_UP,
        V.DEAD,
    ),
    ClockRow(
        "ours, written in the very evaluation that found the step: not stamped again (no loop)",
        obs(register="a;b", handshake=OURS),
        ours(OURS, MONO),
        NOW,
        MONO,
        MONO,
        None,
        R.UNCHANGED,
        V.FRESH,
    ),
    ClockRow(
        "ours, a step before it was written: judged on the monotonic clock as usual",
        obs(register="a;b", handshake=OURS),
        ours(OURS, MONO),
        NOW + 30 * SEC,
        MONO + 30,
        MONO - 100,
        None,
        R.UNCHANGED,
        V.FRESH,
    ),
    ClockRow(
        "another's stamp, seen before an hour's step, expired by the wall clock: stamped again, not cleaned",
        obs(register="a;b", handshake=stamp(30 * SEC)),
        theirs(stamp(30 * SEC), MONO - 30),
        NOW + HOUR,
        MONO + 10,
        MONO + 5,
        HandshakeWrite(HS, format_stamp(NOW + HOUR)),
        R.UNCHANGED,
        V.STAMPED,
        clock_stepped=True,
    ),
    ClockRow(
        "another's stamp, seen before a step, still fresh by the wall clock: fresh, no write",
        obs(register="a;b", handshake=stamp(30 * SEC)),
        theirs(stamp(30 * SEC), MONO - 30),
        NOW,
        MONO,
        MONO - 10,
        None,
        R.UNCHANGED,
        V.FRESH,
    ),
    ClockRow(
        "another's stamp, first seen after the step, expired by the wall clock: cleaned up",
        obs(register="a;b", handshake=stamp(2 * 60 * SEC)),
        theirs(stamp(2 * 60 * SEC), MONO - 1),
        NOW,
        MONO,
        MONO - 10,
        DELETE,
        R.CLEANED_UP,
        V.DEAD,
    ),
    ClockRow(
        "another's stamp never seen before, a step long ago, expired: cleaned up (first seen now)",
        obs(register="a;b", handshake=stamp(2 * 60 * SEC)),
        registered(),
        NOW,
        MONO,
        MONO - 10,
        DELETE,
        R.CLEANED_UP,
        V.DEAD,
    ),
    ClockRow(
        "without the monotonic clock (hami doctor): the wall clock alone, as before",
        obs(register="a;b", handshake=OURS),
        ours(OURS, MONO),
        NOW + HOUR,
        None,
        MONO + 5,
        DELETE,
        R.CLEANED_UP,
        V.DEAD,
    ),
]


@pytest.mark.parametrize("row", CLOCK_ROWS, ids=[r.id for r in CLOCK_ROWS])
def test_clock_rows(row: ClockRow) -> None:
    d = evaluate(
        row.observation, row.memory, now=row.now, rules=MLU, mono=row.mono, wall_step_at=row.wall_step_at
    )
    assert (d.write, d.reason, d.verdict, d.clock_stepped) == (
        row.write,
        row.reason,
        row.verdict,
        row.clock_stepped,
    )
    if d.write is not None and d.write.value is not None and row.mono is not None:
        # the stamp is ours now, aged from this moment on the monotonic clock
        assert (d.memory.seen_handshake, d.memory.seen_at, d.memory.own_stamp) == (
            d.write.value,
            row.mono,
            True,
        )


def test_our_stamp_expires_a_window_later_on_the_monotonic_clock() -> None:
    """The recheck is when the stamp expires on the monotonic clock, whatever the wall clock does."""
    first = evaluate(obs(register="a"), VendorMemory(), now=NOW, rules=MLU, mono=MONO)
    assert first.write is not None and first.recheck_at == NOW + 60 * SEC
    written = first.write.value
    assert (first.memory.seen_handshake, first.memory.seen_at, first.memory.own_stamp) == (
        written,
        MONO,
        True,
    )
    # 20 s later by the monotonic clock, the wall clock slewed 0.4 s behind: 40 s left, by the monotonic clock
    later = evaluate(
        obs(register="a", handshake=written),
        first.memory,
        now=NOW + timedelta(seconds=19.6),
        rules=MLU,
        mono=MONO + 20,
    )
    assert later.verdict is V.FRESH and later.recheck_at == NOW + timedelta(seconds=19.6 + 40)
    again = evaluate(
        obs(register="a", handshake=written), later.memory, now=NOW + 21 * SEC, rules=MLU, mono=MONO + 21
    )
    assert again.memory is later.memory  # nothing new to remember: the same object (no churn)
    # another writer's value replaces ours: first seen now, no longer ours
    report = evaluate(
        obs(register="a", handshake=REPORT), later.memory, now=NOW + 25 * SEC, rules=MLU, mono=MONO + 25
    )
    assert report.write is not None and report.memory.seen_at == MONO + 25 and report.memory.own_stamp


def test_a_step_never_cleans_a_stamp_it_falsified_over_random_histories() -> None:
    """A live vendor (a report every 30 s) with the wall clock stepped an hour forward at a random moment:
    whatever happens, it is never cleaned up, and after the step it is re-stamped once, not per report."""
    for step_at in range(0, 200, 7):
        memory, mono, wall, step_seen = VendorMemory(), MONO, NOW, None
        handshake: str | None = None
        for second in range(0, 240):
            if second == step_at:
                wall += HOUR
                step_seen = mono
            if second % 30 == 29:
                handshake = format_report(wall)
            o = obs(register="a;b", handshake=handshake)
            d = evaluate(o, memory, now=wall, rules=MLU, mono=mono, wall_step_at=step_seen)
            assert d.reason is not R.CLEANED_UP, (step_at, second)
            if d.write is not None and d.write.value is not None:
                handshake = d.write.value
            memory = d.memory
            mono += 1
            wall += SEC
