"""Handshake values (spec 4): writing stamps and reports, and reading any value as Go's ``time`` would.

Nothing here reads the clock: the rules that need one take ``now``.
"""

from __future__ import annotations

import calendar
import enum
import re
from datetime import UTC, datetime, timedelta, tzinfo

import attrs

from hami_core.protocol.errors import shorten

#: How long a scheduler stamp stays fresh (HAMi: 60 s, not configurable there).
DEFAULT_WINDOW = timedelta(seconds=60)


def _check_aware(now: datetime, what: str) -> None:
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError(f"{what}: expected an aware datetime (the scheduler's zone), got naive {now!r}")


def _go_datetime(moment: datetime, what: str) -> str:
    """Go's ``time.DateTime`` layout ``2006-01-02 15:04:05``, in the datetime's own zone."""
    _check_aware(moment, what)
    return f"{moment.year:04d}-{moment:%m-%d %H:%M:%S}"


def format_stamp(now: datetime) -> str:
    """The scheduler's stamp, ``Requesting_YYYY-MM-DD HH:MM:SS`` in ``now``'s zone, no zone suffix."""
    return "Requesting_" + _go_datetime(now, "format_stamp")


def format_report(now: datetime) -> str:
    """Our reporter's heartbeat, ``Reported_YYYY-MM-DD HH:MM:SS`` in ``now``'s zone."""
    return "Reported_" + _go_datetime(now, "format_report")


# The three layouts of spec 4 (``time.DateTime``, HAMi v2.4's dotted date, ``Time.String()`` with its
# monotonic reading ignored) as Go's ``time.Parse`` reads them (``format.go``: hour 1-2 digits, a space
# one or more, a fraction after ``.`` or ``,``, offsets up to 24:60, no trailing text).
_STAMP_TIME = re.compile(
    r"(?P<year>\d{4})(?P<sep>[-.])(?P<month>\d{2})(?P=sep)(?P<day>\d{2}) +"
    r"(?P<hour>\d{1,2}):(?P<minute>\d{2}):(?P<second>\d{2})(?:[.,](?P<fraction>\d+))?"
    # Time.String(): the offset, the zone's abbreviation in the shapes Go's parser takes, or the numeric
    # one Go prints for a zone without a name (+08; Go refuses +0545, but the offset before says it all).
    r"(?: +(?P<sign>[-+])(?P<off_hours>\d{2})(?P<off_minutes>\d{2})"
    r" +(?:[A-Z]{3}|[A-Z]{3,4}T|WITA|ChST|MeST|GMT[-+]\d{1,2}|[-+]\d{2}(?:\d{2})?)"
    r"(?: +m=[-+]\d+(?:\.\d{1,9})?)?)?",
    re.ASCII,
)


def _wall_clock(match: re.Match[str], text: str) -> datetime:
    """The naive wall-clock time of a match, with Go's range checks."""
    year, month, day = int(match["year"]), int(match["month"]), int(match["day"])
    hour, minute, second = int(match["hour"]), int(match["minute"]), int(match["second"])
    where = f"in stamp time {shorten(text)}"
    if not 1 <= month <= 12:
        raise ValueError(f"month {month} out of range {where}")
    if year < 1:
        raise ValueError(f"year {year:04d} is before year 1, which cannot be represented, {where}")
    if not 1 <= day <= calendar.monthrange(year, month)[1]:
        raise ValueError(f"day {day} out of range for {year:04d}-{month:02d} {where}")
    for unit, value, high in (("hour", hour, 23), ("minute", minute, 59), ("second", second, 59)):
        if value > high:
            raise ValueError(f"{unit} {value} out of range {where}")
    # Python keeps microseconds; Go's nanoseconds beyond them cannot matter against a 1 s-resolution stamp.
    microsecond = int((match["fraction"] or "")[:6].ljust(6, "0"))
    return datetime(year, month, day, hour, minute, second, microsecond)


def parse_stamp_time(text: str, *, tz: tzinfo) -> datetime:
    """A stamp's time (the text after its first ``_``) in UTC, a naive form read in ``tz`` (a repeated
    wall-clock time as its first occurrence); ``ValueError`` naming what was wrong."""
    match = _STAMP_TIME.fullmatch(text)
    try:
        if match is not None and match["sign"] is None:
            return _wall_clock(match, text).replace(tzinfo=tz).astimezone(UTC)
        if match is not None and match["sep"] == "-":
            off_hours, off_minutes = int(match["off_hours"]), int(match["off_minutes"])
            if off_hours > 24 or off_minutes > 60:
                raise ValueError(f"zone offset out of range in stamp time {shorten(text)}")
            offset = timedelta(hours=off_hours, minutes=off_minutes) * (-1 if match["sign"] == "-" else 1)
            return (_wall_clock(match, text) - offset).replace(tzinfo=UTC)  # via UTC: Go's 24:60 is no zone
    except OverflowError:
        raise ValueError(f"stamp time {shorten(text)} is out of the representable range") from None
    raise ValueError(
        f"stamp time {shorten(text)} matches none of 'YYYY-MM-DD HH:MM:SS', 'YYYY.MM.DD HH:MM:SS' or "
        "Go's Time.String() form"
    )


class HandshakeKind(enum.Enum):
    """What a handshake value is: none, not a scheduler stamp (a report, ``Deleted_...``), a stamp whose
    time parsed, or one whose time did not."""

    ABSENT = "absent"
    REPORT = "report"
    STAMP = "stamp"
    BAD_STAMP = "bad-stamp"


@attrs.frozen
class Handshake:
    """A classified handshake value: the stamp's ``time`` in UTC, or the ``error`` why it did not parse."""

    kind: HandshakeKind
    value: str | None = None
    time: datetime | None = None
    error: str | None = None


def classify(value: str | None, *, tz: tzinfo) -> Handshake:
    """Spec 4, rule 1; ``tz`` is the scheduler's zone, for stamps without one."""
    if value is None:
        return Handshake(HandshakeKind.ABSENT)
    if "Requesting" not in value:  # what makes a value a scheduler stamp: HAMi's case-sensitive test
        return Handshake(HandshakeKind.REPORT, value)
    _, underscore, text = value.partition("_")
    if not underscore:
        error = f"stamp {shorten(value)} has no '_' before a time"
        return Handshake(HandshakeKind.BAD_STAMP, value, error=error)
    try:
        return Handshake(HandshakeKind.STAMP, value, time=parse_stamp_time(text, tz=tz))
    except ValueError as exc:
        return Handshake(HandshakeKind.BAD_STAMP, value, error=str(exc))


class StampStanding(enum.Enum):
    """Where a handshake stands against the clock: no usable stamp, younger than the window, or older."""

    MISSING = "missing"
    FRESH = "fresh"
    EXPIRED = "expired"


def stamp_standing(
    handshake: Handshake, *, now: datetime, window: timedelta = DEFAULT_WINDOW
) -> StampStanding:
    """Spec 4, rules 3 and 5: expired when ``now >= stamp + window``; a stamp more than ``window`` ahead
    of ``now``, or one that does not parse, is no stamp at all (beyond HAMi)."""
    _check_aware(now, "stamp_standing")
    if window <= timedelta(0):
        raise ValueError(f"stamp_standing: the handshake window must be positive, got {window}")
    if handshake.kind is not HandshakeKind.STAMP or handshake.time is None or handshake.time - now > window:
        return StampStanding.MISSING
    if now >= handshake.time + window:
        return StampStanding.EXPIRED
    return StampStanding.FRESH
