"""The JSON register value (spec 3.2, 3.3) as HAMi's ``MarshalNodeDevices`` writes it (byte for byte) and
its ``UnMarshalNodeDevices`` (Go's encoding/json v1) accepts and refuses it, driven by ``model.fields_of``.
Beyond HAMi, a ``null`` device is a decode error instead of a scheduler crash.

The syntax is Python's ``json`` with its extensions closed off: no ``NaN``/``Infinity``, numbers kept as
text until their Go type is known, every key/value pair kept in order, lone surrogate escapes read as
U+FFFD, nesting allowed to Go's 10000 levels and no deeper. Any other Go schema (a vendor's annotation) is
read so too: ``parse_json`` gives the tree (``JsonObject`` pairs, ``JsonNumber`` text), then per value
``fold_key`` (the key a field matches), ``read_int``, ``read_any`` (Go's ``any``) or ``type_error``.
"""

from __future__ import annotations

import json
import math
import re
import sys
import threading
from collections.abc import Sequence
from operator import attrgetter
from typing import Any, Final, NoReturn

from hami_core.protocol.errors import DecodeError, EncodeError, member_path, shorten
from hami_core.protocol.model import (
    INT32,
    DeviceInfo,
    IntRange,
    MigPlacement,
    MigProfile,
    WireField,
    fields_of,
)
from hami_core.protocol.size import check_value

#: Go's scanner refuses arrays and objects nested deeper than this.
MAX_DEPTH: Final = 10000


class JsonDecodeError(DecodeError):
    """``kind``: ``json_syntax``, ``json_eof`` (cut short), ``json_type``, ``null_element`` (beyond HAMi)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


_SURROGATE = re.compile("([\ud800-\udfff])")


def go_bytes(value: str) -> bytes:
    """The bytes Go holds for ``value``: U+DC80..U+DCFF (``surrogateescape``) as the byte each stands for,
    any other lone surrogate as its 3-byte (invalid) UTF-8."""
    out = bytearray()
    for position, piece in enumerate(_SURROGATE.split(value)):
        if position % 2 == 0:
            out += piece.encode("utf-8")
        elif 0xDC80 <= ord(piece) <= 0xDCFF:
            out.append(ord(piece) - 0xDC00)
        else:
            out += piece.encode("utf-8", "surrogatepass")
    return bytes(out)


def _invalid_bytes_marked(value: str) -> str:
    """``value`` with each invalid UTF-8 byte one lone surrogate (Go's one ``RuneError`` per byte)."""
    return go_bytes(value).decode("utf-8", "surrogateescape")


def go_text(value: str) -> str:
    """The text Go's decoder reads from ``value``: every invalid UTF-8 byte becomes U+FFFD."""
    if _SURROGATE.search(value) is None:
        return value
    return _SURROGATE.sub("\ufffd", _invalid_bytes_marked(value))


_RECORDS: tuple[type, ...] = (DeviceInfo, MigProfile, MigPlacement)
#: Per record class, its written fields in HAMi's order: a getter, keys, omitempty, (key, class) of lists.
_WRITTEN: dict[type, tuple[attrgetter[Any], tuple[str, ...], tuple[bool, ...], list[tuple[str, type]]]] = {
    cls: (
        attrgetter(*(f.name for f in written)),
        tuple(f.key for f in written),
        tuple(f.omitempty for f in written),
        [(f.key, f.record) for f in written if f.record is not None],
    )
    for cls in _RECORDS
    if (written := [f for f in fields_of(cls) if f.written])
}
#: Python's C encoder writes what Go's does for plain str, int and bool, but for the HTML-safe and line
#: separator escapes and invalid UTF-8 (fixed after). Built once: ``encode`` builds it anew every call,
#: a third of a one-device value's time.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False)
_MAKE = json.encoder.c_make_encoder  # type: ignore[attr-defined]
_CHUNKS = (
    None if _MAKE is None else _MAKE(None, None, json.encoder.encode_basestring, None, ":", ",", 0, 0, 1)
)


_HTML_SAFE = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"}


def _plain_record(record: Any, cls: type) -> dict[str, Any]:
    """A record as the dict of what Go writes for it (omitted zero values left out)."""
    getter, keys, omitempty, lists = _WRITTEN[cls]
    out = {
        key: value
        for key, omit, value in zip(keys, omitempty, getter(record), strict=True)
        if value or not omit
    }
    for key, element in lists:
        if out.get(key) is not None:
            out[key] = [_plain_record(item, element) for item in out[key]]
    return out


def _go_json(plain: Any) -> str:
    text = _ENCODER.encode(plain) if _CHUNKS is None else "".join(_CHUNKS(plain, 0))
    if not text.isascii():
        if _SURROGATE.search(text) is not None:  # invalid UTF-8: one U+FFFD escape per invalid byte
            text = _SURROGATE.sub("\\\\ufffd", _invalid_bytes_marked(text))
        text = text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    for char, escape in _HTML_SAFE.items():
        if char in text:
            text = text.replace(char, escape)
    return text


def encode_json(devices: Sequence[DeviceInfo]) -> str:
    """HAMi's ``MarshalNodeDevices``; ``EncodeError`` for an item that is not a DeviceInfo."""
    plain: list[dict[str, Any]] = []
    for position, device in enumerate(devices):
        if not isinstance(device, DeviceInfo):
            raise EncodeError(f"device {position}: expected a DeviceInfo, got {type(device).__name__}")
        plain.append(_plain_record(device, DeviceInfo))
    return _go_json(plain)


class JsonObject(list[tuple[str, Any]]):
    """A JSON object as its (key, value) pairs in document order, duplicates kept (Go assigns in order)."""

    __slots__ = ()


class JsonNumber(str):
    """A number literal, kept as text until the target Go type is known."""

    __slots__ = ()


class _Constant(ValueError):
    """``NaN``, ``Infinity`` or ``-Infinity``."""


def _refuse(name: str) -> NoReturn:
    raise _Constant(name)


_DECODER = json.JSONDecoder(
    object_pairs_hook=JsonObject, parse_float=JsonNumber, parse_int=JsonNumber, parse_constant=_refuse
)
#: What Go's encoding/json counts as whitespace.
JSON_BLANK = " \t\n\r"
#: A \u escape of a lone surrogate (Go reads it as U+FFFD), found by scanning escapes left to right.
_ESCAPE_SCAN = re.compile(
    r"\\(u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|u[dD][89a-fA-F][0-9a-fA-F]{2}|.)", re.S
)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_STRING_OR_CONSTANT = re.compile(r'"(?:[^"\\]|\\.)*"?|(-?(?:NaN|Infinity))', re.S)
_DEEP_LOCK = threading.Lock()


def _depth(text: str) -> int:
    """How deep ``text`` nests (strings blanked out); a syntax error deeper than Go allows."""
    blank = _STRING_OR_CONSTANT.sub(lambda m: " " * len(m.group()), text)
    level = depth = 0
    for match in re.finditer(r"[\[\]{}]", blank):
        level += 1 if match.group() in "[{" else -1
        if level > MAX_DEPTH:
            _syntax(text, match.start(), f"exceeded max depth {MAX_DEPTH}", "json_syntax")
        depth = max(depth, level)
    return depth


def _syntax(text: str, offset: int, problem: str, kind: str) -> NoReturn:
    near = shorten(text[max(0, offset - 24) : offset + 24])
    raise JsonDecodeError(kind, f"JSON syntax error at character offset {offset}: {problem}, near {near}")


def _cut_short(text: str, error: json.JSONDecodeError) -> bool:
    """Whether Go calls ``text`` cut short: valid as far as it goes, and still with a blank after it (a
    string cut inside an escape, like a cut literal or number, is a syntax error)."""
    if error.msg.startswith("Unterminated string"):
        return (len(text) - len(text.rstrip("\\"))) % 2 == 0
    return not text[error.pos :].strip(JSON_BLANK)


def parse_json(value: str, what: str = "JSON") -> Any:
    """``value`` as Go parses it (invalid UTF-8 as U+FFFD, at most the annotation limit) or DecodeError."""
    check_value(value, what)
    text = go_text(value)
    if "\\u" in text and _SURROGATE_ESCAPE.search(text) is not None:
        # the same length: offsets hold
        text = _ESCAPE_SCAN.sub(lambda m: "\\ufffd" if len(m.group(1)) == 5 else m.group(), text)
    try:
        try:
            return _DECODER.decode(text)
        except RecursionError:  # Python's parser recurses once per level; Go allows MAX_DEPTH of them
            depth = _depth(text)
        with _DEEP_LOCK:
            limit = sys.getrecursionlimit()
            sys.setrecursionlimit(limit + depth)
            try:
                return _DECODER.decode(text)
            finally:
                sys.setrecursionlimit(limit)
    except json.JSONDecodeError as exc:
        if _cut_short(text, exc):
            _syntax(text, len(text), "unexpected end of JSON input", "json_eof")
        _syntax(text, exc.pos, f"{exc.msg[0].lower()}{exc.msg[1:]}, found {text[exc.pos]!r}", "json_syntax")
    except _Constant as exc:
        found = next((m.start() for m in _STRING_OR_CONSTANT.finditer(text) if m.group(1)), 0)
        _syntax(text, found, f"invalid literal {exc}", "json_syntax")


_NOUNS: dict[type, str] = {JsonObject: "an object", list: "an array", str: "a string", bool: "a bool"}


def _render(value: Any, room: int) -> str:
    """``value`` as compact JSON, its items rendered only until ``room`` characters are spent."""
    kind = type(value)
    if kind is not JsonObject and kind is not list:
        return str(value) if kind is JsonNumber else json.dumps(value)
    parts: list[str] = []
    for item in value:
        if room <= 0:
            break
        part = (
            _render(item, room - 1) if kind is list else f"{json.dumps(item[0])}:{_render(item[1], room - 1)}"
        )
        parts.append(part)
        room -= len(part) + 1
    return ("{%s}" if kind is JsonObject else "[%s]") % ",".join(parts)


def type_error(path: str, value: Any, go_type: str) -> JsonDecodeError:
    """Go's refusal of ``value`` at ``path`` for a field of ``go_type``, to raise."""
    text = _render(value, 60)
    shown = shorten(text, 60)[1:-1] if type(value) is JsonNumber else text[:60] + " ..." * (len(text) > 60)
    noun = "number" if type(value) is JsonNumber else _NOUNS[type(value)]
    return JsonDecodeError("json_type", f"{path}: cannot decode {noun} {shown} into Go {go_type}")


def read_int(value: Any, go_range: IntRange, path: str, key: str = "") -> int:
    """An integer field (``INT32``...) at ``path`` (member ``key`` of it): integer literals in range."""
    if type(value) is not JsonNumber:
        raise type_error(member_path(path, key) if key else path, value, go_range.go_type)
    if "." in value or "e" in value or "E" in value:
        problem = "is not an integer"
    elif go_range.low >= 0 and value[0] == "-":  # Go's ParseUint refuses any sign, "-0" included
        problem = "is negative"
    elif len(value) > 21 or not go_range.low <= (number := int(value)) <= go_range.high:
        problem = "is out of range"
    else:
        return number
    where = member_path(path, key) if key else path  # built only for the message
    message = f"{where}: number {shorten(value, 60)} {problem} for Go {go_range.go_type}"
    raise JsonDecodeError("json_type", message)


def fold_key(key: str) -> str:
    """Go's folding of a key as far as it can match an ASCII name: KELVIN SIGN and LONG S reach ASCII."""
    if not key.isascii():
        key = key.replace("\u212a", "K").replace("\u017f", "S")
        if not key.isascii():
            return key  # matches no field (str.upper would fold more than Go: "ı" to "I")
    return key.upper()


class _Slice(list[Any]):
    """A Go slice decoded into: a ``length`` of a backing array that a repeated key reuses, not zeroes."""

    __slots__ = ("length",)
    length: int


#: The deprecated ``migtemplate`` (``[][]MigTemplate``, keys are Go field names): checked, not kept.
_TEMPLATE_KEYS: dict[str, IntRange | type] = {"NAME": str, "CORE": INT32, "MEMORY": INT32, "COUNT": INT32}
#: Per record class: its fields by exact and by folded JSON key, and its zero state.
_LOOKUP: dict[type, dict[str, WireField]] = {}
_ZERO: dict[type, dict[str, Any]] = {}
for _cls in _RECORDS:
    _LOOKUP[_cls] = {k: f for f in fields_of(_cls) for k in (f.key, fold_key(f.key))}
    _ZERO[_cls] = {f.name: None if f.record else getattr(_cls(), f.name) for f in fields_of(_cls)}


def _templates(value: Any, path: str) -> None:
    for position, geometry in enumerate(_checked_list(value, "[][]MigTemplate", path)):
        for slot, template in enumerate(_checked_list(geometry, "[]MigTemplate", f"{path}[{position}]")):
            where = f"{path}[{position}][{slot}]"
            if template is not None and type(template) is not JsonObject:
                raise type_error(where, template, "MigTemplate")
            for key, item in template or ():
                kind = _TEMPLATE_KEYS.get(fold_key(key))
                if isinstance(kind, IntRange) and item is not None:
                    read_int(item, kind, member_path(where, key))
                elif kind is str and item is not None and type(item) is not str:
                    raise type_error(member_path(where, key), item, "string")


def _checked_list(value: Any, go_type: str, path: str) -> list[Any]:
    if value is not None and type(value) is not list:
        raise type_error(path, value, go_type)
    return value or []


def _record(cls: type, value: Any, state: dict[str, Any] | None, path: str) -> dict[str, Any]:
    """An object decoded into a record's state (attribute name -> value), merged into ``state``."""
    if type(value) is not JsonObject:
        raise type_error(path, value, cls.__name__)
    lookup = _LOOKUP[cls]
    if state is None:
        state = dict(_ZERO[cls])
    for key, item in value:
        field = lookup.get(key) or lookup.get(fold_key(key))
        if field is None:
            if cls is DeviceInfo and fold_key(key) == "MIGTEMPLATE":
                _templates(item, f"{path}.migtemplate")
            continue
        name, kind = field.name, field.kind
        if item is None:  # Go leaves a scalar as it is, and sets a slice or map to nil
            if kind is dict or field.record is not None:
                state[name] = None
        elif kind is str or kind is bool:
            if type(item) is not kind:
                raise type_error(f"{path}.{field.key}", item, "string" if kind is str else "bool")
            state[name] = item
        elif isinstance(kind, IntRange):
            state[name] = read_int(item, kind, path, field.key)
        elif kind is dict:
            state[name] = _custominfo(state[name], item, f"{path}.{field.key}")
        else:
            state[name] = _slice(state[name], item, kind, f"{path}.{field.key}")
    return state


def _slice(current: _Slice | None, value: Any, cls: type, path: str) -> _Slice:
    if type(value) is not list:
        raise type_error(path, value, f"[]{cls.__name__}")
    if not value or current is None:
        current = _Slice()
    backing = current
    for position, item in enumerate(value):
        if position >= len(backing):
            backing.append(None)
        if item is not None:  # null leaves a struct element as it is
            backing[position] = _record(cls, item, backing[position], f"{path}[{position}]")
    current.length = len(value)
    return current


def _build(cls: type, state: dict[str, Any] | None) -> Any:
    """The record a decoded state describes (the model validates it once more)."""
    if state is None:
        return cls()
    for field in fields_of(cls):
        held = state[field.name]
        if type(held) is _Slice:
            kind: Any = field.kind
            state[field.name] = [_build(kind, s) for s in held[: held.length]]
    return cls(**state)


def read_any(value: Any, path: str) -> Any:
    """A value as Go's ``any`` holds it (dict, list, float64 numbers, str, bool, None); iterative."""
    holder: list[Any] = [None]
    work: list[tuple[Any, Any, Any]] = [(value, holder, 0)]
    while work:
        source, target, slot = work.pop()
        kind = type(source)
        if kind is JsonObject:  # a repeated key keeps the last value, but Go reads (and checks) each one
            last = {key: i for i, (key, _) in enumerate(source)}
            target[slot] = into = dict.fromkeys(last)
            work.extend((v, into, k) if last[k] == i else (v, [None], 0) for i, (k, v) in enumerate(source))
        elif kind is list:
            items: list[Any] = [None] * len(source)
            target[slot] = items
            work.extend((item, items, position) for position, item in enumerate(source))
        elif kind is JsonNumber:
            number = float(source)
            if math.isinf(number):
                message = f"{path}: number {shorten(source, 60)} is out of range for Go float64"
                raise JsonDecodeError("json_type", message)
            target[slot] = number
        else:
            target[slot] = source
    return holder[0]


def _custominfo(current: dict[str, Any] | None, value: Any, path: str) -> dict[str, Any]:
    if type(value) is not JsonObject:
        raise type_error(path, value, "map[string]any")
    result = {} if current is None else current  # Go adds to a map that is already there
    for key, item in value:
        result[key] = read_any(item, member_path(path, key))
    return result


def decode_json(value: str) -> list[DeviceInfo]:
    """HAMi's ``UnMarshalNodeDevices``; ``JsonDecodeError`` names a path (``[2].count``) or an offset."""
    tree = parse_json(value)
    if tree is None:
        return []
    if type(tree) is not list:
        raise type_error("top level", tree, "[]*DeviceInfo")
    states = [
        None if item is None else _record(DeviceInfo, item, None, f"[{i}]") for i, item in enumerate(tree)
    ]
    null_at = [position for position, state in enumerate(states) if state is None]
    if null_at:  # reported after any type error, as HAMi fails on those before it touches a device
        message = f"[{null_at[0]}]: a device is null ({len(null_at)} in all), which crashes HAMi's scheduler"
        raise JsonDecodeError("null_element", message)
    return [_build(DeviceInfo, state) for state in states]
