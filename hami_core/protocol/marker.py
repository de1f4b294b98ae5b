"""The "cleaned up, waiting for a sign of life" marker on the Node (spec 4.2, beyond HAMi).

A vendor cleaned up on a node is readmitted only on a sign of life. That fact must outlive the process
that cleaned it: a scheduler that restarts, or a new leader, finds it on the Node, in an annotation of
this project's own (HAMi reads only its ``hami.io/`` keys and ignores it), one per vendor:

    cleaned.hami-core.io/DCU: {"cleanedAt":"2026-12-01 09:00:00","handshake":"sha256:...",
                               "register":"sha256:..."}    (one line on the Node)

It holds what readmission compares against: the fingerprints (SHA-256) of the register and handshake
values the vendor was cleaned up with (a key is left out for a value that was absent), and, for the
operator's eyes only, the scheduler's wall time of the cleanup (never judged: wall clocks step). The
cleanup writes it in the same conditional patch as its handshake delete; readmission removes it;
``hami cleanup`` removes it. The vendor key is the annotation's name part, which a vendor key always
fits (a driver's key is a label value: at most 63 letters, digits, ``-_.``).
"""

from __future__ import annotations

import hashlib
import json
import re
import sys
from datetime import datetime

import attrs

__all__ = ["MARKER_PREFIX", "Marker", "fingerprint", "format_marker", "marker_annotation", "parse_marker"]

#: The prefix of every marker annotation; the vendor key follows.
MARKER_PREFIX = "cleaned.hami-core.io/"
#: A marker value longer than this is not one of ours (ours are about 190 characters).
_MARKER_MAX = 512
_FINGERPRINT = re.compile(r"sha256:[0-9a-f]{64}", re.ASCII)


def marker_annotation(vendor_key: str) -> str:
    """The marker annotation of a vendor, e.g. ``cleaned.hami-core.io/NVIDIA`` (one interned string)."""
    return sys.intern(MARKER_PREFIX + vendor_key)


def fingerprint(value: str | None) -> str | None:
    """``sha256:<hex>`` of a value as it is on the wire (UTF-8), or ``None`` for an absent one."""
    if value is None:
        return None
    return "sha256:" + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


@attrs.frozen
class Marker:
    """What a marker says: the fingerprints of the values the vendor was cleaned up with."""

    register: str | None = None
    handshake: str | None = None


def format_marker(marker: Marker, cleaned_at: datetime) -> str:
    """The marker's annotation value (``cleaned_at``: the wall time of the cleanup, for operators)."""
    body = {"cleanedAt": cleaned_at.strftime("%Y-%m-%d %H:%M:%S")}
    body.update(
        (k, v) for k, v in (("handshake", marker.handshake), ("register", marker.register)) if v is not None
    )
    return json.dumps(body, sort_keys=True, separators=(",", ":"))


def parse_marker(value: str | None) -> Marker | None:
    """The marker a value holds, or ``None`` when there is none or it is not one of ours (a value this
    project did not write is no marker: the next decision replaces or removes it)."""
    if value is None or len(value) > _MARKER_MAX:
        return None
    try:
        body = json.loads(value)
    except ValueError:
        return None
    if not isinstance(body, dict) or not isinstance(body.get("cleanedAt"), str):
        return None
    register, handshake = body.get("register"), body.get("handshake")
    for part in (register, handshake):
        if part is not None and (not isinstance(part, str) or not _FINGERPRINT.fullmatch(part)):
            return None
    return Marker(register=register, handshake=handshake)
