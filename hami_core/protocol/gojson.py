"""The JSON encoding of a register annotation (spec 3.2, 3.3), as Go's encoding/json v1 reads and writes it.

``encode_json`` is byte-identical to HAMi's ``MarshalNodeDevices``. ``decode_json`` accepts and rejects
what HAMi's ``UnMarshalNodeDevices`` does: the whole text must be valid JSON first (Go checks syntax
before it decodes), then each value must fit its Go field (integer literals in range, no type
mismatches), keys match case-insensitively with Unicode simple folding, the last of several keys for
one field wins, ``null`` leaves a scalar as it was and resets a list or map, unknown keys are ignored.
Beyond HAMi, a ``null`` device (``[null]``) is a decode error instead of a scheduler crash.

Python's ``json`` module is not Go's (NaN, lone surrogates, number handling, depth), so the text is
parsed here by a small strict parser; a failure is then located by a character-level scanner that
follows Go's grammar, which also tells a truncated value (``json_eof``) from a malformed one.
"""

from __future__ import annotations

import json
import math
import re
import sys
from collections.abc import Callable, Sequence
from typing import Any, Final, NoReturn

from hami_core.protocol import fastpath as _fastpath
from hami_core.protocol.errors import DecodeError, EncodeError, member_path, shorten
from hami_core.protocol.model import (
    INT32,
    INT64,
    UINT32,
    UINT64,
    DeviceInfo,
    IntRange,
    MigPlacement,
    MigProfile,
)
from hami_core.protocol.plain import plain_int, plain_str
from hami_core.protocol.size import check_value

__all__ = [
    "MAX_DEPTH",
    "JsonDecodeError",
    "decode_json",
    "decode_json_strict",
    "encode_json",
    "encode_json_strict",
    "encode_mig_profile",
    "go_bytes",
    "go_string",
    "go_text",
]

#: Go's scanner refuses arrays and objects nested deeper than this.
MAX_DEPTH: Final = 10000


class JsonDecodeError(DecodeError):
    """A JSON value HAMi's decoder refuses. ``kind`` is ``json_syntax``, ``json_eof`` (the text ends
    inside a value), ``json_type`` (valid JSON that does not fit the device record) or ``null_element``
    (beyond HAMi: a device that is ``null``)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


# ---------------------------------------------------------------------------------------------------
# Go's view of a Python str: a str that came from bytes with errors="surrogateescape" carries each
# invalid byte as a lone surrogate U+DC80..U+DCFF; Go would see that byte itself. Any other lone
# surrogate is taken as its 3-byte (invalid) UTF-8 form.
# ---------------------------------------------------------------------------------------------------

_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_SPLIT = re.compile("([\ud800-\udfff])")


def go_bytes(value: str) -> bytes:
    """The bytes Go holds for ``value``: its UTF-8, with U+DC80..U+DCFF (``surrogateescape``) turned
    back into the single bytes they stand for."""
    out = bytearray()
    for position, piece in enumerate(_SURROGATE_SPLIT.split(value)):
        if position % 2 == 0:
            out += piece.encode("utf-8")
        elif 0xDC80 <= ord(piece) <= 0xDCFF:
            out.append(ord(piece) - 0xDC00)
        else:
            out += piece.encode("utf-8", "surrogatepass")
    return bytes(out)


def _invalid_bytes_marked(value: str) -> str:
    """``value`` as Go's UTF-8 decoding sees it, each invalid byte a lone surrogate (one per byte, as
    Go's ``utf8.DecodeRune`` gives one ``RuneError`` per invalid byte)."""
    return go_bytes(value).decode("utf-8", "surrogateescape")


def go_text(value: str) -> str:
    """The text Go's decoder reads from ``value``: every invalid UTF-8 byte becomes U+FFFD."""
    if _SURROGATE.search(value) is None:
        return value
    return _SURROGATE.sub("\ufffd", _invalid_bytes_marked(value))


# ---------------------------------------------------------------------------------------------------
# Encoder
# ---------------------------------------------------------------------------------------------------

_ESCAPES: dict[str, str] = {chr(c): f"\\u{c:04x}" for c in range(0x20)}
_ESCAPES.update(
    {
        '"': '\\"',
        "\\": "\\\\",
        "\b": "\\b",
        "\f": "\\f",
        "\n": "\\n",
        "\r": "\\r",
        "\t": "\\t",
        "<": "\\u003c",
        ">": "\\u003e",
        "&": "\\u0026",
        "\u2028": "\\u2028",
        "\u2029": "\\u2029",
    }
)
_NEEDS_ESCAPE = re.compile('["\\\\\x00-\x1f<>&\u2028\u2029\ud800-\udfff]')


def _escape(match: re.Match[str]) -> str:
    return _ESCAPES.get(match.group(), "\\ufffd")  # a lone surrogate marks one invalid byte


def go_string(value: str) -> str:
    """A JSON string literal exactly as Go's ``json.Marshal`` writes ``value`` (HTML-safe escaping,
    U+2028/U+2029 escaped, ``\\b \\f \\n \\r \\t`` short, other controls ``\\u00xx``, invalid UTF-8 as
    ``\\ufffd``, everything else raw UTF-8)."""
    value = plain_str(value)
    if _NEEDS_ESCAPE.search(value) is None:
        return f'"{value}"'
    if _SURROGATE.search(value) is not None:
        value = _invalid_bytes_marked(value)
    return f'"{_NEEDS_ESCAPE.sub(_escape, value)}"'


def encode_mig_profile(profile: MigProfile) -> str:
    """One MIG profile as Go writes it: every key, ``placements`` ``null`` when absent."""
    if profile.placements is None:
        placements = "null"
    else:
        placements = ",".join(
            f'{{"start":{plain_int(p.start)},"size":{plain_int(p.size)}}}' for p in profile.placements
        )
        placements = f"[{placements}]"
    return (
        f'{{"name":{go_string(profile.name)},"memoryMB":{plain_int(profile.memory_mb)},'
        f'"core":{plain_int(profile.core)},"sliceCount":{plain_int(profile.slice_count)},'
        f'"placements":{placements}}}'
    )


def _encode_device(device: DeviceInfo) -> str:
    parts: list[str] = []
    # HAMi's field order; zero values omitted (Go's omitempty)
    scalars: tuple[tuple[str, str | int], ...] = (
        ("id", plain_str(device.id)),
        ("index", plain_int(device.index)),
        ("count", plain_int(device.count)),
        ("devmem", plain_int(device.devmem)),
        ("devcore", plain_int(device.devcore)),
        ("type", plain_str(device.type)),
        ("numa", plain_int(device.numa)),
        ("mode", plain_str(device.mode)),
    )
    for key, value in scalars:
        if value:
            parts.append(f'"{key}":{go_string(value) if isinstance(value, str) else value}')
    if device.mig_profiles:
        profiles = ",".join(encode_mig_profile(p) for p in device.mig_profiles)
        parts.append(f'"migProfiles":[{profiles}]')
    if device.health:
        parts.append('"health":true')
    return "{" + ",".join(parts) + "}"


def encode_json(devices: Sequence[DeviceInfo]) -> str:
    """Encode as HAMi's ``MarshalNodeDevices``: compact, zero values omitted, no devicevendor or
    custominfo, ``[]`` for no devices. Raises ``EncodeError`` for an item that is not a DeviceInfo."""
    fast = _fastpath.encode_json(devices)
    return fast if fast is not None else encode_json_strict(devices)


def encode_json_strict(devices: Sequence[DeviceInfo]) -> str:
    """``encode_json`` without the fast path (what the fast path is checked against)."""
    parts: list[str] = []
    for position, device in enumerate(devices):
        if not isinstance(device, DeviceInfo):
            raise EncodeError(f"device {position}: expected a DeviceInfo, got {type(device).__name__}")
        parts.append(_encode_device(device))
    return "[" + ",".join(parts) + "]"


# ---------------------------------------------------------------------------------------------------
# Parser: text -> tree of list / _Object / str / _Number / bool / None. Raises _Fail at the first
# problem; _syntax_error then says exactly what and where.
# ---------------------------------------------------------------------------------------------------


class _Fail(Exception):
    """The parser stopped; the precise error comes from ``_syntax_error``."""


class _Object(list[tuple[str, Any]]):
    """A JSON object as its (key, value) pairs in document order, duplicates kept."""

    __slots__ = ()


class _Number:
    """A number literal, kept as text until the target Go type is known."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


_WS = re.compile(r"[ \t\n\r]*")
_BLANK = " \t\n\r"
_PLAIN_STRING = re.compile(r'"([^"\\\x00-\x1f]*)"')
_STRING = re.compile(r'"((?:[^"\\\x00-\x1f]|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*+)"')
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_ESCAPE_SEQ = re.compile(r"\\(?:u([0-9a-fA-F]{4})|(.))")
_SIMPLE_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}
_UTF16 = re.compile("([\ud800-\udbff][\udc00-\udfff])|[\ud800-\udfff]")


def _unescape_one(match: re.Match[str]) -> str:
    hex_digits = match.group(1)
    return chr(int(hex_digits, 16)) if hex_digits is not None else _SIMPLE_ESCAPES[match.group(2)]


def _join_utf16(match: re.Match[str]) -> str:
    pair = match.group(1)
    if pair is None:
        return "\ufffd"  # a lone surrogate escape, as Go decodes it
    return chr(0x10000 + ((ord(pair[0]) - 0xD800) << 10) + (ord(pair[1]) - 0xDC00))


def _unescape(raw: str) -> str:
    # go_text() left no raw surrogate in the text, so every surrogate here came from a \u escape and
    # two adjacent ones came from adjacent escapes: exactly Go's pairing rule.
    text = _ESCAPE_SEQ.sub(_unescape_one, raw)
    if _SURROGATE.search(text) is not None:
        text = _UTF16.sub(_join_utf16, text)
    return text


def _string_at(text: str, i: int) -> tuple[str, int]:
    match = _PLAIN_STRING.match(text, i)
    if match is not None:
        return match.group(1), match.end()
    match = _STRING.match(text, i)
    if match is None:
        raise _Fail
    return _unescape(match.group(1)), match.end()


def _skip(text: str, i: int) -> int:
    """The first offset at or after ``i`` that is not JSON whitespace."""
    if i < len(text) and text[i] in _BLANK:
        match = _WS.match(text, i)
        assert match is not None  # the pattern matches the empty string
        return match.end()
    return i


def _key_at(text: str, i: int) -> tuple[str, int]:
    """An object key and its ``:``; ``i`` is at the key's opening quote (after whitespace)."""
    if i >= len(text) or text[i] != '"':
        raise _Fail
    key, i = _string_at(text, i)
    i = _skip(text, i)
    if i >= len(text) or text[i] != ":":
        raise _Fail
    return key, i + 1


def _parse(text: str) -> Any:
    """Parse one JSON text into a tree; iterative, so nesting depth costs no Python stack."""
    end = len(text)
    stack: list[list[Any]] = []  # open containers; an _Object's pending key is kept in `keys`
    keys: list[str] = []
    i = _skip(text, 0)
    while True:
        # A value starts at i (after whitespace).
        if i >= end:
            raise _Fail
        c = text[i]
        value: Any
        if c == '"':
            value, i = _string_at(text, i)
        elif c == "{" or c == "[":
            container: list[Any] = _Object() if c == "{" else []
            stack.append(container)
            if len(stack) > MAX_DEPTH:
                raise _Fail
            i = _skip(text, i + 1)
            closer = "}" if c == "{" else "]"
            if i < end and text[i] == closer:
                stack.pop()
                value, i = container, i + 1
            elif c == "{":
                key, i = _key_at(text, i)
                keys.append(key)
                i = _skip(text, i)
                continue
            else:
                continue
        elif c == "t" and text.startswith("true", i):
            value, i = True, i + 4
        elif c == "f" and text.startswith("false", i):
            value, i = False, i + 5
        elif c == "n" and text.startswith("null", i):
            value, i = None, i + 4
        else:
            match = _NUMBER.match(text, i)
            if match is None:
                raise _Fail
            value, i = _Number(match.group()), match.end()
        # A value is complete: attach it, then close every container that ends here.
        while True:
            if not stack:
                if _skip(text, i) != end:
                    raise _Fail
                return value
            top = stack[-1]
            is_object = type(top) is _Object
            top.append((keys[-1], value) if is_object else value)
            i = _skip(text, i)
            if i >= end:
                raise _Fail
            c = text[i]
            if c == ",":
                i = _skip(text, i + 1)
                if is_object:
                    keys[-1], i = _key_at(text, i)
                    i = _skip(text, i)
                break
            if c != ("}" if is_object else "]"):
                raise _Fail
            i += 1
            value = stack.pop()
            if is_object:
                keys.pop()


def _refuse_constant(name: str) -> Any:
    raise _Fail(name)  # NaN, Infinity, -Infinity: Python's extension, not JSON


#: Python's C parser builds the same tree much faster. Its grammar is Go's except for the constants
#: refused above, lone surrogate escapes (kept by Python, U+FFFD in Go: such text takes the slow path)
#: and nesting (Python's limit is its recursion limit, Go's is MAX_DEPTH). Whatever it refuses, the
#: strict parser decides.
_FAST = json.JSONDecoder(
    object_pairs_hook=_Object,
    parse_float=_Number,
    parse_int=_Number,
    parse_constant=_refuse_constant,
    strict=True,
)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _tree(text: str) -> Any:
    """Parse ``text`` as Go would; raise ``_Fail`` when it is not one valid JSON value."""
    # The C parser nests no deeper than the recursion limit; above Go's limit it could accept too much.
    if sys.getrecursionlimit() <= MAX_DEPTH and _SURROGATE_ESCAPE.search(text) is None:
        try:
            return _FAST.decode(text)
        except (ValueError, RecursionError, _Fail):
            pass
    return _parse(text)


# ---------------------------------------------------------------------------------------------------
# Syntax errors: a character-level scanner over Go's grammar, run only when the parser failed.
# ---------------------------------------------------------------------------------------------------

_HEX = "0123456789abcdefABCDEF"
_DIGITS = "0123456789"
_LITERALS = {"t": "true", "f": "false", "n": "null"}


def _char(c: str) -> str:
    """A character quoted for an error message, as Go quotes it: ``'x'``, ``'\\n'``, ``'\\''``."""
    return "'\\''" if c == "'" else f"'{repr(c)[1:-1]}'"


def _syntax_error(text: str) -> tuple[int, str, str] | None:
    """The first offset where ``text`` stops being a JSON prefix, with Go's wording and the error kind,
    or ``None`` when ``text`` is one valid JSON value."""
    stack: list[str] = []
    state = "value"  # what the next non-blank character must be
    in_key = False
    literal = literal_name = ""
    for i, c in enumerate(text):
        # Number states end on any character that does not continue them; that character then counts
        # as the first one after the value.
        if state in ("num0", "num1", "numdot0", "nume0"):
            if c in _DIGITS and state != "num0":
                continue
            if c == "." and state in ("num0", "num1"):
                state = "numdot"
                continue
            if c in "eE" and state != "nume0":
                state = "nume"
                continue
            state = "end"
        if state == "str":
            if c == '"':
                state = "colon" if in_key else "end"
            elif c == "\\":
                state = "esc"
            elif c < " ":
                return i, f"invalid character {_char(c)} in string literal", "json_syntax"
            continue
        if state == "esc":
            if c == "u":
                state = "u0"
            elif c in '"\\/bfnrt':
                state = "str"
            else:
                return i, f"invalid character {_char(c)} in string escape code", "json_syntax"
            continue
        if state in ("u0", "u1", "u2", "u3"):
            if c not in _HEX:
                return i, f"invalid character {_char(c)} in \\u hexadecimal character escape", "json_syntax"
            state = "str" if state == "u3" else f"u{int(state[1]) + 1}"
            continue
        if state == "lit":
            if c != literal[0]:
                message = f"invalid character {_char(c)} in literal {literal_name} (expecting '{literal[0]}')"
                return i, message, "json_syntax"
            literal = literal[1:]
            if not literal:
                state = "end"
            continue
        if state == "numneg":
            if c == "0":
                state = "num0"
            elif c in _DIGITS:
                state = "num1"
            else:
                return i, f"invalid character {_char(c)} in numeric literal", "json_syntax"
            continue
        if state == "numdot":
            if c not in _DIGITS:
                return (
                    i,
                    f"invalid character {_char(c)} after decimal point in numeric literal",
                    ("json_syntax"),
                )
            state = "numdot0"
            continue
        if state in ("nume", "numesign"):
            if c in _DIGITS:
                state = "nume0"
            elif c in "+-" and state == "nume":
                state = "numesign"
            else:
                return i, f"invalid character {_char(c)} in exponent of numeric literal", "json_syntax"
            continue
        if c in _BLANK:
            continue
        if state in ("value", "value_or_close"):
            if state == "value_or_close" and c == "]":
                stack.pop()
                state = "end"
            elif c in "[{":
                stack.append(c)
                if len(stack) > MAX_DEPTH:
                    return i, f"invalid character {_char(c)}: exceeded max depth {MAX_DEPTH}", "json_syntax"
                state = "value_or_close" if c == "[" else "key_or_close"
            elif c == '"':
                state, in_key = "str", False
            elif c == "-":
                state = "numneg"
            elif c == "0":
                state = "num0"
            elif c in _DIGITS:
                state = "num1"
            elif c in _LITERALS:
                state, literal_name = "lit", _LITERALS[c]
                literal = literal_name[1:]
            else:
                return i, f"invalid character {_char(c)} looking for beginning of value", "json_syntax"
        elif state in ("key", "key_or_close"):
            if state == "key_or_close" and c == "}":
                stack.pop()
                state = "end"
            elif c == '"':
                state, in_key = "str", True
            else:
                return (
                    i,
                    f"invalid character {_char(c)} looking for beginning of object key string",
                    ("json_syntax"),
                )
        elif state == "colon":
            if c != ":":
                return i, f"invalid character {_char(c)} after object key", "json_syntax"
            state = "value"
        elif state == "end":
            if not stack:
                return i, f"invalid character {_char(c)} after top-level value", "json_syntax"
            if c == ",":
                state = "key" if stack[-1] == "{" else "value"
            elif c == ("}" if stack[-1] == "{" else "]"):
                stack.pop()
            else:
                where = "object key:value pair" if stack[-1] == "{" else "array element"
                return i, f"invalid character {_char(c)} after {where}", "json_syntax"
    complete = state == "end" or state in ("num0", "num1", "numdot0", "nume0")
    if complete and not stack:
        return None
    return len(text), "unexpected end of JSON input", "json_eof"


def _raise_syntax(text: str) -> NoReturn:
    found = _syntax_error(text)
    if found is None:  # the parser and the scanner disagree; still a refusal, never a crash
        raise JsonDecodeError("json_syntax", f"JSON value {shorten(text)} could not be parsed")
    offset, message, kind = found
    near = text[max(0, offset - 24) : offset + 24]
    raise JsonDecodeError(
        kind, f"JSON syntax error at character offset {offset}: {message}, near {shorten(near)}"
    )


# ---------------------------------------------------------------------------------------------------
# Decoding the tree into Go's types
# ---------------------------------------------------------------------------------------------------


_PREVIEW_CHARS = 60
_NOUNS: dict[type, str] = {_Object: "an object", list: "an array", str: "a string"}


def _what(value: Any) -> str:
    """The kind of a decoded JSON value and its text, shortened, for a type error."""
    kind = type(value)
    if kind is _Number:
        return f"number {shorten(value.text, 40)[1:-1]}"
    noun = _NOUNS.get(kind, "a bool")
    parts: list[str] = []
    _render(value, parts, _PREVIEW_CHARS)
    text = "".join(parts)
    if len(text) > _PREVIEW_CHARS:
        text = text[:_PREVIEW_CHARS] + " ..."
    return f"{noun} {text}"


def _render(value: Any, parts: list[str], budget: int) -> int:
    """Append ``value`` as compact JSON text to ``parts``, stopping once ``budget`` characters are spent
    (a huge array is never rendered whole); return the budget left."""
    if budget <= 0:
        return budget
    kind = type(value)
    if kind is _Object or kind is list:
        opening, closing = ("{", "}") if kind is _Object else ("[", "]")
        parts.append(opening)
        budget -= 1
        for position, item in enumerate(value):
            if budget <= 0:
                return budget
            if position:
                parts.append(",")
                budget -= 1
            if kind is _Object:
                key, item = item
                parts.append(json.dumps(key[:budget]) + ":")
                budget -= len(parts[-1])
            budget = _render(item, parts, budget)
        parts.append(closing)
        return budget - 1
    if kind is str:
        text = json.dumps(value[: budget + 1])
    elif kind is _Number:
        text = value.text[: budget + 1]
    else:
        text = "null" if value is None else "true" if value else "false"
    parts.append(text)
    return budget - len(text)


def _type_error(path: str, value: Any, go_type: str) -> JsonDecodeError:
    return JsonDecodeError("json_type", f"{path}: cannot decode {_what(value)} into Go {go_type}")


_INTEGER_LITERAL = re.compile(r"-?[0-9]+")


def _int(value: Any, current: int, go_range: IntRange, path: str) -> int:
    """An integer field: ``null`` keeps ``current``; only integer literals in range are accepted."""
    if value is None:
        return current
    if type(value) is not _Number:
        raise _type_error(path, value, go_range.go_type)
    text = value.text
    if _INTEGER_LITERAL.fullmatch(text) is None:
        problem = "is not an integer"
    elif go_range.low >= 0 and text[0] == "-":  # Go's ParseUint refuses any sign, "-0" included
        problem = "is negative"
    elif len(text) > 21 or not go_range.low <= (number := int(text)) <= go_range.high:
        problem = "is out of range"
    else:
        return number
    message = f"{path}: number {shorten(text, 60)} {problem} for Go {go_range.go_type}"
    raise JsonDecodeError("json_type", message)


def _str(value: Any, current: str, path: str) -> str:
    if value is None:
        return current
    if type(value) is not str:
        raise _type_error(path, value, "string")
    return value


def _bool(value: Any, current: bool, path: str) -> bool:
    if value is None:
        return current
    if value is not True and value is not False:
        raise _type_error(path, value, "bool")
    return value


#: The exact JSON names of every struct field decoded here, already folded (the common case).
_EXACT = {
    name: name.upper()
    for name in (
        "id",
        "index",
        "count",
        "devmem",
        "devcore",
        "type",
        "numa",
        "mode",
        "migProfiles",
        "migtemplate",
        "health",
        "devicevendor",
        "custominfo",
        "name",
        "memoryMB",
        "core",
        "sliceCount",
        "placements",
        "start",
        "size",
        "Name",
        "Core",
        "Memory",
        "Count",
    )
}


def _fold(key: str) -> str:
    """Go's folded form of a key, as far as it can match an ASCII field name: ASCII upper case, and the
    two non-ASCII letters whose simple case folding reaches ASCII (KELVIN SIGN, LONG S). A key that keeps
    another non-ASCII character is returned unchanged: it matches no field."""
    folded = _EXACT.get(key)
    if folded is not None:
        return folded
    if not key.isascii():
        key = key.replace("\u212a", "K").replace("\u017f", "S")
        if not key.isascii():
            return key
    return key.upper()


class _Slice:
    """A Go slice being decoded into: a backing array that only grows, and a length. Go decodes a
    repeated key's array into the same slice, reusing (not zeroing) the elements it already holds."""

    __slots__ = ("backing", "length")

    def __init__(self) -> None:
        self.backing: list[Any] = []
        self.length = 0


def _slice(
    current: _Slice | None,
    value: Any,
    go_type: str,
    zero: Callable[[], Any],
    element: Callable[[Any, Any, str], Any],
    path: str,
) -> _Slice | None:
    if value is None:
        return None
    if type(value) is not list:
        raise _type_error(path, value, go_type)
    if not value or current is None:
        current = _Slice()
    backing = current.backing
    for position, item in enumerate(value):
        if position >= len(backing):
            backing.append(zero())
        backing[position] = element(backing[position], item, f"{path}[{position}]")
    current.length = len(value)
    return current


def _struct_fields(value: Any, go_type: str, path: str) -> list[tuple[str, Any]] | None:
    """The pairs of an object decoded into a struct; ``None`` for ``null`` (Go leaves the struct)."""
    if value is None:
        return None
    if type(value) is not _Object:
        raise _type_error(path, value, go_type)
    return value


def _placement(current: list[int], value: Any, path: str) -> list[int]:
    pairs = _struct_fields(value, "MigPlacement", path)
    for key, item in pairs or ():
        name = _fold(key)
        if name == "START":
            current[0] = _int(item, current[0], UINT32, f"{path}.start")
        elif name == "SIZE":
            current[1] = _int(item, current[1], UINT32, f"{path}.size")
    return current


def _profile(current: list[Any], value: Any, path: str) -> list[Any]:
    """A MigProfile as [name, memoryMB, core, sliceCount, placements slice]."""
    pairs = _struct_fields(value, "MigProfile", path)
    for key, item in pairs or ():
        name = _fold(key)
        if name == "NAME":
            current[0] = _str(item, current[0], f"{path}.name")
        elif name == "MEMORYMB":
            current[1] = _int(item, current[1], INT32, f"{path}.memoryMB")
        elif name == "CORE":
            current[2] = _int(item, current[2], INT32, f"{path}.core")
        elif name == "SLICECOUNT":
            current[3] = _int(item, current[3], UINT32, f"{path}.sliceCount")
        elif name == "PLACEMENTS":
            current[4] = _slice(
                current[4], item, "[]MigPlacement", lambda: [0, 0], _placement, f"{path}.placements"
            )
    return current


def _template(current: None, value: Any, path: str) -> None:
    """One entry of the deprecated ``migtemplate`` (keys are Go field names); checked, not kept."""
    pairs = _struct_fields(value, "MigTemplate", path)
    for key, item in pairs or ():
        name = _fold(key)
        if name == "NAME":
            _str(item, "", f"{path}.Name")
        elif name in ("CORE", "MEMORY", "COUNT"):
            _int(item, 0, INT32, f"{path}.{name.title()}")


def _geometry(current: _Slice | None, value: Any, path: str) -> _Slice | None:
    return _slice(current, value, "[]MigTemplate", lambda: None, _template, path)


def _float(value: _Number, path: str) -> float:
    number = float(value.text)
    if math.isinf(number):
        message = f"{path}: number {shorten(value.text, 60)} is out of range for Go float64"
        raise JsonDecodeError("json_type", message)
    return number


def _plain(value: Any, path: str) -> Any:
    """A value of ``custominfo`` as Go's ``any`` holds it (numbers are float64); iterative."""
    holder: list[Any] = [None]
    work: list[tuple[Any, Any, Any]] = [(value, holder, 0)]
    while work:
        source, target, slot = work.pop()
        kind = type(source)
        if kind is _Object:
            last: dict[str, Any] = {}
            for key, item in source:
                last[key] = item
            converted: dict[str, Any] = dict.fromkeys(last)
            target[slot] = converted
            work.extend((item, converted, key) for key, item in last.items())
        elif kind is list:
            items: list[Any] = [None] * len(source)
            target[slot] = items
            work.extend((item, items, position) for position, item in enumerate(source))
        elif kind is _Number:
            target[slot] = _float(source, path)
        else:
            target[slot] = source
    return holder[0]


def _custominfo(current: dict[str, Any] | None, value: Any, path: str) -> dict[str, Any] | None:
    if value is None:
        return None
    if type(value) is not _Object:
        raise _type_error(path, value, "map[string]any")
    result = {} if current is None else current  # Go adds to a map that is already there
    for key, item in value:
        result[key] = _plain(item, member_path(path, key))
    return result


def _device(value: Any, path: str) -> DeviceInfo:
    pairs = _struct_fields(value, "DeviceInfo", path)
    assert pairs is not None  # the caller handles a null device
    id_, index, count, devmem, devcore, type_, numa, mode = "", 0, 0, 0, 0, "", 0, ""
    health, vendor = False, ""
    profiles: _Slice | None = None
    templates: _Slice | None = None
    custominfo: dict[str, Any] | None = None
    for key, item in pairs:
        name = _fold(key)
        if name == "ID":
            id_ = _str(item, id_, f"{path}.id")
        elif name == "INDEX":
            index = _int(item, index, UINT64, f"{path}.index")
        elif name == "COUNT":
            count = _int(item, count, INT32, f"{path}.count")
        elif name == "DEVMEM":
            devmem = _int(item, devmem, INT32, f"{path}.devmem")
        elif name == "DEVCORE":
            devcore = _int(item, devcore, INT32, f"{path}.devcore")
        elif name == "TYPE":
            type_ = _str(item, type_, f"{path}.type")
        elif name == "NUMA":
            numa = _int(item, numa, INT64, f"{path}.numa")
        elif name == "MODE":
            mode = _str(item, mode, f"{path}.mode")
        elif name == "MIGPROFILES":
            profiles = _slice(
                profiles, item, "[]MigProfile", lambda: ["", 0, 0, 0, None], _profile, f"{path}.migProfiles"
            )
        elif name == "MIGTEMPLATE":
            templates = _slice(
                templates, item, "[][]MigTemplate", lambda: None, _geometry, f"{path}.migtemplate"
            )
        elif name == "HEALTH":
            health = _bool(item, health, f"{path}.health")
        elif name == "DEVICEVENDOR":
            vendor = _str(item, vendor, f"{path}.devicevendor")
        elif name == "CUSTOMINFO":
            custominfo = _custominfo(custominfo, item, f"{path}.custominfo")
    mig_profiles: tuple[MigProfile, ...] = ()
    if profiles is not None:
        mig_profiles = tuple(
            MigProfile(
                name=p[0],
                memory_mb=p[1],
                core=p[2],
                slice_count=p[3],
                placements=None
                if p[4] is None
                else [MigPlacement(start=s, size=z) for s, z in p[4].backing[: p[4].length]],
            )
            for p in profiles.backing[: profiles.length]
        )
    return DeviceInfo(
        id=id_,
        index=index,
        count=count,
        devmem=devmem,
        devcore=devcore,
        type=type_,
        numa=numa,
        mode=mode,
        mig_profiles=mig_profiles,
        health=health,
        devicevendor=vendor,
        custominfo=custominfo,
    )


def decode_json(value: str) -> list[DeviceInfo]:
    """Decode a JSON register value as HAMi's ``UnMarshalNodeDevices`` does; ``null`` is no devices.

    Raises ``JsonDecodeError`` (a ``DecodeError``) with a path such as ``[2].count`` for a value that
    does not fit, or a character offset for a syntax error."""
    check_value(value, "JSON")
    fast = _fastpath.decode_json(value)
    return fast if fast is not None else _decode_strict(value)


def decode_json_strict(value: str) -> list[DeviceInfo]:
    """``decode_json`` without the fast path (what the fast path is checked against)."""
    check_value(value, "JSON")
    return _decode_strict(value)


def _decode_strict(value: str) -> list[DeviceInfo]:
    text = go_text(value)
    try:
        tree = _tree(text)
    except _Fail:
        _raise_syntax(text)
    if tree is None:
        return []
    if type(tree) is not list:
        raise _type_error("top level", tree, "[]*DeviceInfo")
    devices: list[DeviceInfo] = []
    null_at: list[int] = []
    for position, item in enumerate(tree):
        if item is None:
            null_at.append(position)
        else:
            devices.append(_device(item, f"[{position}]"))
    if null_at:  # reported after any type error, as HAMi fails on those before it touches a device
        raise JsonDecodeError(
            "null_element",
            f"[{null_at[0]}]: a device is null ({len(null_at)} in all); HAMi's scheduler crashes on this, "
            "so it is refused here",
        )
    return devices
