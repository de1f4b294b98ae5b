"""The "cleaned up, waiting for a sign of life" marker on the Node (spec 4.2, beyond HAMi):
``docs/architecture.md``, "The cleaned-up marker". Absent values have no fingerprint in it; its time is
never judged (wall clocks step)."""

from __future__ import annotations

import functools
import hashlib
import json
import re
import sys
from datetime import datetime

import attrs

#: A marker value longer than this is not one of ours (ours are about 190 characters).
_MARKER_MAX = 512
_FINGERPRINT = re.compile(r"sha256:[0-9a-f]{64}", re.ASCII)


def marker_annotation(vendor_key: str) -> str:
    """E.g. ``cleaned.hami-core.io/NVIDIA`` (interned; a vendor key, a label value, always fits)."""
    return sys.intern("cleaned.hami-core.io/" + vendor_key)


@functools.lru_cache(maxsize=64)
def fingerprint(value: str | None) -> str | None:
    """``sha256:<hex>`` of a value as it is on the wire (UTF-8), or ``None`` for an absent one. Memoized:
    one evaluation asks it for the same register value in ``register_to_decode`` and in ``decide``."""
    if value is None:
        return None
    return "sha256:" + hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


@attrs.frozen
class Marker:
    """The fingerprints of the values the vendor was cleaned up with."""

    register: str | None = None
    handshake: str | None = None


def format_marker(marker: Marker, cleaned_at: datetime) -> str:
    """The marker's annotation value (``cleaned_at``: the wall time of the cleanup, for operators)."""
    body = {"cleanedAt": cleaned_at.strftime("%Y-%m-%d %H:%M:%S"), **attrs.asdict(marker)}
    return json.dumps({k: v for k, v in body.items() if v is not None}, sort_keys=True, separators=(",", ":"))


def parse_marker(value: str | None) -> Marker | None:
    """The marker a value holds, or ``None`` (also for a value not ours: the next decision removes it)."""
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
