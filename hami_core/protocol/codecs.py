"""The codec interface (a driver may supply its own), the two built-in codecs, and ``decode_any``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

import attrs

from hami_core.protocol.gojson import JSON_BLANK, decode_json, encode_json
from hami_core.protocol.legacy import decode_legacy, encode_legacy
from hami_core.protocol.model import DeviceInfo
from hami_core.protocol.size import MAX_ANNOTATION_BYTES as MAX_ANNOTATION_BYTES
from hami_core.protocol.size import check_size as check_size
from hami_core.protocol.size import check_value


@runtime_checkable
class Codec(Protocol):
    """Encodes and decodes one vendor's register annotation value."""

    @property
    def name(self) -> str: ...

    def decode(self, value: str) -> list[DeviceInfo]:
        """Decode an annotation value; raise ``DecodeError`` (and nothing else) when it is malformed."""

    def encode(self, devices: Sequence[DeviceInfo]) -> str:
        """Encode devices; raise ``EncodeError`` when they cannot be written in this encoding."""


@attrs.frozen
class _FunctionCodec:
    name: str
    decode: Callable[[str], list[DeviceInfo]] = attrs.field(repr=False)
    encode: Callable[[Sequence[DeviceInfo]], str] = attrs.field(repr=False)


JSON_CODEC: Codec = _FunctionCodec("json", decode_json, encode_json)
LEGACY_CODEC: Codec = _FunctionCodec("legacy", decode_legacy, encode_legacy)
CODECS: dict[str, Codec] = {JSON_CODEC.name: JSON_CODEC, LEGACY_CODEC.name: LEGACY_CODEC}
_JSON_FIRST = JSON_BLANK + "[n"  #: what a JSON value may start with (spec 3.4); "" is in it too


def decode_any(value: str) -> list[DeviceInfo]:
    """Decode a register value in either encoding (spec 3.4: JSON for a first non-blank ``[`` or ``null``,
    else legacy); raise ``DecodeError``. Told by its first character, a legacy value costs 0.11 µs over
    ``decode_legacy``, not 0.34 (docs/performance.md)."""
    if isinstance(value, str) and value[:1] not in _JSON_FIRST:
        return decode_legacy(value)
    check_value(value, "annotation")  # before lstrip copies it
    stripped = value.lstrip(JSON_BLANK)
    if stripped.startswith("[") or stripped.rstrip(JSON_BLANK) == "null":
        return decode_json(value)
    return decode_legacy(value)
