"""The legacy colon encoding of a register annotation (spec 3.1), byte-compatible with HAMi.

A value is a list of records, each ``id,count,devmem,devcore,type,numa,health,index,mode`` followed by ``:``
(the columns are the field table's, ``model.fields_of``). The decoder applies HAMi's rules (Go ``strconv``
integers and booleans, 7 or 9 fields, empty segments skipped); the first failure rejects the whole value.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from operator import attrgetter
from typing import Any, cast

from hami_core.protocol.errors import DecodeError, EncodeError, shorten
from hami_core.protocol.model import INT64, DeviceInfo, IntRange, fields_of
from hami_core.protocol.size import check_value

#: The legacy record's fields, by column.
_COLUMNS = sorted((f for f in fields_of(DeviceInfo) if f.legacy is not None), key=lambda f: f.legacy or 0)
assert [f.legacy for f in _COLUMNS] == list(range(9))
#: HAMi reads and writes every integer through Go's signed 64-bit int: a wider range is cut to int64.
_RANGES = {
    f.name: f.kind if f.kind.high <= INT64.high else IntRange("int64", f.kind.low, INT64.high)
    for f in _COLUMNS
    if isinstance(f.kind, IntRange)
}
#: Go ``strconv.ParseInt`` base 10: an optional sign, then ASCII digits only (leading zeros are fine).
_GO_INT = re.compile(r"[+-]?[0-9]+")
#: Every spelling Go's ``strconv.ParseBool`` accepts.
_GO_BOOL = dict.fromkeys(("1", "t", "T", "TRUE", "true", "True"), True)
_GO_BOOL.update(dict.fromkeys(("0", "f", "F", "FALSE", "false", "False"), False))
#: The attributes by column; the integer and bool columns in the order HAMi reads them (spec 3.1, step 5:
#: health before numa), so a bad record fails on HAMi's field.
_NAMES = [f.name for f in _COLUMNS]
_READ_ORDER = [_NAMES[column] for column in (1, 2, 3, 6, 5, 7)]


class _BadRecord(ValueError):
    """A record HAMi refuses; the caller says which segment it was."""


def _parse(text: str, name: str) -> int | bool:
    """A field HAMi reads with ``strconv.ParseBool`` or ``strconv.ParseInt`` (then cut to its Go type)."""
    go_range = _RANGES.get(name)
    if go_range is None:  # the bool
        if (flag := _GO_BOOL.get(text)) is None:
            raise _BadRecord(f"invalid {name} field {shorten(text)}: not a Go boolean")
        return flag
    if _GO_INT.fullmatch(text) is None:
        raise _BadRecord(f"invalid {name} field {shorten(text)}: not a base-10 integer")
    digits = text.lstrip("+-").lstrip("0")
    if len(digits) > 20 or (number := int(text)) not in go_range:
        if go_range.low == 0 and text[0] == "-" and len(digits) <= 20:
            raise _BadRecord(f"{name} field must not be negative: {shorten(text)}")
        raise _BadRecord(f"invalid {name} field {shorten(text)}: out of range for {go_range.go_type}")
    return number


def _decode_record(segment: str) -> DeviceInfo:
    items = segment.split(",")
    if len(items) == 7:  # HAMi before v2.5: index 0, mode hami-core
        items += ["0", "hami-core"]
    elif len(items) != 9:
        if len(items) == 1:
            raise _BadRecord(f"malformed segment {shorten(segment)}: no ',' in it")
        raise _BadRecord(f"unexpected field count {len(items)} (want 7 or 9) in {shorten(segment)}")
    values: dict[str, Any] = dict(zip(_NAMES, items, strict=True))
    values.update({name: _parse(values[name], name) for name in _READ_ORDER})
    return DeviceInfo(**values)


def _plain_reader() -> Callable[[str], list[DeviceInfo]]:
    """A reader, written from the table, of values as HAMi writes them: 9 fields a record, each integer
    1 to 18 ASCII digits (so it fits Go's int64). It raises ``ValueError`` or ``KeyError`` for any other
    value (the model's refusals included), which is then read record by record to decode it by HAMi's
    rules or say what is wrong. The model is called with positional arguments, and each integer text
    looked up among the last 1,024 met (a new one is checked and kept, and the record read again): with
    keywords, 0.4 µs more a device; with ``int()`` and a digit check, 0.37 µs more (docs/performance.md)."""
    text = {f.name: f"c{f.legacy}" for f in _COLUMNS}
    reads = {f.name: f"_GO_BOOL[{text[f.name]}]" for f in _COLUMNS if f.kind is bool}
    reads.update({name: f"_DIGITS[{text[name]}]" for name in _RANGES})
    fields = fields_of(DeviceInfo)  # the model's arguments, up to the last one a record holds
    fields = fields[: 1 + max(position for position, f in enumerate(fields) if f.name in text)]
    arguments = [reads.get(f.name, text.get(f.name, repr(getattr(DeviceInfo(), f.name)))) for f in fields]
    append = f"devices.append(DeviceInfo({', '.join(arguments)}))"
    most = len(str(INT64.high)) - 1  # digits that always fit Go's int64
    source = f"""def read(value):
    devices = []
    for segment in value.split(":"):
        if segment:
            {", ".join(text.values())} = segment.split(",")
            try:
                {append}
            except KeyError:  # an integer text met for the first time, or not a Go bool
                if len(_DIGITS) > 1024:
                    _DIGITS.clear()
                for t in {", ".join(text[name] for name in _RANGES)}:
                    if not (t.isascii() and t.isdigit() and len(t) <= {most}):
                        raise ValueError(t)
                    _DIGITS[t] = int(t)
                {append}
    return devices"""
    scope: dict[str, Any] = {"DeviceInfo": DeviceInfo, "_GO_BOOL": _GO_BOOL, "_DIGITS": {}}
    exec(source, scope)
    return cast(Callable[[str], list[DeviceInfo]], scope["read"])


_READ_PLAIN = _plain_reader()


def decode_legacy(value: str) -> list[DeviceInfo]:
    """Decode a legacy colon value as HAMi's ``DecodeNodeDevices`` does; raise ``DecodeError``."""
    check_value(value, "legacy")
    if ":" not in value:
        raise DecodeError(f"legacy value {shorten(value)} is missing the device separator ':'")
    try:
        return _READ_PLAIN(value)
    except (ValueError, KeyError):
        pass
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
_STRINGS = [f.name for f in _COLUMNS if f.kind is str]


def _refuse(position: int, device: Any) -> None:
    """Raise ``EncodeError`` when a device cannot be written in the legacy encoding."""
    where = f"device {position}"
    if not isinstance(device, DeviceInfo):
        raise EncodeError(f"{where}: expected a DeviceInfo, got {type(device).__name__}")
    for name in _STRINGS:
        if "," in (text := getattr(device, name)) or ":" in text:
            raise EncodeError(
                f"{where}: {name} {shorten(text)} holds ',' or ':', which the legacy encoding cannot carry"
            )
    for name, go_range in _RANGES.items():
        if (number := getattr(device, name)) not in go_range:
            raise EncodeError(f"{where}: {name} {number} does not fit the legacy encoding's int64")


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
    text, separators = "".join(records), (len(_COLUMNS) - 1) * len(records)
    if text.count(",") != separators or text.count(":") != len(records):  # a separator in a string
        for position, device in enumerate(devices):
            _refuse(position, device)
    return text
