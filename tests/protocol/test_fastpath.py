"""The codecs' fast paths (hami_core/protocol/fastpath.py) against the strict Go-compatible codecs.

Property: whenever a fast path answers, the strict path accepts the same input and gives the very same
result (devices compared field by field with number types and the sign of zero, encodings byte for
byte). When the fast path is not sure it answers ``None`` and the strict path decides. The generators
aim at the edge cases of spec section 3: keys in other cases and repeated, ``null`` fields, big
integers, ``1.0`` and ``1e2``, ``-0``, escapes and surrogates, ``[null]``, nesting, the 256 KiB limit;
and at typical values, which the fast path must take (or it is no fast path).
"""

from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from attrs import evolve as attrs_evolve
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from hami_core.protocol import fastpath
from hami_core.protocol.errors import DecodeError, EncodeError
from hami_core.protocol.gojson import decode_json, decode_json_strict, encode_json, encode_json_strict
from hami_core.protocol.legacy import (
    decode_legacy,
    decode_legacy_strict,
    encode_legacy,
    encode_legacy_strict,
)
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
from hami_core.protocol.size import MAX_ANNOTATION_BYTES

#: Examples per property; raise it for a deeper local run (HAMI_FASTPATH_EXAMPLES=5000).
EXAMPLES = int(os.environ.get("HAMI_FASTPATH_EXAMPLES", "200"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


# ---------------------------------------------------------------------------------------------------
# Exact comparison
# ---------------------------------------------------------------------------------------------------


def canon(value: Any) -> Any:
    """``value`` with every number tagged by type, floats by their repr (so -0.0 is not 0.0 and 1 is not
    1.0), mappings as sorted item tuples."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return (type(value).__name__, value)
    if isinstance(value, int):
        return ("int", value)
    if isinstance(value, float):
        return ("float", repr(value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((k, canon(v)) for k, v in value.items())))
    if isinstance(value, list | tuple):
        return (type(value).__name__, tuple(canon(v) for v in value))
    if isinstance(value, DeviceInfo | MigProfile | MigPlacement):
        fields = {name: getattr(value, name) for name in value.__slots__ if name != "__weakref__"}
        return (type(value).__name__, canon(fields))
    raise AssertionError(f"unexpected {type(value).__name__} in a decoded device: {value!r}")


def strict_result(decode: Any, value: str) -> list[DeviceInfo] | DecodeError:
    try:
        result: list[DeviceInfo] = decode(value)
    except DecodeError as exc:
        return exc
    return result


def assert_fast_agrees(
    fast: list[DeviceInfo] | None, strict: list[DeviceInfo] | DecodeError, value: str
) -> None:
    if fast is None:
        return
    assert not isinstance(strict, DecodeError), f"fast path accepted {value!r}, strict refuses: {strict}"
    assert canon(fast) == canon(strict), f"{value!r}:\n fast:   {fast}\n strict: {strict}"


# ---------------------------------------------------------------------------------------------------
# JSON values: written by hand from parts, with the spellings Go treats specially
# ---------------------------------------------------------------------------------------------------


#: How unruly one generated value is: the percentage of its parts drawn from the odd side. Shared by
#: every part of one example, so many values are clean or nearly so, and the fast path takes them.
_CHAOS = st.shared(st.sampled_from([0, 0, 0, 2, 5, 10, 30, 60]), key="chaos")


def _mostly(good: st.SearchStrategy[str], odd: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.tuples(_CHAOS, st.integers(0, 99)).flatmap(lambda t: odd if t[1] < t[0] else good)


def _go_ints(go_range: IntRange, low: int | None = None, high: int | None = None) -> st.SearchStrategy[str]:
    low = go_range.low if low is None else low
    high = go_range.high if high is None else high
    edges = [low, high, 0, 1, -1]
    good = st.one_of(
        st.sampled_from([str(e) for e in edges if low <= e <= high]), st.integers(low, high).map(str)
    )
    odd = st.sampled_from(
        [
            "-0",
            "1.0",
            "1e2",
            "1E0",
            "0.0",
            "01",
            "+1",
            "10E-1",
            "2.5",
            "1e400",
            '"4"',
            "true",
            "null",
            "[]",
            "{}",
            "18446744073709551616",
            "9" * 30,
            str(go_range.low - 1),
            str(go_range.high + 1),
        ]
    )
    return _mostly(good, odd)


_PLAIN_BODIES = st.one_of(
    st.sampled_from(
        [
            "",
            "GPU-0",
            "NVIDIA-Tesla V100-PCIE-32GB",
            "hami-core",
            "a b",
            "é",
            "模式",
            "😀",
            "\x7f",
            "a:-0",
            "migProfiles",
        ]
    ),
    st.text(
        st.characters(codec="utf-8", exclude_categories=("Cs", "Cc"), exclude_characters='"\\\\'), max_size=6
    ),
)
_ODD_BODIES = st.one_of(
    st.sampled_from(
        [
            "\\u0041",
            "\\/",
            '\\"',
            "\\\\",
            "\\n",
            "\\ud83d\\ude00",
            "\\ud800",
            "\\udc00x",
            "\\u00e9",
            "\x01",
            "\t",
            "<&>",
            "\u2028",
            "\ud800",
        ]
    ),
    st.text(max_size=4).map(lambda s: json.dumps(s)[1:-1]),
)
_STRINGS = _mostly(_PLAIN_BODIES, _ODD_BODIES).map(lambda body: f'"{body}"')
_WS = _mostly(st.just(""), st.sampled_from([" ", "\n", "\t ", "\r\n", "\f", "\u00a0"]))


def _key(name: str) -> st.SearchStrategy[str]:
    variants = [
        name.upper(),
        name.capitalize(),
        name.replace("s", "\u017f"),
        name.replace("k", "\u212a"),
        name[:1] + "\\u" + format(ord(name[1]), "04x") + name[2:],
    ]
    return _mostly(st.just(name), st.sampled_from(variants)).map(lambda k: f'"{k}"')


def _object(
    fields: dict[str, st.SearchStrategy[str]], optional: tuple[str, ...] = ()
) -> st.SearchStrategy[str]:
    """An object with some of ``fields`` in HAMi's order, or (odd) repeated, shuffled, null or unknown."""
    names = list(fields)

    @st.composite
    def build(draw: st.DrawFn) -> str:
        chaos = draw(_CHAOS)
        odd = draw(st.integers(0, 99)) < chaos
        if odd:
            chosen = draw(st.lists(st.sampled_from(names), max_size=len(names) + 3))
        else:
            chosen = [n for n in names if n not in optional or draw(st.integers(0, 4)) == 0]
            chosen = [n for n in chosen if draw(st.integers(0, 3))]
        parts = []
        for name in chosen:
            value = draw(_mostly(fields[name], st.just("null")))
            parts.append(draw(_key(name)) + draw(_WS) + ":" + draw(_WS) + value)
        if odd and draw(st.booleans()):
            parts.append('"unknown":' + draw(st.sampled_from(["1", '"x"', "[1,{}]", "null"])))
        return "{" + ",".join(parts) + "}"

    return build()


def _array(element: st.SearchStrategy[str], max_size: int = 3) -> st.SearchStrategy[str]:
    return st.lists(element, max_size=max_size).map(lambda items: "[" + ",".join(items) + "]")


_NUMBERS = st.one_of(
    st.integers(-(2**70), 2**70).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.sampled_from(
        [
            "-0",
            "0",
            "-0.0",
            "1e308",
            "1e309",
            "1e-400",
            "123456789012345678901234567890",
            "9" * 400,
            "2.2250738585072011e-308",
            "0.1",
            "1E+2",
            "5e-324",
        ]
    ),
)
_ANY = st.recursive(
    st.one_of(_NUMBERS, _STRINGS, st.sampled_from(["true", "false", "null"])),
    lambda inner: st.one_of(
        _array(inner),
        st.lists(st.tuples(_STRINGS, inner), max_size=3).map(
            lambda items: "{" + ",".join(f"{k}:{v}" for k, v in items) + "}"
        ),
    ),
    max_leaves=8,
)
_PLACEMENT = _object({"start": _go_ints(UINT32), "size": _go_ints(UINT32)})
_PROFILE = _object(
    {
        "name": _STRINGS,
        "memoryMB": _go_ints(INT32),
        "core": _go_ints(INT32),
        "sliceCount": _go_ints(UINT32),
        "placements": _array(_PLACEMENT),
    }
)
_DEVICE = _object(
    {
        "id": _STRINGS,
        "index": _mostly(_go_ints(UINT64, 1, INT64.high), _go_ints(UINT64)),
        "count": _go_ints(INT32),
        "devmem": _go_ints(INT32),
        "devcore": _go_ints(INT32),
        "type": _STRINGS,
        "numa": _go_ints(INT64),
        "mode": _STRINGS,
        "migProfiles": _array(_PROFILE, 2),
        "health": _mostly(st.sampled_from(["true", "false"]), st.sampled_from(["1", '"true"', "True"])),
        "devicevendor": _STRINGS,
        "custominfo": st.lists(st.tuples(_STRINGS, _ANY), max_size=3).map(
            lambda items: "{" + ",".join(f"{k}:{v}" for k, v in items) + "}"
        ),
        "migtemplate": st.just('[[{"Name":"1g","Core":1}]]'),
    },
    optional=("migProfiles", "devicevendor", "custominfo", "migtemplate"),
)


@st.composite
def json_values(draw: st.DrawFn) -> str:
    body = draw(
        _mostly(
            _array(_DEVICE, 4),
            st.one_of(
                _array(st.one_of(_DEVICE, st.just("null")), 4),
                st.sampled_from(["null", "[]", "[null]", "{}", "", "[", '[{"id":"a"}]x', "\ufeff[]"]),
            ),
        )
    )
    return draw(_WS) + body + draw(_WS)


@SETTINGS
@given(value=json_values())
@example(value='[{"index":-0}]')
@example(value='[{"index":-0,"index":5}]')
@example(value='[{"migProfiles":[{"sliceCount":-0,"sliceCount":1}]}]')
@example(value='[{"custominfo":{"a":-0,"a":1}}]')
@example(value='[{"custominfo":{"":{"":0,"":' + "9" * 400 + '},"":[]}}]')
@example(value='[{"custominfo":{"a":-0}}]')
@example(value='[{"migProfiles":[{"name":"a","core":1}],"migProfiles":[{"name":"b"}]}]')
@example(value='[{"custominfo":{"a":1},"custominfo":{"b":2}}]')
@example(value='[{"migProfiles":[{"placements":[{"start":1,"size":2}],"placements":[{"size":9}]}]}]')
@example(value='[{"id":"a","id":null}]')
@example(value='[{"count":1.0}]')
def test_json_fast_path_agrees_with_strict(value: str) -> None:
    assert_fast_agrees(fastpath.decode_json(value), strict_result(decode_json_strict, value), value)


@SETTINGS
@given(value=json_values())
def test_json_codec_is_the_strict_codec(value: str) -> None:
    """The whole codec (fast path, else strict) decides exactly as the strict path alone."""
    whole, strict = strict_result(decode_json, value), strict_result(decode_json_strict, value)
    if isinstance(strict, DecodeError):
        assert isinstance(whole, DecodeError) and str(whole) == str(strict)
    else:
        assert canon(whole) == canon(strict)


# ---------------------------------------------------------------------------------------------------
# Typical values: the fast path must take them
# ---------------------------------------------------------------------------------------------------


def _ints(go_range: IntRange) -> st.SearchStrategy[int]:
    edges = st.sampled_from([go_range.low, go_range.high, 0, 1])
    return st.one_of(edges, st.integers(go_range.low, go_range.high))


_PLAIN_TEXT = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs", "Cc"), exclude_characters='<>&\u2028\u2029\\",:'),
    max_size=12,
).filter(
    lambda s: s not in ("migProfiles", "placements", "custominfo")  # counted in the text by the fast path
)
_profiles = st.builds(
    MigProfile,
    name=_PLAIN_TEXT,
    memory_mb=_ints(INT32),
    core=_ints(INT32),
    slice_count=_ints(UINT32),
    placements=st.none()
    | st.lists(st.builds(MigPlacement, start=_ints(UINT32), size=_ints(UINT32)), max_size=2),
)


def _devices(mig: bool, index: IntRange = INT64) -> st.SearchStrategy[list[DeviceInfo]]:
    return st.lists(
        st.builds(
            DeviceInfo,
            id=_PLAIN_TEXT,
            index=st.integers(0, index.high),
            count=_ints(INT32),
            devmem=_ints(INT32),
            devcore=_ints(INT32),
            type=_PLAIN_TEXT,
            numa=_ints(INT64),
            mode=_PLAIN_TEXT,
            health=st.booleans(),
            mig_profiles=st.lists(_profiles, max_size=2) if mig else st.just(()),
        ),
        max_size=8,
    )


@SETTINGS
@given(devices=_devices(mig=True))
def test_json_fast_path_takes_what_hami_writes(devices: list[DeviceInfo]) -> None:
    value = encode_json_strict(devices)
    fast = fastpath.decode_json(value)
    assert_fast_agrees(fast, strict_result(decode_json_strict, value), value)
    if "-0" not in value:
        assert fast is not None, f"the fast path left a value HAMi writes to the strict path: {value!r}"


@SETTINGS
@given(devices=_devices(mig=False))
def test_json_fast_path_takes_zero_values_written_out(devices: list[DeviceInfo]) -> None:
    """HAMi omits zero values (omitempty); other writers spell them out, "index":0 and "numa":0 for
    the first GPU. Only a "-0" index (which Go refuses for a uint) is the strict path's."""
    value = (
        "["
        + ",".join(
            f'{{"id":"{d.id}","index":{d.index},"count":{d.count},"devmem":{d.devmem},"devcore":{d.devcore},'
            f'"type":"{d.type}","numa":{d.numa},"mode":"{d.mode}",'
            f'"health":{"true" if d.health else "false"}}}'
            for d in devices
        )
        + "]"
    )
    if "\\" in value or '"' in "".join(d.id + d.type + d.mode for d in devices):
        return
    fast = fastpath.decode_json(value)
    assert_fast_agrees(fast, strict_result(decode_json_strict, value), value)
    assert fast is not None, value
    negative = value.replace('"index":0,', '"index":-0,')
    if negative != value:
        assert fastpath.decode_json(negative) is None
        with pytest.raises(DecodeError):
            decode_json(negative)


@SETTINGS
@given(devices=_devices(mig=False, index=INT32))
def test_legacy_fast_path_takes_what_hami_writes(devices: list[DeviceInfo]) -> None:
    value = encode_legacy_strict(devices)
    fast = fastpath.decode_legacy(value)
    assert_fast_agrees(fast, strict_result(decode_legacy_strict, value), value)
    if devices and all(d.numa in INT32 for d in devices):
        assert fast is not None, f"the fast path left a value HAMi writes to the strict path: {value!r}"


# ---------------------------------------------------------------------------------------------------
# Legacy values
# ---------------------------------------------------------------------------------------------------

_LEGACY_INTS = _mostly(
    st.one_of(st.integers(-(2**31), 2**31 - 1).map(str), st.sampled_from(["0", "1", "100", "32768"])),
    st.one_of(
        st.integers(-(2**40), 2**40).map(str),
        st.sampled_from(
            [
                "-0",
                "+0",
                "007",
                "+7",
                "2147483648",
                "-2147483649",
                "",
                " 1",
                "1 ",
                "0x10",
                "1_000",
                "1e3",
                "1.0",
                "--1",
                "٣",
                "１",
                "[1]",
                "null",
                "true",
                '"1"',
                "1\t",
                "9223372036854775808",
                "00",
            ]
        ),
    ),
)
_LEGACY_BOOLS = _mostly(
    st.sampled_from(["true", "false"]),
    st.sampled_from(["1", "0", "t", "T", "TRUE", "True", "F", "yes", "", " true"]),
)
_LEGACY_TEXT = _mostly(
    st.text(st.characters(exclude_characters=",:", exclude_categories=("Cs",)), max_size=8),
    st.one_of(
        st.sampled_from(["", 'a"b', "\\", "[", "]", "]]", "\ud800", "\udcff", "1,2"]),
        st.text(st.characters(exclude_characters=",:"), max_size=6),
    ),
)


@st.composite
def legacy_values(draw: st.DrawFn) -> str:
    records = []
    for _ in range(draw(st.integers(0, 5))):
        fields = [
            draw(_LEGACY_TEXT),
            draw(_LEGACY_INTS),
            draw(_LEGACY_INTS),
            draw(_LEGACY_INTS),
            draw(_LEGACY_TEXT),
            draw(_LEGACY_INTS),
            draw(_LEGACY_BOOLS),
            draw(_LEGACY_INTS),
            draw(_LEGACY_TEXT),
        ]
        length = int(draw(_mostly(st.just("9"), st.sampled_from(["7", "8", "10"]))))
        records.append(",".join(fields[:length] + [""] * (length - 9)))
    separators = [draw(_mostly(st.just(":"), st.sampled_from(["::", ""]))) for _ in records]
    lead = draw(_mostly(st.just(""), st.just(":")))
    return lead + "".join(r + s for r, s in zip(records, separators, strict=True))


@SETTINGS
@given(value=legacy_values())
@example(value="a,-0,-0,-0,b,-0,true,-0,m:")
@example(value=",,,,,,,,:")
@example(value="a,,2,3,b,0,true,0,m:")
@example(value="a,1,2,3,b,0,true,0,m:a,1,2,3,b,0,true,0,m")
@example(value="a,1 ,2,3,b,0,true,0,m:")
def test_legacy_fast_path_agrees_with_strict(value: str) -> None:
    assert_fast_agrees(fastpath.decode_legacy(value), strict_result(decode_legacy_strict, value), value)


@SETTINGS
@given(value=legacy_values())
def test_legacy_codec_is_the_strict_codec(value: str) -> None:
    whole, strict = strict_result(decode_legacy, value), strict_result(decode_legacy_strict, value)
    if isinstance(strict, DecodeError):
        assert isinstance(whole, DecodeError) and str(whole) == str(strict)
    else:
        assert canon(whole) == canon(strict)


# ---------------------------------------------------------------------------------------------------
# Encoders
# ---------------------------------------------------------------------------------------------------

_ANY_TEXT = st.one_of(
    _PLAIN_TEXT,
    st.text(max_size=8),  # lone surrogates included: Go sees invalid UTF-8
    st.sampled_from(
        [
            "<&>",
            "\u2028",
            "\u2029",
            "\x00",
            "\x1f",
            "\x7f",
            '"',
            "\\",
            "a,b",
            "a:b",
            "\udc80",
            # what the legacy fast encoder's row boundaries, quotes and brackets look like
            '"],["',
            "],[",
            '","',
            "[",
            "]",
            "[[",
            "]]",
            ",true,",
            "true",
            "false",
        ]
    ),
)


def _any_devices() -> st.SearchStrategy[list[Any]]:
    profile = st.builds(
        MigProfile,
        name=_ANY_TEXT,
        memory_mb=_ints(INT32),
        core=_ints(INT32),
        slice_count=_ints(UINT32),
        placements=st.none()
        | st.lists(st.builds(MigPlacement, start=_ints(UINT32), size=_ints(UINT32)), max_size=2),
    )
    device = st.builds(
        DeviceInfo,
        id=_ANY_TEXT,
        index=_ints(UINT64),
        count=_ints(INT32),
        devmem=_ints(INT32),
        devcore=_ints(INT32),
        type=_ANY_TEXT,
        numa=_ints(INT64),
        mode=_ANY_TEXT,
        health=st.booleans(),
        mig_profiles=st.lists(profile, max_size=2),
        devicevendor=_ANY_TEXT,
        custominfo=st.none() | st.just({"a": 1}),
    )
    return st.lists(st.one_of(device, device, device, st.just("not a device")), max_size=5)


def _encoded(encode: Any, devices: list[Any]) -> str | EncodeError:
    try:
        text: str = encode(devices)
    except EncodeError as exc:
        return exc
    return text


@SETTINGS
@given(devices=_any_devices())
def test_json_fast_encoder_agrees_with_strict(devices: list[Any]) -> None:
    fast = fastpath.encode_json(devices)
    strict = _encoded(encode_json_strict, devices)
    if fast is not None:
        assert fast == strict
    whole = _encoded(encode_json, devices)
    assert str(whole) == str(strict) and type(whole) is type(strict)


def _legacy_fast_encoders() -> dict[str, LegacyEncoder]:
    """Every legacy fast encoder this install has: msgspec's always, the C one where it was built
    (tests/protocol/test_legacy_native.py checks it was, wherever it could be)."""
    encoders: dict[str, LegacyEncoder] = {"msgspec": fastpath.encode_legacy_rows}
    try:
        from hami_core.protocol import _legacy_native
    except ImportError:
        return encoders
    _legacy_native.bind(DeviceInfo)
    encoders["c"] = _legacy_native.encode_legacy
    return encoders


LegacyEncoder = Callable[[Sequence[Any]], "str | None"]
LEGACY_FAST_ENCODERS = _legacy_fast_encoders()
each_legacy_fast_encoder = pytest.mark.parametrize(
    "fast_encode", LEGACY_FAST_ENCODERS.values(), ids=LEGACY_FAST_ENCODERS.keys()
)


@each_legacy_fast_encoder
@SETTINGS
@given(devices=_any_devices())
@example(devices=[DeviceInfo(id='a"],["b', type="],[", mode="]]")])
@example(devices=[DeviceInfo(id="a],[b", type="[", mode="x"), DeviceInfo(id="[[", mode="]")])
@example(devices=[DeviceInfo(id="a", index=2**63 - 1), DeviceInfo(index=2**63)])
@example(devices=[DeviceInfo(id="a\x00b"), DeviceInfo(type="\udc80")])
@example(devices=[DeviceInfo(id="é", type="显卡", mode="\U0001f600"), DeviceInfo(numa=-(2**63))])
def test_legacy_fast_encoder_agrees_with_strict(fast_encode: LegacyEncoder, devices: list[Any]) -> None:
    fast = fast_encode(devices)
    strict = _encoded(encode_legacy_strict, devices)
    if fast is not None:
        assert fast == strict
    whole = _encoded(encode_legacy, devices)
    assert str(whole) == str(strict) and type(whole) is type(strict)


class _Int(int):
    """An int subclass: DeviceInfo's validators take it, msgspec will not write it."""


class _Str(str):
    """A str subclass, the same."""


@pytest.mark.parametrize(
    "device",
    [
        DeviceInfo(id="a", count=_Int(1)),
        DeviceInfo(id="a", index=_Int(2)),
        DeviceInfo(id=_Str("a")),
        DeviceInfo(mode=_Str("m"), numa=_Int(-1)),
    ],
)
def test_fast_encoders_leave_subclassed_fields_to_the_strict_path(device: DeviceInfo) -> None:
    """A fast path never raises: what msgspec cannot write (and a subclass, which could change its own
    text, for the C encoder) goes to the strict encoder."""
    devices = [device, DeviceInfo(id="b")]
    for fast_encode in LEGACY_FAST_ENCODERS.values():
        assert fast_encode(devices) is None
    assert encode_legacy(devices) == encode_legacy_strict(devices)
    fast_json = fastpath.encode_json(devices)
    assert fast_json is None or fast_json == encode_json_strict(devices)
    assert encode_json(devices) == encode_json_strict(devices)


class _LyingInt(int):
    """An int that says something else of itself: separators, a JSON key, falsehood."""

    def __str__(self) -> str:
        return '7,8:9,"x":1'

    def __format__(self, spec: str) -> str:
        return str(self)

    def __bool__(self) -> bool:
        return False


class _LyingStr(str):
    """A str that says something else of itself, and that it holds no separator."""

    def __str__(self) -> str:
        return 'x","mode":"evil'

    def __format__(self, spec: str) -> str:
        return str(self)

    def __contains__(self, item: object) -> bool:
        return False

    def __bool__(self) -> bool:
        return False

    def __len__(self) -> int:
        return 0


def test_encoders_write_a_subclass_by_its_own_characters_and_digits() -> None:
    """Formatted as it says of itself, such a value would add fields, records or JSON keys; every
    encoder writes the value's own text instead (hami_core/protocol/plain.py), the text a decoder
    gives back, and refuses its separators by what it holds."""
    lying = DeviceInfo(
        id=_LyingStr("GPU-0"), count=_LyingInt(10), devmem=_LyingInt(1024), type=_LyingStr("A100"),
        numa=_LyingInt(1), mode=_LyingStr("hami-core"), index=_LyingInt(3), health=True,
        mig_profiles=[MigProfile(name=_LyingStr("1g"), memory_mb=_LyingInt(5), core=_LyingInt(1),
                                 slice_count=_LyingInt(1), placements=[MigPlacement(start=_LyingInt(0),
                                                                                    size=_LyingInt(1))])],
    )  # fmt: skip
    plain = DeviceInfo(
        id="GPU-0", count=10, devmem=1024, type="A100", numa=1, mode="hami-core", index=3, health=True,
        mig_profiles=[MigProfile(name="1g", memory_mb=5, core=1, slice_count=1,
                                 placements=[MigPlacement(start=0, size=1)])],
    )  # fmt: skip
    for encode in (encode_legacy, encode_legacy_strict, encode_json, encode_json_strict):
        assert encode([lying]) == encode([plain]), encode.__name__
    assert decode_legacy(encode_legacy([lying])) == [attrs_evolve(plain, mig_profiles=())]
    assert decode_json(encode_json([lying])) == [plain]
    with pytest.raises(EncodeError, match=r"^device 0: id 'a:b' holds ',' or ':'"):
        encode_legacy([DeviceInfo(id=_LyingStr("a:b"))])


@each_legacy_fast_encoder
def test_legacy_fast_encoder_takes_brackets_and_the_largest_index(fast_encode: LegacyEncoder) -> None:
    """Brackets in a string are plain text to the legacy encoding (the msgspec encoder's row boundary is
    a quote, a bracket, a comma: no string it takes holds one), and int64's maximum is still HAMi's int."""
    devices = [DeviceInfo(id="[a][b]", type="]][[", index=2**63 - 1, numa=-(2**63)), DeviceInfo(mode="[")]
    fast = fast_encode(devices)
    assert fast is not None and fast == encode_legacy_strict(devices)
    assert fast == "[a][b],0,0,0,]][[,-9223372036854775808,false,9223372036854775807,:,0,0,0,,0,false,0,[:"


@SETTINGS
@given(devices=_devices(mig=True))
def test_fast_encoders_take_plain_devices(devices: list[DeviceInfo]) -> None:
    assert fastpath.encode_json(devices) == encode_json_strict(devices)
    for fast_encode in LEGACY_FAST_ENCODERS.values():
        assert fast_encode(devices) == encode_legacy_strict(devices)
        assert fast_encode(tuple(devices)) == encode_legacy_strict(devices)


# ---------------------------------------------------------------------------------------------------
# Fixed edge cases
# ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        "[null]",
        '[{"id":"a"},null]',
        '[{"ID":"a"}]',
        '[{"count":null}]',
        '[{"id":"a","id":null}]',
        '[{"index":0,"index":-0}]',
        '[{"index":-0}]',
        '[{"index" : -0,"index":5}]',
        '[{"count":1.0}]',
        '[{"count":1e2}]',
        '[{"count":2147483648}]',
        '[{"index":18446744073709551615}]',
        '[{"id":"\\u0041"}]',
        '[{"id":"\ud800"}]',
        '[{"migtemplate":[]}]',
        '[{"custominfo":{"a":-0}}]',
        '[{"custominfo":{"a":1e400}}]',
        '[{"migProfiles":[],"migProfiles":[]}]',
        '[{"custominfo":{},"custominfo":{}}]',
        '[{"custominfo":{"a":' + "[" * 2000 + "]" * 2000 + "}}]",
    ],
)
def test_json_fast_path_leaves_edge_cases_to_the_strict_path(value: str) -> None:
    assert fastpath.decode_json(value) is None


def test_json_fast_path_takes_the_last_of_repeated_scalar_keys_as_go_does() -> None:
    value = '[{"id":"a","count":1,"id":"b","count":2,"health":false,"health":true}]'
    fast = fastpath.decode_json(value)
    assert fast == decode_json_strict(value) == [DeviceInfo(id="b", count=2, health=True)]


def test_json_fast_path_reads_custominfo_numbers_as_go_floats() -> None:
    value = '[{"custominfo":{"a":1,"b":12345678901234567890,"c":[2,-1.5,"x"],"d":0}}]'
    got = fastpath.decode_json(value)
    assert got is not None and got[0].custominfo is not None
    assert canon(dict(got[0].custominfo)) == canon(
        {"a": 1.0, "b": 1.2345678901234567e19, "c": [2.0, -1.5, "x"], "d": 0.0}
    )
    assert canon(got) == canon(decode_json_strict(value))


def test_json_negative_zero_in_custominfo_is_a_negative_float() -> None:
    value = '[{"custominfo":{"z":-0,"y":0}}]'
    assert fastpath.decode_json(value) is None  # "0" and "-0" look alike to msgspec
    custominfo = decode_json(value)[0].custominfo
    assert custominfo is not None
    assert math.copysign(1, custominfo["z"]) == -1 and math.copysign(1, custominfo["y"]) == 1


def test_size_limit_comes_before_either_path() -> None:
    over = "[" + " " * MAX_ANNOTATION_BYTES + "]"
    for decode in (decode_json, decode_json_strict):
        with pytest.raises(DecodeError, match="262144-byte annotation limit"):
            decode(over)
    legacy_over = "a,1,2,3,b,0,true,0,m:" * (MAX_ANNOTATION_BYTES // 20)
    for decode in (decode_legacy, decode_legacy_strict):
        with pytest.raises(DecodeError, match="annotation limit"):
            decode(legacy_over)


@pytest.mark.parametrize(
    "value",
    [
        "",
        ":",
        "::",
        ",,,,,,,,:",
        "a,,2,3,b,0,true,0,m:",
        "a,1,2,3,b,0,true:",
        "a,+1,2,3,b,0,true,0,m:",
        "a,007,2,3,b,0,true,0,m:",
        "a,1,2,3,b,0,T,0,m:",
        "a,1,2,3,b,0,true,0,m",
        "a,1,2,3,b,0,true,0,m::",
        "a, 1,2,3,b,0,true,0,m:",
        "a,1e2,2,3,b,0,true,0,m:",
        "a,1,2,3,b,0,true,-1,m:",
        "a,1,2,3,b,9999999999,true,0,m:",
    ],
)
def test_legacy_fast_path_leaves_edge_cases_to_the_strict_path(value: str) -> None:
    assert fastpath.decode_legacy(value) is None


@pytest.mark.parametrize("decode", [decode_json, decode_json_strict])
def test_go_nesting_limit_holds_whatever_the_recursion_limit(decode: Any) -> None:
    """Python's parsers nest as deep as the recursion limit allows; a process that raised it past
    Go's 10000 levels must still refuse what Go refuses."""
    at_limit = '[{"custominfo":{"k":' + "[" * 9997 + "]" * 9997 + "}}]"
    over = '[{"custominfo":{"k":' + "[" * 9998 + "]" * 9998 + "}}]"
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(50_000)
    try:
        assert len(decode(at_limit)) == 1
        with pytest.raises(DecodeError):
            decode(over)
    finally:
        sys.setrecursionlimit(before)
