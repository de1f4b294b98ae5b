"""The handshake rules of spec section 4, pinned against HAMi's own ``device.CheckHealth``, case by case.

Each case states what HAMi v2.10.0 answers for a Node whose handshake annotation holds a given value
(``healthy``, ``need_update``, and which API calls it made: HAMi re-stamps with a GET and a PATCH) and
what this project reads from the same value (``classify`` and ``stamp_standing``: a ``MISSING`` stamp is
re-stamped, ``FRESH`` is left alone, ``EXPIRED`` allows cleanup once the allocatable count is zero).
Where the two differ on purpose the case names the **beyond HAMi** rule.

The oracle runs with ``TZ=UTC``; stamp times are built from the oracle's own clock reading, so both
sides judge the same value against the same ``now``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import attrs
import pytest
from harness.oracle import HealthResult, Oracle, oracle_binary

from hami_core.protocol.handshake import (
    HandshakeKind,
    StampStanding,
    classify,
    format_stamp,
    stamp_standing,
)

pytestmark = pytest.mark.oracle

MISSING, FRESH, EXPIRED = StampStanding.MISSING, StampStanding.FRESH, StampStanding.EXPIRED
RESTAMPED = ("get", "patch")  # HAMi reads the Node again, then patches Requesting_<now>


@pytest.fixture(scope="module")
def utc_oracle() -> Iterator[Oracle]:
    try:
        binary = oracle_binary()
    except FileNotFoundError as exc:
        pytest.fail(f"Go oracle unavailable: {exc}", pytrace=False)
    oracle = Oracle(binary, env={"TZ": "UTC"})
    try:
        yield oracle
    finally:
        oracle.close()


def _dotted(moment: datetime) -> str:
    return "Requesting_" + moment.strftime("%Y.%m.%d %H:%M:%S")


def _go_string(moment: datetime) -> str:
    """Go's ``Time.String()`` of a UTC time, with a monotonic reading, as HAMi up to v2.4 wrote it."""
    return "Requesting_" + moment.strftime("%Y-%m-%d %H:%M:%S.%f") + "123 +0000 UTC m=+1104711.777756895"


@attrs.frozen
class Case:
    """One handshake value, HAMi's answer and ours."""

    value: Callable[[datetime], str | None]
    #: HAMi's CheckHealth: (healthy, need_update, API verbs sent).
    hami: tuple[bool, bool, tuple[str, ...]]
    #: Ours: what the value is, and where it stands against the clock.
    ours: tuple[HandshakeKind, StampStanding]
    allocatable: str | None = None
    #: The spec's beyond-HAMi rule where the answers differ on purpose; empty where they agree.
    beyond: str = ""


CASES = {
    # --- Where HAMi and we agree ---
    "absent": Case(lambda now: None, (True, True, RESTAMPED), (HandshakeKind.ABSENT, MISSING)),
    "plugin report": Case(
        lambda now: "Reported 2024-01-23 04:30:04.434037031 +0000 UTC m=+1104711.777756895",
        (True, True, RESTAMPED),
        (HandshakeKind.REPORT, MISSING),
    ),
    "HAMi's old Deleted_ value": Case(
        lambda now: "Deleted_2024-01-02 00:00:00", (True, True, RESTAMPED), (HandshakeKind.REPORT, MISSING)
    ),
    "fresh stamp": Case(
        lambda now: format_stamp(now - timedelta(seconds=10)), (True, False, ()), (HandshakeKind.STAMP, FRESH)
    ),
    "fresh stamp with fractional seconds": Case(
        lambda now: format_stamp(now - timedelta(seconds=10)) + ".5",
        (True, False, ()),
        (HandshakeKind.STAMP, FRESH),
    ),
    "stamp a little ahead (within one window)": Case(
        lambda now: format_stamp(now + timedelta(seconds=30)), (True, False, ()), (HandshakeKind.STAMP, FRESH)
    ),
    "expired stamp, no allocatable count": Case(
        lambda now: format_stamp(now - timedelta(minutes=10)),
        (False, False, ()),
        (HandshakeKind.STAMP, EXPIRED),
    ),
    "expired stamp, allocatable count 2": Case(
        lambda now: format_stamp(now - timedelta(minutes=10)),
        (True, False, ()),
        (HandshakeKind.STAMP, EXPIRED),
        allocatable="2",
    ),
    # --- Beyond HAMi (spec section 4, rules 1 and 5) ---
    "dotted stamp (HAMi up to v2.4), long expired": Case(
        lambda now: "Requesting_2024.01.10 04:06:57",
        (True, False, ()),
        (HandshakeKind.STAMP, EXPIRED),
        beyond="rule 1: HAMi v2.10 cannot parse the dotted layout, so to it the stamp is healthy forever",
    ),
    "dotted stamp, fresh": Case(
        lambda now: _dotted(now - timedelta(seconds=10)),
        (True, False, ()),
        (HandshakeKind.STAMP, FRESH),
        beyond="rule 1: the same answer for another reason: HAMi cannot parse it, we read a fresh stamp",
    ),
    "Time.String() stamp (the seed's example), long expired": Case(
        lambda now: "Requesting_2024-01-23 04:30:04.434037031 +0000 UTC m=+1104711.777756895",
        (True, False, ()),
        (HandshakeKind.STAMP, EXPIRED),
        beyond="rule 1: HAMi v2.10 cannot parse Time.String(), so to it the stamp is healthy forever",
    ),
    "Time.String() stamp, fresh": Case(
        lambda now: _go_string(now - timedelta(seconds=10)),
        (True, False, ()),
        (HandshakeKind.STAMP, FRESH),
        beyond="rule 1: HAMi cannot parse it, we read a fresh stamp",
    ),
    "far-future stamp": Case(
        lambda now: format_stamp(now + timedelta(days=1)),
        (True, False, ()),
        (HandshakeKind.STAMP, MISSING),
        beyond="rule 5: more than one window ahead; HAMi counts it healthy for a day, we re-stamp it",
    ),
    "unparseable stamp": Case(
        lambda now: "Requesting_garbage",
        (True, False, ()),
        (HandshakeKind.BAD_STAMP, MISSING),
        beyond="rule 5: HAMi counts an unparseable stamp healthy forever, we re-stamp it",
    ),
    "stamp without '_'": Case(
        lambda now: "Requesting",
        (True, False, ()),
        (HandshakeKind.BAD_STAMP, MISSING),
        beyond="rule 5: no time at all; HAMi counts it healthy forever, we re-stamp it",
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_handshake_against_checkhealth(utc_oracle: Oracle, name: str) -> None:
    case = CASES[name]
    clock = utc_oracle.check_health("Reported_probe")  # only to read the oracle's clock and zone
    assert clock.zone == "UTC", clock
    value = case.value(clock.now_before.astimezone(UTC))
    hami = utc_oracle.check_health(value, allocatable=case.allocatable)
    now = hami.now_before.astimezone(UTC)

    assert (hami.healthy, hami.need_update, hami.actions) == case.hami, f"HAMi on {value!r}: {hami}"
    _assert_written_value(hami, value)

    handshake = classify(value, tz=UTC)
    ours = (handshake.kind, stamp_standing(handshake, now=now))
    assert ours == case.ours, f"ours on {value!r}: {ours} ({handshake.error or handshake.time})"


def _assert_written_value(hami: HealthResult, value: str | None) -> None:
    """A re-stamp writes exactly our stamp format for HAMi's clock; otherwise the value is untouched."""
    if hami.need_update:
        written = {format_stamp(hami.now_before), format_stamp(hami.now_after)}
        assert hami.handshake_after in written, hami
    else:
        assert hami.handshake_after == value, hami


def _hami_standing(hami: tuple[bool, bool, tuple[str, ...]]) -> StampStanding:
    """HAMi's answer in our terms: re-stamped is MISSING, unhealthy is EXPIRED, else FRESH."""
    healthy, need_update, _ = hami
    if need_update:
        return MISSING
    return FRESH if healthy else EXPIRED


def test_beyond_hami_cases_really_differ_or_say_why() -> None:
    """Every case marked beyond HAMi is one where HAMi's reading and ours differ (or, for the fresh
    dotted and Time.String() stamps, agree only by accident: HAMi never parsed them)."""
    for name, case in CASES.items():
        differs = _hami_standing(case.hami) != case.ours[1]
        if case.beyond:
            assert differs or "HAMi cannot parse" in case.beyond, name
        else:
            # An expired stamp with a count left: HAMi says healthy, we say expired, and our liveness
            # rule (spec 4.1) keeps the vendor registered while the count is > 0: the same outcome.
            assert not differs or case.allocatable, name
