"""Handshake stamps: formats, Go-compatible time parsing, classification and the window rules (spec 4)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hami_core.protocol.handshake import (
    DEFAULT_WINDOW,
    Handshake,
    HandshakeKind,
    StampStanding,
    classify,
    format_report,
    format_stamp,
    parse_stamp_time,
    stamp_standing,
)

#: The scheduler's zone in these tests: UTC+8, so a zone mix-up shows as an 8-hour error.
TZ = timezone(timedelta(hours=8))
NOW = datetime(2026, 11, 29, 18, 4, 5, tzinfo=TZ)


def at(*args: int, tz: timezone = TZ) -> datetime:
    return datetime(*args, tzinfo=tz)  # type: ignore[arg-type, misc]


# --- writing ----------------------------------------------------------------------------------------


def test_format_stamp_is_go_datetime_in_nows_own_zone() -> None:
    assert format_stamp(NOW) == "Requesting_2026-11-29 18:04:05"
    assert format_stamp(NOW.astimezone(UTC)) == "Requesting_2026-11-29 10:04:05"


def test_format_stamp_drops_the_fraction_and_pads() -> None:
    assert format_stamp(at(987, 1, 2, 3, 4, 5) + timedelta(microseconds=999_999)) == (
        "Requesting_0987-01-02 03:04:05"
    )


def test_format_report() -> None:
    assert format_report(NOW) == "Reported_2026-11-29 18:04:05"


@pytest.mark.parametrize("fmt", [format_stamp, format_report])
def test_formats_refuse_a_naive_clock(fmt: Callable[[datetime], str]) -> None:
    with pytest.raises(ValueError, match="aware"):
        fmt(datetime(2026, 1, 1))


@settings(max_examples=300)
# From 0001-01-02: earlier wall-clock times in UTC+8 fall before year 1 in UTC, which Python cannot hold;
# such a stamp is refused as out of range (a bad stamp, re-stamped), see test_out_of_range_stamps.
@given(st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 31), timezones=st.just(TZ)))
def test_our_stamp_reads_back_to_the_second(moment: datetime) -> None:
    h = classify(format_stamp(moment), tz=TZ)
    assert h.kind is HandshakeKind.STAMP
    assert h.time == moment.replace(microsecond=0)


def test_out_of_range_stamps() -> None:
    assert classify("Requesting_0001-01-01 07:59:59", tz=TZ).kind is HandshakeKind.BAD_STAMP
    assert classify("Requesting_0001-01-01 08:00:00", tz=TZ).kind is HandshakeKind.STAMP


# --- parsing ----------------------------------------------------------------------------------------

GOOD = [
    # Go time.DateTime, naive, in the scheduler's zone
    ("2026-11-29 18:04:05", at(2026, 11, 29, 18, 4, 5)),
    # hour may be one digit
    ("2026-11-29 8:04:05", at(2026, 11, 29, 8, 4, 5)),
    # a space matches one or more spaces
    ("2026-11-29   18:04:05", at(2026, 11, 29, 18, 4, 5)),
    # optional fraction with '.' or ','; digits past the microsecond do not matter
    ("2026-11-29 18:04:05.5", at(2026, 11, 29, 18, 4, 5) + timedelta(microseconds=500_000)),
    ("2026-11-29 18:04:05,123456789123", at(2026, 11, 29, 18, 4, 5) + timedelta(microseconds=123_456)),
    # leap day of a leap year
    ("2024-02-29 00:00:00", at(2024, 2, 29, 0, 0, 0)),
    # HAMi <= v2.4 dotted date
    ("2024.01.10 04:06:57", at(2024, 1, 10, 4, 6, 57)),
    # Go Time.String() with zone and monotonic reading (the seed's example)
    (
        "2024-01-23 04:30:04.434037031 +0000 UTC m=+1104711.777756895",
        at(2024, 1, 23, 4, 30, 4, tz=UTC) + timedelta(microseconds=434_037),
    ),
    ("2024-01-23 12:30:04 +0800 CST", at(2024, 1, 23, 4, 30, 4, tz=UTC)),
    (
        "2024-01-23 04:30:04.5 -0330 NST m=-0.000000001",
        at(2024, 1, 23, 8, 0, 4, tz=UTC) + timedelta(microseconds=500_000),
    ),
    # numeric abbreviation, as Go prints for zones without a name
    ("2024-01-23 16:30:04 +1200 +12", at(2024, 1, 23, 4, 30, 4, tz=UTC)),
    # Go accepts offsets up to 24 hours
    ("2024-01-23 04:30:04 +2400 XYZ", at(2024, 1, 22, 4, 30, 4, tz=UTC)),
    # abbreviation shapes Go's parser takes: 4 or 5 capitals ending in T, WITA, ChST, GMT with hours
    ("2024-01-23 14:30:04 +1000 AEST", at(2024, 1, 23, 4, 30, 4, tz=UTC)),
    ("2024-01-23 12:30:04 +0800 WITA", at(2024, 1, 23, 4, 30, 4, tz=UTC)),
    ("2024-01-23 14:30:04 +1000 ChST", at(2024, 1, 23, 4, 30, 4, tz=UTC)),
    ("2024-01-23 07:30:04 +0300 GMT+3", at(2024, 1, 23, 4, 30, 4, tz=UTC)),
    # Kathmandu's numeric abbreviation, which Go prints but does not parse back; the offset decides
    ("2024-01-23 10:15:04 +0545 +0545", at(2024, 1, 23, 4, 30, 4, tz=UTC)),
]


@pytest.mark.parametrize(("text", "expected"), GOOD, ids=[t for t, _ in GOOD])
def test_go_accepts_and_so_do_we(text: str, expected: datetime) -> None:
    parsed = parse_stamp_time(text, tz=TZ)
    assert parsed == expected
    assert parsed.utcoffset() == timedelta(0)


BAD = [
    ("2026-11-29T18:04:05", "matches none"),  # T separator
    ("26-11-29 18:04:05", "matches none"),  # 2-digit year
    ("+2026-11-29 18:04:05", "matches none"),  # leading sign
    (" 2026-11-29 18:04:05", "matches none"),  # leading space
    ("2026-11-29 18:04:05 ", "matches none"),  # trailing space
    ("2026-11-29 18:04:05.", "matches none"),  # lone '.'
    ("2026-11-29 18:04:05Z", "matches none"),  # trailing text
    ("2026-1-29 18:04:05", "matches none"),  # 1-digit month
    ("2026-11-9 18:04:05", "matches none"),  # 1-digit day
    ("2026-11-29 18:4:05", "matches none"),  # 1-digit minute
    ("2026-11-29 118:04:05", "matches none"),  # 3-digit hour
    ("2026-11-2918:04:05", "matches none"),  # no space
    ("2026.11-29 18:04:05", "matches none"),  # mixed separators
    ("2026-11-29 18:04:05 +0000", "matches none"),  # offset without abbreviation
    ("2026-11-29 18:04:05 m=+1.5", "matches none"),  # monotonic without zone
    ("2024-01-23 12:30:04 +0800 cst", "matches none"),  # lower-case abbreviation
    ("2024-01-23 12:30:04 +0800 CSmT", "matches none"),  # mixed case
    ("2024-01-23 12:30:04 +0800 ABCD", "matches none"),  # 4 capitals not ending in T
    ("2024-01-23 12:30:04 +0800 CST m=+1.5x", "matches none"),  # junk in the monotonic reading
    ("٢٠٢٦-11-29 18:04:05", "matches none"),  # non-ASCII digits
    ("2026-13-01 00:00:00", "month 13 out of range"),
    ("2026-00-01 00:00:00", "month 0 out of range"),
    ("2026-02-29 00:00:00", "day 29 out of range"),
    ("2024-02-30 00:00:00", "day 30 out of range"),
    ("2026-04-31 00:00:00", "day 31 out of range"),
    ("2026-04-00 00:00:00", "day 0 out of range"),
    ("2026-11-29 24:00:00", "hour 24 out of range"),
    ("2026-11-29 23:60:00", "minute 60 out of range"),
    ("2026-11-29 23:59:60", "second 60 out of range"),
    ("2026-11-29 23:59:59 +2500 UTC", "zone offset out of range"),
    ("0000-01-01 00:00:00", "year 0000"),
    ("9999-12-31 23:59:59 -0100 XYZ", "representable range"),
]


@pytest.mark.parametrize(("text", "message"), BAD, ids=[t for t, _ in BAD])
def test_go_refuses_and_so_do_we(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_stamp_time(text, tz=TZ)


def test_naive_time_uses_the_scheduler_zone_and_its_dst() -> None:
    berlin = ZoneInfo("Europe/Berlin")
    winter = parse_stamp_time("2026-01-15 12:00:00", tz=berlin)
    summer = parse_stamp_time("2026-07-15 12:00:00", tz=berlin)
    assert (winter.hour, summer.hour) == (11, 10)


# --- classification ---------------------------------------------------------------------------------

CLASSIFY = [
    (None, HandshakeKind.ABSENT),
    ("Requesting_2026-11-29 18:04:05", HandshakeKind.STAMP),
    ("Requesting_2024.01.10 04:06:57", HandshakeKind.STAMP),
    ("Requesting_2024-01-23 04:30:04.434037031 +0000 UTC m=+1104711.777756895", HandshakeKind.STAMP),
    # "Requesting" anywhere, case-sensitive; the time is after the first '_'
    ("xRequesting_2026-11-29 18:04:05", HandshakeKind.STAMP),
    ("Requesting", HandshakeKind.BAD_STAMP),
    ("Requesting_", HandshakeKind.BAD_STAMP),
    ("Requesting_not-a-timestamp", HandshakeKind.BAD_STAMP),
    ("Requesting_x_2026-11-29 18:04:05", HandshakeKind.BAD_STAMP),
    ("Requesting_2024-02-30 00:00:00", HandshakeKind.BAD_STAMP),
    ("Reported 2024-01-23 04:30:04.434037031 +0000 UTC m=+1104711.777756895", HandshakeKind.REPORT),
    ("Reported_2024.01.23 04:30:05", HandshakeKind.REPORT),
    ("Reported_21216.08.21 09:05:07", HandshakeKind.REPORT),
    ("Deleted_2024-01-02 00:00:00", HandshakeKind.REPORT),
    ("requesting_2026-11-29 18:04:05", HandshakeKind.REPORT),
    ("Unknown", HandshakeKind.REPORT),
    ("", HandshakeKind.REPORT),
]


@pytest.mark.parametrize(("value", "kind"), CLASSIFY, ids=[repr(v) for v, _ in CLASSIFY])
def test_classify(value: str | None, kind: HandshakeKind) -> None:
    h = classify(value, tz=TZ)
    assert h.kind is kind
    assert h.value == value
    assert (h.time is not None) == (kind is HandshakeKind.STAMP)
    assert (h.error is not None) == (kind is HandshakeKind.BAD_STAMP)


def test_classify_reads_the_stamp_time_in_the_given_zone() -> None:
    h = classify("Requesting_2026-11-29 18:04:05", tz=TZ)
    assert h == Handshake(HandshakeKind.STAMP, "Requesting_2026-11-29 18:04:05", time=NOW)


def test_bad_stamp_error_names_the_value() -> None:
    assert "Requesting" in (classify("Requesting", tz=TZ).error or "")
    assert "not-a-timestamp" in (classify("Requesting_not-a-timestamp", tz=TZ).error or "")


# --- the window -------------------------------------------------------------------------------------


def standing(stamp_at: datetime, *, now: datetime = NOW, window: timedelta = DEFAULT_WINDOW) -> StampStanding:
    return stamp_standing(classify(format_stamp(stamp_at), tz=TZ), now=now, window=window)


WINDOW_CASES = [
    ("written now", timedelta(0), StampStanding.FRESH),
    ("59.999 s old", timedelta(seconds=59.999), StampStanding.FRESH),
    ("exactly 60 s old", timedelta(seconds=60), StampStanding.EXPIRED),
    ("two hours old", timedelta(hours=2), StampStanding.EXPIRED),
    ("60 s ahead", timedelta(seconds=-60), StampStanding.FRESH),
    ("61 s ahead", timedelta(seconds=-61), StampStanding.MISSING),
    ("far future (2128)", NOW - at(2128, 12, 2, 0, 0, 0), StampStanding.MISSING),
]


@pytest.mark.parametrize(
    ("age", "expected"), [(a, e) for _, a, e in WINDOW_CASES], ids=[i for i, _, _ in WINDOW_CASES]
)
def test_window(age: timedelta, expected: StampStanding) -> None:
    # The stamp has 1 s resolution: move the clock, not the stamp.
    assert standing(NOW, now=NOW + age) is expected


def test_window_is_compared_in_absolute_time_across_zones() -> None:
    assert standing(NOW, now=(NOW + timedelta(seconds=59)).astimezone(UTC)) is StampStanding.FRESH
    assert standing(NOW, now=(NOW + timedelta(seconds=60)).astimezone(UTC)) is StampStanding.EXPIRED


def test_a_stamp_from_a_zoned_scheduler_across_dst() -> None:
    berlin = ZoneInfo("Europe/Berlin")
    # 02:59:30 happens twice that night (clocks go back at 03:00 CEST); the first one is 00:59:30 UTC, and
    # the window is 60 real seconds from there, not 60 wall-clock seconds.
    stamp = classify("Requesting_2026-10-25 02:59:30", tz=berlin)
    now = datetime(2026, 10, 25, 1, 0, 29, tzinfo=UTC)
    assert stamp_standing(stamp, now=now) is StampStanding.FRESH
    assert stamp_standing(stamp, now=now + timedelta(seconds=1)) is StampStanding.EXPIRED


def test_custom_window() -> None:
    ten = timedelta(seconds=10)
    assert standing(NOW, now=NOW + ten, window=ten) is StampStanding.EXPIRED
    assert standing(NOW, now=NOW + ten / 2, window=ten) is StampStanding.FRESH


@pytest.mark.parametrize("kind_value", [None, "Reported_2024.01.23 04:30:05", "Requesting_garbage"])
def test_no_usable_stamp_is_missing(kind_value: str | None) -> None:
    assert stamp_standing(classify(kind_value, tz=TZ), now=NOW) is StampStanding.MISSING


def test_window_refuses_a_naive_clock_and_a_bad_window() -> None:
    h = classify("Requesting_2026-11-29 18:04:05", tz=TZ)
    with pytest.raises(ValueError, match="aware"):
        stamp_standing(h, now=datetime(2026, 11, 29))
    with pytest.raises(ValueError, match="window"):
        stamp_standing(h, now=NOW, window=timedelta(0))
