"""Durations as Kubernetes writes them (Go's ``time.ParseDuration``, or plain seconds), and the one range
every daemon timing must be in. The bottom layer: it imports nothing of hami_core."""

from __future__ import annotations

import math
import re
from datetime import timedelta
from fractions import Fraction
from typing import Any

import attrs

__all__ = ["MAX_SECONDS", "UNITS", "check_seconds", "format_duration", "parse_duration", "seconds", "span"]

#: The longest any timing of the daemons may be: a day (longer ones overflow timers, or a Lease's int32).
MAX_SECONDS = 86_400.0

#: Go's duration units, in seconds.
UNITS: dict[str, Fraction] = {
    "ns": Fraction(1, 10**9),
    "us": Fraction(1, 10**6),
    "\u00b5s": Fraction(1, 10**6),  # MICRO SIGN, as Go accepts
    "\u03bcs": Fraction(1, 10**6),  # GREEK SMALL LETTER MU, as Go accepts
    "ms": Fraction(1, 10**3),
    "s": Fraction(1),
    "m": Fraction(60),
    "h": Fraction(3600),
}

#: A plain number of seconds: digits with an optional fraction and exponent (``15``, ``0.5``, ``1e3``).
_PLAIN = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
#: One ``<number><unit>`` element of a Go duration; the unit is any run of non-digits, checked after.
_ELEMENT = re.compile(r"([0-9]*(?:\.[0-9]*)?)([^0-9.\s]+)")


def _show(text: str) -> str:
    return repr(text if len(text) <= 40 else f"{text[:18]}...{text[-18:]}")


def parse_duration(text: str) -> float:
    """Seconds of a Go duration (``1m30s``, ``-1s``) or plain seconds (``90``), spaces around ignored;
    whether the value is allowed is ``check_seconds``'s business."""
    value = text.strip()
    if _PLAIN.fullmatch(value):
        return float(value)
    sign = -1 if value.startswith("-") else 1
    rest = value[1:] if value[:1] in ("+", "-") else value
    total, position = Fraction(0), 0
    while position < len(rest) or position == 0:
        match = _ELEMENT.match(rest, position)
        if match is None or match.group(1) in ("", "."):
            raise ValueError(f"{_show(text)} is not a duration (like 15s, 1m30s, 500ms or plain seconds)")
        number, unit = match.groups()
        if unit not in UNITS:
            raise ValueError(f"{_show(text)}: unknown unit {unit!r} (units: ns, us, ms, s, m, h)")
        total += Fraction(number.removesuffix(".")) * UNITS[unit]
        position = match.end()
    return float(sign * total)


def format_duration(value: float) -> str:
    """``value`` seconds in Go's short form for messages and help: ``15s``, ``1m30s``, ``500ms``, ``1h``."""
    if not math.isfinite(value):
        return f"{value}s"
    if value < 0:
        return "-" + format_duration(-value)
    if value == 0:
        return "0s"
    if value < 1:
        return f"{value * 1000:g}ms"
    hours, rest = divmod(value, 3600)
    minutes, secs = divmod(rest, 60)
    text = (f"{int(hours)}h" if hours else "") + (f"{int(minutes)}m" if minutes else "")
    return text + (f"{round(secs, 6):g}s" if secs or not text else "")


def span(value: float | timedelta) -> str:
    """A duration's size in the one prose style of every message (``4.5 s``, ``3 min 5 s``, ``3 d 4 h``);
    ``format_duration`` is for settings."""
    seconds = abs(value.total_seconds() if isinstance(value, timedelta) else value)
    if seconds < 10:
        return f"{seconds:.1f}".rstrip("0").rstrip(".") + " s"
    whole = int(seconds)
    if whole < 60:
        return f"{whole} s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes} min {secs} s" if secs else f"{minutes} min"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min" if minutes else f"{hours} h"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h" if hours else f"{days} d"


def check_seconds(name: str, value: float) -> None:
    """A timing: more than 0 and at most ``MAX_SECONDS`` (a day); ``ValueError`` naming ``name`` else."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= MAX_SECONDS:
        raise ValueError(f"{name} must be > 0 and at most {MAX_SECONDS:g} seconds (24h), got {value!r}")


def seconds(instance: object, attribute: attrs.Attribute[Any], value: float) -> None:
    """attrs validator of a timing field (``check_seconds``, named as its flag: ``handshake-window``)."""
    check_seconds(attribute.name.replace("_", "-"), value)
