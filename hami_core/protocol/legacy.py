"""The legacy colon encoding of a register annotation (spec 3.1), byte-compatible with HAMi.

A value is a list of records, each ``id,count,devmem,devcore,type,numa,health,index,mode`` followed by ``:``
(the columns are the field table's, ``model.fields_of``). The decoder applies HAMi's rules (Go ``strconv``
integers and booleans, 7 or 9 fields, empty segments skipped); the first failure rejects the whole value.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from operator import attrgetter
from typing import Any

from hami_core.protocol.errors import DecodeError, EncodeError, shorten
from hami_core.protocol.model import INT64, DeviceInfo, IntRange, fields_of
from hami_core.protocol.size import check_value

__all__ = ["decode_legacy", "encode_legacy"]

#: The legacy record's fields, by column.
_COLUMNS = sorted((f for f in fields_of(DeviceInfo) if f.legacy is not None), key=lambda f: f.legacy or 0)
assert [f.legacy for f in _COLUMNS] == list(range(9))
#: HAMi reads and writes every integer through Go's signed 64-bit int: a range is cut to int64.
_RANGES = {
    f.name: IntRange(
        "int64" if f.kind.high > INT64.high else f.kind.go_type,
        max(f.kind.low, INT64.low),
        min(f.kind.high, INT64.high),
    )
    for f in _COLUMNS
    if isinstance(f.kind, IntRange)
}
#: Go ``strconv.ParseInt`` base 10: an optional sign, then ASCII digits only (leading zeros are fine).
_GO_INT = re.compile(r"[+-]?[0-9]+")
#: Every spelling Go's ``strconv.ParseBool`` accepts.
_GO_BOOL = dict.fromkeys(("1", "t", "T", "TRUE", "true", "True"), True)
_GO_BOOL.update(dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False))
#: 7 fields (HAMi before v2.5) mean index 0 and mode ``hami-core``.
_SEVEN_FIELD_TAIL = ["0", "hami-core"]


class _BadRecord(ValueError):
    """A record HAMi refuses; the caller says which segment it was."""


def _parse_int(text: str, name: str, go_range: IntRange) -> int:
    if _GO_INT.fullmatch(text) is None:
        raise _BadRecord(f"invalid {name} field {shorten(text)}: not a base-10 integer")
    digits = text.lstrip("+-").lstrip("0")
    if len(digits) > 20 or not go_range.low <= (number := int(text)) <= go_range.high:
        if go_range.low == 0 and text[0] == "-" and len(digits) <= 20:
            raise _BadRecord(f"{name} field must not be negative: {shorten(text)}")
        raise _BadRecord(f"invalid {name} field {shorten(text)}: out of range for {go_range.go_type}")
    return number


#: The attributes by column, and the columns read as integers or as a bool, in the order HAMi reads them
#: (spec 3.1, step 5: health before numa), so a bad record fails on HAMi's field.
_NAMES = [f.name for f in _COLUMNS]
_READERS: list[tuple[str, IntRange | None]] = [
    (_NAMES[column], _RANGES.get(_NAMES[column])) for column in (1, 2, 3, 6, 5, 7)
]


def _decode_record(segment: str) -> DeviceInfo:
    items = segment.split(",")
    if len(items) == 7:
        items += _SEVEN_FIELD_TAIL
    elif len(items) != 9:
        if len(items) == 1:
            raise _BadRecord(f"malformed segment {shorten(segment)}: no ',' in it")
        raise _BadRecord(f"unexpected field count {len(items)} (want 7 or 9) in {shorten(segment)}")
    values: dict[str, Any] = dict(zip(_NAMES, items, strict=True))
    for name, go_range in _READERS:
        text = values[name]
        if go_range is None:  # the bool
            flag = values[name] = _GO_BOOL.get(text)
            if flag is None:
                raise _BadRecord(f"invalid {name} field {shorten(text)}: not a Go boolean")
        elif len(text) <= 9 and text.isdigit() and text.isascii():  # in range of every field
            values[name] = int(text)
        else:
            values[name] = _parse_int(text, name, go_range)
    return DeviceInfo(**values)


def decode_legacy(value: str) -> list[DeviceInfo]:
    """Decode a legacy colon value as HAMi's ``DecodeNodeDevices`` does; raise ``DecodeError``."""
    check_value(value, "legacy")
    if ":" not in value:
        raise DecodeError(f"legacy value {shorten(value)} is missing the device separator ':'")
    devices: list[DeviceInfo] = []
    offset = 0
    for number, segment in enumerate(value.split(":"), start=1):
        if segment:
            try:
                devices.append(_decode_record(segment))
            except _BadRecord as exc:
                raise DecodeError(f"segment {number} (offset {offset}): {exc}") from None
        offset += len(segment) + 1
    return devices


#: A record's values by column, and its text: a record holds exact str and int values (the model keeps
#: a subclass's own characters and digits), written as they are; the bool as Go writes it.
_ROW = attrgetter(*(f.name for f in _COLUMNS))
_BOOL_AT = next(position for position, f in enumerate(_COLUMNS) if f.kind is bool)
_FORMAT = ",".join("%d" if isinstance(f.kind, IntRange) else "%s" for f in _COLUMNS) + ":"
_STRINGS = [(position, f.name) for position, f in enumerate(_COLUMNS) if f.kind is str]


def _refuse(position: int, device: Any) -> None:
    """Raise ``EncodeError`` when a device cannot be written in the legacy encoding."""
    where = f"device {position}"
    if not isinstance(device, DeviceInfo):
        raise EncodeError(f"{where}: expected a DeviceInfo, got {type(device).__name__}")
    values = _ROW(device)
    for column, name in _STRINGS:
        if "," in values[column] or ":" in values[column]:
            raise EncodeError(
                f"{where}: {name} {shorten(values[column])} holds ',' or ':', "
                "which the legacy encoding cannot carry"
            )
    for name, go_range in _RANGES.items():
        if getattr(device, name) not in go_range:
            raise EncodeError(
                f"{where}: {name} {getattr(device, name)} does not fit the legacy encoding's int64"
            )


def encode_legacy(devices: Sequence[DeviceInfo]) -> str:
    """Encode as HAMi's ``EncodeNodeDevices``: 9 fields and ``:`` per device, ``""`` for no devices.

    Beyond HAMi: a device whose id, type or mode holds ``,`` or ``:``, or whose index does not fit Go's
    signed int, is refused with ``EncodeError`` instead of being written as a value nobody can decode.
    """
    for position, device in enumerate(devices):
        if type(device) is not DeviceInfo or device.index > INT64.high:
            _refuse(position, device)
    at = _BOOL_AT
    records = [
        _FORMAT % (*row[:at], "true" if row[at] else "false", *row[at + 1 :]) for row in map(_ROW, devices)
    ]
    text = "".join(records)
    if text.count(",") != (len(_COLUMNS) - 1) * len(records) or text.count(":") != len(
        records
    ):  # a separator in a string
        for position, device in enumerate(devices):
            _refuse(position, device)
    return text
