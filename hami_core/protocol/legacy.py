"""The legacy colon encoding of a register annotation (spec 3.1), byte-compatible with HAMi.

A value is a list of records, each ``id,count,devmem,devcore,type,numa,health,index,mode`` followed by ``:``.
The decoder applies HAMi's rules in HAMi's order (Go ``strconv`` integers and booleans, 7 or 9 fields,
empty segments skipped); the first failure rejects the whole value.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from hami_core.protocol import fastpath as _fastpath
from hami_core.protocol.errors import DecodeError, EncodeError, shorten
from hami_core.protocol.model import INT32, INT64, DeviceInfo, IntRange
from hami_core.protocol.plain import plain_int, plain_str
from hami_core.protocol.size import check_value

__all__ = ["decode_legacy", "decode_legacy_strict", "encode_legacy", "encode_legacy_strict"]

#: Go ``strconv.ParseInt`` base 10: an optional sign, then ASCII digits only (leading zeros are fine).
_GO_INT = re.compile(r"[+-]?[0-9]+")
#: Every spelling Go's ``strconv.ParseBool`` accepts.
_GO_BOOL = {
    "1": True,
    "t": True,
    "T": True,
    "TRUE": True,
    "true": True,
    "True": True,
    "0": False,
    "f": False,
    "F": False,
    "FALSE": False,
    "false": False,
    "False": False,
}
#: More digits than this cannot be in range of any 64-bit type, whatever the leading zeros.
_MAX_INT_DIGITS = 20
#: 7 fields (HAMi before v2.5) mean index 0 and this mode.
_DEFAULT_MODE = "hami-core"
_INDEX_MAX = INT64.high  # HAMi writes the index through a signed Go int


def _parse_int(text: str, field: str, go_range: IntRange, where: str) -> int:
    if len(text) <= 9 and text.isdigit() and text.isascii():  # the common case, in range of every field
        return int(text)
    if _GO_INT.fullmatch(text) is None:
        raise DecodeError(f"{where}: invalid {field} field {shorten(text)}: not a base-10 integer")
    digits = text.lstrip("+-").lstrip("0")
    if len(digits) > _MAX_INT_DIGITS or not go_range.low <= (number := int(text)) <= go_range.high:
        raise DecodeError(
            f"{where}: invalid {field} field {shorten(text)}: out of range for {go_range.go_type}"
        )
    return number


def _decode_record(segment: str, where: str) -> DeviceInfo:
    if "," not in segment:
        raise DecodeError(f"{where}: malformed segment {shorten(segment)}: no ',' in it")
    items = segment.split(",")
    if len(items) not in (7, 9):
        raise DecodeError(f"{where}: unexpected field count {len(items)} (want 7 or 9) in {shorten(segment)}")
    # HAMi's order, so that the same bad record fails on the same field.
    count = _parse_int(items[1], "count", INT32, where)
    devmem = _parse_int(items[2], "memory", INT32, where)
    devcore = _parse_int(items[3], "core", INT32, where)
    health = _GO_BOOL.get(items[6])
    if health is None:
        raise DecodeError(f"{where}: invalid health field {shorten(items[6])}: not a Go boolean")
    numa = _parse_int(items[5], "numa", INT64, where)
    index, mode = 0, _DEFAULT_MODE
    if len(items) == 9:
        index = _parse_int(items[7], "index", INT64, where)
        if index < 0:
            raise DecodeError(f"{where}: index field must not be negative: {shorten(items[7])}")
        mode = items[8]
    return DeviceInfo(
        id=items[0],
        index=index,
        count=count,
        devmem=devmem,
        devcore=devcore,
        type=items[4],
        numa=numa,
        mode=mode,
        health=health,
    )


def decode_legacy(value: str) -> list[DeviceInfo]:
    """Decode a legacy colon value as HAMi's ``DecodeNodeDevices`` does; raise ``DecodeError``."""
    check_value(value, "legacy")
    fast = _fastpath.decode_legacy(value)
    return fast if fast is not None else _decode_strict(value)


def decode_legacy_strict(value: str) -> list[DeviceInfo]:
    """``decode_legacy`` without the fast path (what the fast path is checked against)."""
    check_value(value, "legacy")
    return _decode_strict(value)


def _decode_strict(value: str) -> list[DeviceInfo]:
    if ":" not in value:
        raise DecodeError(f"legacy value {shorten(value)} is missing the device separator ':'")
    devices: list[DeviceInfo] = []
    offset = 0
    for number, segment in enumerate(value.split(":"), start=1):
        if segment:
            devices.append(_decode_record(segment, f"segment {number} (offset {offset})"))
        offset += len(segment) + 1
    return devices


def _field_text(device: DeviceInfo, name: str, where: str) -> str:
    text = plain_str(getattr(device, name))
    if "," in text or ":" in text:
        raise EncodeError(
            f"{where}: {name} {shorten(text)} holds ',' or ':', which the legacy encoding cannot carry"
        )
    return text


def encode_legacy(devices: Sequence[DeviceInfo]) -> str:
    """Encode as HAMi's ``EncodeNodeDevices``: 9 fields and ``:`` per device, ``""`` for no devices.

    Beyond HAMi: a device whose id, type or mode holds ``,`` or ``:``, or whose index does not fit Go's
    signed int, is refused with ``EncodeError`` instead of being written as a value nobody can decode.
    """
    fast = _fastpath.encode_legacy(devices)
    return fast if fast is not None else encode_legacy_strict(devices)


def encode_legacy_strict(devices: Sequence[DeviceInfo]) -> str:
    """``encode_legacy`` without the fast path (what the fast path is checked against)."""
    parts: list[str] = []
    for position, device in enumerate(devices):
        where = f"device {position}"
        if not isinstance(device, DeviceInfo):
            raise EncodeError(f"{where}: expected a DeviceInfo, got {type(device).__name__}")
        index = plain_int(device.index)
        if index > _INDEX_MAX:
            raise EncodeError(f"{where}: index {index} does not fit the legacy encoding's int64")
        count, devmem, devcore, numa = map(
            plain_int, (device.count, device.devmem, device.devcore, device.numa)
        )
        parts.append(
            f"{_field_text(device, 'id', where)},{count},{devmem},{devcore},"
            f"{_field_text(device, 'type', where)},{numa},{'true' if device.health else 'false'},"
            f"{index},{_field_text(device, 'mode', where)}:"
        )
    return "".join(parts)
