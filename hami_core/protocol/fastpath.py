"""Fast paths for the two codecs, on msgspec: they answer only where they provably agree with the strict
Go-compatible codecs (gojson, legacy) and return ``None`` for everything else, which the strict codecs
then decide (with their exact errors). A fast path never raises and never refuses a value itself.

Why each shortcut is safe (the property tests in tests/protocol/test_fastpath.py check each one, and
the differential tests run both against HAMi's own code):

JSON decode. msgspec decodes into range-checked structs whose fields are exactly HAMi's JSON keys, with
unknown keys forbidden, so a key Go would match case-insensitively (``ID``), an ignored key, or the
deprecated ``migtemplate`` sends the value to the strict path. Values with a backslash anywhere go
there too, so every key and string is its literal text: then each occurrence of ``"migProfiles"``,
``"placements"`` or ``"custominfo"`` in the text is a string token, and counting them against the
fields that were present proves that no struct repeats such a key (Go merges a repeated list or map
into the first one; msgspec would keep the last). A repeated scalar key is the last one on both sides,
and ``null`` where Go would keep the old value is a type error here. msgspec's JSON grammar is Go's
(same whitespace, no NaN, no leading zeros or ``+``, no trailing data or raw control characters), its
integer types refuse ``1.0`` and ``1e2``, and the only integer it reads differently is ``-0``: a ``uint``
field refuses it in Go (and Go fails the whole value on it even when a repeated key overwrites it
later), and in ``custominfo`` Go reads it as the float -0.0; every such ``-0`` goes to the strict path.
Go reads every number in ``custominfo`` as a float64; integers are turned into floats here (correctly
rounded, as Go's parser does). Go fails a whole value on the first number it cannot hold even when a
repeated key replaces it later, so an integer literal of 309 digits or more anywhere in the text sends
a value with custominfo to the strict path, and so does any value while the recursion limit would let
msgspec nest deeper than Go's 10000 levels. A lone surrogate (invalid UTF-8 to Go) is refused by msgspec.

Legacy decode. Only values made of 9-field records each ending in ``:``, whose integer fields are JSON
integer literals (a subset of Go's ``strconv`` spellings, with the same values; msgspec reads them by
column) within int32, a non-negative index, and health ``true`` or ``false``. Anything else (7 fields,
``+1``, ``007``, ``T``, empty segments, int64 NUMA values) is the strict path's.

Encoders. JSON: msgspec writes HAMi's key order and omits zero values like Go's ``omitempty``; the
output is used only when it holds no backslash and none of ``< > & U+2028 U+2029`` (the characters Go
escapes and msgspec does not), so every string in it is plain. Legacy: a small C extension
(``_legacy_native.c``, built at install when a C compiler is there) writes plain DeviceInfo records
straight from their slots, and declines whatever the strict encoder must decide (its header says what);
without it (or with ``HAMI_NO_NATIVE=1`` in the environment) msgspec writes the fields as JSON rows,
which become HAMi's text once the quotes and brackets go; used only when no string needed an escape and
the commas and colons in the result are exactly the separators, and every index fits Go's int.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Callable, Sequence
from itertools import repeat
from sys import getrecursionlimit
from typing import Annotated, Any, Final

import msgspec
from msgspec import UNSET, Meta, Struct, UnsetType

from hami_core.protocol.model import (
    INT32,
    INT64,
    UINT32,
    DeviceInfo,
    MigPlacement,
    MigProfile,
    trusted_device,
    trusted_plain_devices,
)

__all__ = [
    "NATIVE_LEGACY_ENCODER",
    "decode_json",
    "decode_legacy",
    "encode_json",
    "encode_legacy",
    "encode_legacy_rows",
]

#: Go's encoding/json nesting limit (gojson.MAX_DEPTH; repeated here so this module imports nothing
#: that imports it).
_MAX_DEPTH: Final = 10000

_Int32 = Annotated[int, Meta(ge=INT32.low, le=INT32.high)]
_Uint32 = Annotated[int, Meta(ge=0, le=UINT32.high)]
_Int64 = Annotated[int, Meta(ge=INT64.low, le=INT64.high)]
#: HAMi's index is a uint64; above int64 (which msgspec cannot bound) the strict path decides. -1 is the
#: default (absent); a ``-0``, which Go refuses for a uint, never gets here (``_NEGATIVE_INDEX``).
_Index = Annotated[int, Meta(ge=0, le=INT64.high)]


class _Placement(Struct, forbid_unknown_fields=True):
    start: _Uint32 = 0
    size: _Uint32 = 0


class _Profile(
    Struct, forbid_unknown_fields=True, rename={"memory_mb": "memoryMB", "slice_count": "sliceCount"}
):
    name: str = ""
    memory_mb: _Int32 = 0
    core: _Int32 = 0
    slice_count: _Uint32 = 0
    placements: list[_Placement] | UnsetType | None = UNSET


class _Device(Struct, forbid_unknown_fields=True, rename={"mig_profiles": "migProfiles"}):
    id: str = ""
    index: _Index = -1
    count: _Int32 = 0
    devmem: _Int32 = 0
    devcore: _Int32 = 0
    type: str = ""
    numa: _Int64 = 0
    mode: str = ""
    mig_profiles: list[_Profile] | UnsetType | None = UNSET
    health: bool = False
    devicevendor: str = ""
    custominfo: dict[str, Any] | UnsetType | None = UNSET


_DECODER = msgspec.json.Decoder(list[_Device] | None)
_REJECTED = (msgspec.MsgspecError, ValueError, OverflowError, RecursionError)
#: A JSON number token ``-0`` (or a string that looks like one: then the strict path decides).
_NEGATIVE_ZERO = re.compile(r"[\[:,][ \t\n\r]*-0")


#: ``-0`` for the device index, which Go refuses (a uint) even where a later repeat of the key would
#: overwrite it: Go keeps the first type error and fails the whole value.
_NEGATIVE_INDEX = re.compile(r'"index"[ \t\n\r]*:[ \t\n\r]*-0')


#: An integer literal too long for Go's float64 (custominfo numbers), or a string that looks like one.
_LONG_DIGITS = re.compile(r"[0-9]{309}")


def _has_negative_zero(text: str) -> bool:
    return "-0" in text and _NEGATIVE_ZERO.search(text) is not None


def _go_any(value: Any, depth: int) -> tuple[Any, bool]:
    """A custominfo value as Go's ``any`` holds it (every number a float64), and whether it held an
    integer 0 (which may have been ``-0``). Iterative; ``depth`` is the value's own nesting level.
    Raises ``OverflowError`` for an integer too large for a float64 or nesting deeper than Go allows."""
    zero = False
    holder: list[Any] = [value]
    work: list[tuple[Any, int, int]] = [(holder, 0, depth)]
    while work:
        container, key, level = work.pop()
        item = container[key]
        kind = type(item)
        if kind is int:
            zero = zero or item == 0
            container[key] = float(item)
        elif kind is dict or kind is list:
            if level > _MAX_DEPTH:
                raise OverflowError("nested deeper than Go's limit")
            keys = item.keys() if kind is dict else range(len(item))
            work.extend(zip(repeat(item), keys, repeat(level + 1), strict=False))
    return holder[0], zero


class _Tally:
    """What the devices with MIG profiles or custom info held, to check against the text at the end."""

    __slots__ = ("custominfo", "placements", "profiles", "uints", "zero")

    def __init__(self) -> None:
        self.profiles = self.placements = self.custominfo = 0
        self.uints = self.zero = False


def _mig_profile(profile: _Profile, tally: _Tally) -> MigProfile:
    placements = None
    if profile.placements is not UNSET:
        tally.placements += 1
        if profile.placements is not None:
            placements = [MigPlacement(start=p.start, size=p.size) for p in profile.placements]
    return MigProfile(
        name=profile.name,
        memory_mb=profile.memory_mb,
        core=profile.core,
        slice_count=profile.slice_count,
        placements=placements,
    )


def _rich_device(item: _Device, index: int, tally: _Tally) -> DeviceInfo:
    """A device with MIG profiles or custom info; raises ``OverflowError`` to give up."""
    profiles: tuple[MigProfile, ...] = ()
    if item.mig_profiles is not UNSET:
        tally.profiles += 1
        if item.mig_profiles:
            tally.uints = True
            profiles = tuple(_mig_profile(p, tally) for p in item.mig_profiles)
    custominfo = None
    if item.custominfo is not UNSET:
        tally.custominfo += 1
        if item.custominfo is not None:
            custominfo, zero = _go_any(item.custominfo, 3)  # the array, the device, custominfo itself
            tally.zero = tally.zero or zero
    return trusted_device(
        item.id,
        index,
        item.count,
        item.devmem,
        item.devcore,
        item.type,
        item.numa,
        item.mode,
        profiles,
        item.health,
        item.devicevendor,
        custominfo,
    )


def _tally_agrees(tally: _Tally, text: str) -> bool:
    """No repeated list or map key (each key's text occurs once per field that was present), and no
    ``-0`` where Go reads it differently."""
    if (
        text.count('"migProfiles"') != tally.profiles
        or text.count('"placements"') != tally.placements
        or text.count('"custominfo"') != tally.custominfo
    ):
        return False
    # Go fails the whole value on a number it cannot hold even where a repeated key later replaced it,
    # so the text is searched, not only the values that survived.
    if tally.custominfo and _LONG_DIGITS.search(text) is not None:
        return False
    return not ((tally.uints or tally.zero) and _has_negative_zero(text))


def decode_json(text: str) -> list[DeviceInfo] | None:
    """HAMi's ``UnMarshalNodeDevices`` result for ``text`` (size already checked), or ``None`` when
    only the strict decoder can tell."""
    if "\\" in text or ("-0" in text and _NEGATIVE_INDEX.search(text) is not None):
        return None
    if getrecursionlimit() > _MAX_DEPTH:  # msgspec could then nest deeper than Go allows
        return None
    try:
        raw = _DECODER.decode(text)
    except _REJECTED:
        return None
    if raw is None:
        return []
    devices: list[DeviceInfo] = []
    tally: _Tally | None = None
    for item in raw:
        index = item.index
        if index < 0:  # absent (a present "-0", which Go refuses, sent the text to the strict path above)
            index = 0
        if item.mig_profiles is UNSET and item.custominfo is UNSET:
            devices.append(
                trusted_device(
                    item.id,
                    index,
                    item.count,
                    item.devmem,
                    item.devcore,
                    item.type,
                    item.numa,
                    item.mode,
                    (),
                    item.health,
                    item.devicevendor,
                    None,
                )
            )
            continue
        if tally is None:
            tally = _Tally()
        try:
            devices.append(_rich_device(item, index, tally))
        except OverflowError:
            return None
    if tally is not None and not _tally_agrees(tally, text):
        return None
    return devices


# ---------------------------------------------------------------------------------------------------
# Legacy decode
# ---------------------------------------------------------------------------------------------------

#: The integer and boolean fields of a legacy value by column: count, devmem, devcore, numa, health, index.
_LEGACY_INDEX = Annotated[int, Meta(ge=0, le=INT32.high)]
_LEGACY_COLUMNS = msgspec.json.Decoder(
    tuple[list[_Int32], list[_Int32], list[_Int32], list[_Int32], list[bool], list[_LEGACY_INDEX]]
)


def decode_legacy(value: str) -> list[DeviceInfo] | None:
    """HAMi's ``DecodeNodeDevices`` result for ``value`` (size already checked), or ``None`` when only
    the strict decoder can tell."""
    n = value.count(":")
    if not n or value[-1] != ":":
        return None
    # Every ':' becomes an item of its own: 9 fields and a ':' per record, then the empty tail.
    flat = value.replace(":", ",:,").split(",")
    if len(flat) != 10 * n + 1 or flat[9::10].count(":") != n:
        return None
    columns = "".join(
        [
            "[[",
            ",".join(flat[1::10]),
            "],[",
            ",".join(flat[2::10]),
            "],[",
            ",".join(flat[3::10]),
            "],[",
            ",".join(flat[5::10]),
            "],[",
            ",".join(flat[6::10]),
            "],[",
            ",".join(flat[7::10]),
            "]]",
        ]
    )
    # JSON's whitespace and brackets are the only things a field could hold that would still parse
    # as a column's integers or booleans: without them each field is exactly one JSON integer, or
    # ``true`` or ``false`` (the only spellings of a JSON boolean, and what Go's ParseBool reads as
    # them), or the parse fails. isprintable() is false for \t \n \r; the 14 brackets are the columns'.
    if " " in columns or not columns.isprintable() or columns.count("[") + columns.count("]") != 14:
        return None
    try:
        count, devmem, devcore, numa, health, index = _LEGACY_COLUMNS.decode(columns)
    except _REJECTED:
        return None
    # An empty field parses only when it is a column's only one ("[]"): then a column is short.
    if len(count) + len(devmem) + len(devcore) + len(numa) + len(health) + len(index) != 6 * n:
        return None
    # flat[0::10] ends with the empty tail as well; the devices are built in step over the columns and
    # stop at the shortest, so there are exactly n.
    return trusted_plain_devices(
        flat[0::10], index, count, devmem, devcore, flat[4::10], numa, flat[8::10], health
    )


# ---------------------------------------------------------------------------------------------------
# Encoders
# ---------------------------------------------------------------------------------------------------


class _OutPlacement(Struct):
    start: int
    size: int


class _OutProfile(Struct, rename={"memory_mb": "memoryMB", "slice_count": "sliceCount"}):
    name: str
    memory_mb: int
    core: int
    slice_count: int
    placements: list[_OutPlacement] | None


class _OutDevice(Struct, omit_defaults=True, rename={"mig_profiles": "migProfiles"}):
    id: str = ""
    index: int = 0
    count: int = 0
    devmem: int = 0
    devcore: int = 0
    type: str = ""
    numa: int = 0
    mode: str = ""
    mig_profiles: tuple[_OutProfile, ...] = ()
    health: bool = False


_ENCODER = msgspec.json.Encoder()
#: What the encoders give up on: the decoders' reasons, and msgspec's TypeError for a value it cannot
#: write (a str or int subclass in a field, which DeviceInfo's validators accept).
_UNWRITABLE = (*_REJECTED, TypeError)
#: What Go escapes in a string and msgspec does not, and the backslash of msgspec's own escapes.
_NOT_PLAIN = ("\\", "<", ">", "&", "\u2028", "\u2029")


_INDEX_MAX: Final = INT64.high  # HAMi writes the legacy index through a signed Go int


def _all_devices(devices: Sequence[Any]) -> bool:
    return list(map(type, devices)).count(DeviceInfo) == len(devices)


def encode_json(devices: Sequence[DeviceInfo]) -> str | None:
    """HAMi's ``MarshalNodeDevices`` output for ``devices``, or ``None`` when only the strict encoder
    can tell (a string Go escapes, something that is not a DeviceInfo or a field msgspec cannot write)."""
    if not _all_devices(devices):
        return None
    try:
        out = msgspec.convert(devices, list[_OutDevice], from_attributes=True)
        text = _ENCODER.encode(out).decode("utf-8")
    except _UNWRITABLE:
        return None
    if any(c in text for c in _NOT_PLAIN):
        return None
    return text


_BACKSLASH, _COLON, _COMMA = b"\\"[0], b":"[0], b","[0]


def encode_legacy_rows(devices: Sequence[DeviceInfo]) -> str | None:
    """HAMi's ``EncodeNodeDevices`` output for ``devices`` through msgspec (the fast path where the C
    encoder was not built), or ``None`` when only the strict encoder can tell (a field holding ``,``
    ``:`` ``"`` ``\\`` or a control character, an index over int64, something that is not a
    DeviceInfo, a field msgspec cannot write).

    msgspec writes the rows as JSON, ``[["id",1,2,3,"type",0,true,0,"mode"],...]``, with Go's
    integers and ``true``/``false``. With no backslash in it no string holds a quote (or needed any
    other escape), so the quotes are only string delimiters and ``"],["`` only a row boundary; with no
    colon and exactly the 9 * n - 1 commas of the rows' own separators no string holds a separator.
    Then splitting at the row boundaries, joining with ``:`` and dropping the quotes leaves HAMi's text.
    The rows are read by a comprehension (attribute loads the interpreter specialises for DeviceInfo's
    slots, about half the cost of ``attrgetter``), which also drops whatever is no DeviceInfo or has an
    index over int64, so that a short list means: leave it to the strict encoder."""
    n = len(devices)
    if not n:
        return ""
    rows = [
        (d.id, d.count, d.devmem, d.devcore, d.type, d.numa, d.health, d.index, d.mode)
        for d in devices
        if type(d) is DeviceInfo and d.index <= _INDEX_MAX
    ]
    if len(rows) != n:
        return None
    try:
        text = _ENCODER.encode(rows)
    except _UNWRITABLE:
        return None
    if _BACKSLASH in text or _COLON in text or text.count(_COMMA) != 9 * n - 1:
        return None
    return b":".join(text[2:-2].split(b'"],["')).replace(b'"', b"").decode("utf-8") + ":"


_LegacyEncoder = Callable[[Sequence[DeviceInfo]], "str | None"]


def _native_legacy_encoder() -> _LegacyEncoder | None:
    """The C legacy encoder, bound to DeviceInfo's slots, when it was built at install and
    ``HAMI_NO_NATIVE`` is not set. Should DeviceInfo's fields ever stop being plain slots (another
    attrs), it warns and the msgspec encoder serves (tests/protocol/test_legacy_native.py fails then)."""
    if os.environ.get("HAMI_NO_NATIVE"):
        return None
    try:
        from hami_core.protocol import _legacy_native
    except ImportError:  # installed without a C compiler
        return None
    try:
        _legacy_native.bind(DeviceInfo)
    except TypeError as exc:
        warnings.warn(f"hami_core: the C legacy encoder is not used: {exc}", RuntimeWarning, stacklevel=1)
        return None
    return _legacy_native.encode_legacy


_native = _native_legacy_encoder()
#: Whether ``encode_legacy`` is the C encoder (else it is ``encode_legacy_rows``).
NATIVE_LEGACY_ENCODER: Final = _native is not None
#: HAMi's ``EncodeNodeDevices`` output for ``devices``, or ``None`` when only the strict encoder can tell.
encode_legacy: Final[_LegacyEncoder] = _native if _native is not None else encode_legacy_rows
