"""Properties of both codecs over generated input: round trips, and decoders that fail only with
DecodeError whatever text they are given."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from hami_core.protocol import gojson
from hami_core.protocol.codecs import MAX_ANNOTATION_BYTES, decode_any
from hami_core.protocol.errors import DecodeError
from hami_core.protocol.gojson import JsonDecodeError, decode_json, encode_json
from hami_core.protocol.legacy import decode_legacy, encode_legacy
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

SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
DECODERS = [decode_legacy, decode_json, decode_any]


def ints(go_range: IntRange) -> st.SearchStrategy[int]:
    edges = [go_range.low, go_range.high, 0, 1, -1]
    return st.one_of(
        st.sampled_from([e for e in edges if e in go_range]), st.integers(go_range.low, go_range.high)
    )


#: Valid Unicode (no lone surrogates): what a JSON string round-trips.
unicode_text = st.text(st.characters(blacklist_categories=["Cs"]), max_size=12)
placements = st.builds(MigPlacement, start=ints(UINT32), size=ints(UINT32))
profiles = st.builds(
    MigProfile,
    name=unicode_text,
    memory_mb=ints(INT32),
    core=ints(INT32),
    slice_count=ints(UINT32),
    placements=st.none() | st.lists(placements, max_size=3),
)
custominfo = st.none() | st.dictionaries(
    st.text(max_size=4), st.integers(0, 9) | st.text(max_size=4), max_size=3
)


def devices(
    text: st.SearchStrategy[str], index: st.SearchStrategy[int], min_size: int = 0
) -> st.SearchStrategy[list[DeviceInfo]]:
    device = st.builds(
        DeviceInfo,
        id=text,
        index=index,
        count=ints(INT32),
        devmem=ints(INT32),
        devcore=ints(INT32),
        type=text,
        numa=ints(INT64),
        mode=text,
        health=st.booleans(),
        mig_profiles=st.lists(profiles, max_size=2),
        devicevendor=text,
        custominfo=custominfo,
    )
    return st.lists(device, min_size=min_size, max_size=5)


def wire_fields(device: DeviceInfo, *, mig: bool) -> DeviceInfo:
    """What survives an encoding: never devicevendor or custominfo; MIG profiles only in JSON."""
    return DeviceInfo(
        id=device.id,
        index=device.index,
        count=device.count,
        devmem=device.devmem,
        devcore=device.devcore,
        type=device.type,
        numa=device.numa,
        mode=device.mode,
        health=device.health,
        mig_profiles=device.mig_profiles if mig else (),
    )


# ---- round trips -------------------------------------------------------------------------------------------

#: Anything but the two separators, lone surrogates included: the legacy format keeps text verbatim.
legacy_text = st.text(st.characters(blacklist_characters=",:"), max_size=12)


@SETTINGS
@given(devices(legacy_text, st.integers(0, INT64.high), min_size=1))
def test_legacy_round_trip(devices: list[DeviceInfo]) -> None:
    # Not for an empty list: HAMi encodes it as "", which its own decoder refuses (no separator).
    assert decode_legacy(encode_legacy(devices)) == [wire_fields(d, mig=False) for d in devices]


@SETTINGS
@given(devices(unicode_text, ints(UINT64)))
def test_json_round_trip(devices: list[DeviceInfo]) -> None:
    encoded = encode_json(devices)
    assert decode_json(encoded) == [wire_fields(d, mig=True) for d in devices]
    assert decode_any(encoded) == decode_json(encoded)


@SETTINGS
@given(devices(unicode_text, ints(UINT64)))
def test_json_encoding_is_compact_ascii_safe_json(devices: list[DeviceInfo]) -> None:
    encoded = encode_json(devices)
    assert json.loads(encoded) is not None  # standard JSON too
    assert not any(c in encoded for c in "<>&\u2028\u2029\n")
    assert encode_json(decode_json(encoded)) == encoded  # a fixed point: reporters compare bytes


# ---- decoders fail only with DecodeError -------------------------------------------------------------------


def decodes_or_refuses(value: str) -> None:
    for decode in DECODERS:
        try:
            result = decode(value)
        except DecodeError as exc:
            assert len(str(exc).splitlines()) == 1, str(exc)  # one line: no \n, \r, U+2028 ...
        else:
            assert all(isinstance(d, DeviceInfo) for d in result)


@SETTINGS
@given(st.text())
@example("")
@example("\x00:\x00,")
@example("[" * 20000)
@example('[{"custominfo":' + "{" * 5000)
def test_decoders_refuse_arbitrary_text_only_with_decode_error(value: str) -> None:
    decodes_or_refuses(value)


@SETTINGS
@given(st.binary(max_size=200).map(lambda raw: raw.decode("utf-8", "surrogateescape")))
def test_decoders_refuse_binary_ish_text_only_with_decode_error(value: str) -> None:
    decodes_or_refuses(value)


@SETTINGS
@given(
    st.text(st.characters(codec="utf-8", min_codepoint=0x80), max_size=40)
    | st.text('[]{}":,0123456789-+.eE \\u')
)
def test_decoders_refuse_unicode_and_json_fragments_only_with_decode_error(value: str) -> None:
    decodes_or_refuses(value)


json_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=6),
    st.sampled_from(["NaN", "1e400", "-0", "01"]),
)
json_values = st.recursive(
    json_leaves,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                ["id", "ID", "count", "health", "migProfiles", "placements", "custominfo", "x", "sliceCount"]
            ),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@st.composite
def json_like(draw: st.DrawFn) -> str:
    """JSON close to a device list, sometimes cut or with one character changed."""
    text = json.dumps(draw(st.lists(json_values, max_size=3)), ensure_ascii=draw(st.booleans()))
    mutation = draw(st.sampled_from(["none", "cut", "replace", "insert"]))
    if text and mutation != "none":
        at = draw(st.integers(0, len(text) - 1))
        piece = draw(st.sampled_from([*'[]{}",:\\ ntf0-.e', "\ud800", "\x01", "null"]))
        if mutation == "cut":
            text = text[:at]
        elif mutation == "replace":
            text = text[:at] + piece + text[at + 1 :]
        else:
            text = text[:at] + piece + text[at:]
    return text


@SETTINGS
@given(json_like())
def test_decoders_refuse_near_json_only_with_decode_error(value: str) -> None:
    decodes_or_refuses(value)


def _python_json_accepts(text: str) -> bool:
    """Python's own json module, NaN and Infinity refused: the reference grammar (it is Go's)."""

    def refuse(name: str) -> None:
        raise ValueError(name)

    try:
        json.loads(text, parse_constant=refuse)
    except (ValueError, RecursionError):
        return False
    return True


@SETTINGS
@given(json_like() | st.text('[]{}":,0123456789-+.eE \\udfntNaI', max_size=30))
@example('["\\ud800", "\\udc00x"]')
@example("[NaN]")
@example('{"a":1,"a":2}')
def test_the_syntax_is_jsons_and_each_syntax_error_is_one_line_with_its_offset(text: str) -> None:
    text = gojson.go_text(text)
    try:
        gojson.parse_json(text)
    except JsonDecodeError as exc:
        assert exc.kind in ("json_syntax", "json_eof")
        assert "\n" not in str(exc) and re.search(r"offset \d+", str(exc)), str(exc)
        assert not _python_json_accepts(text)
    else:
        assert _python_json_accepts(text)


# ---- size limit -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("decode", DECODERS)
def test_a_value_over_the_annotation_limit_is_refused_unparsed(decode: Any) -> None:
    with pytest.raises(DecodeError, match="over the 262144-byte annotation limit"):
        decode("[" + " " * MAX_ANNOTATION_BYTES + "]")
    with pytest.raises(DecodeError, match="annotation limit"):
        decode("é" * (MAX_ANNOTATION_BYTES // 2 + 1))  # counted in UTF-8 bytes, not characters


def test_a_value_at_the_limit_is_parsed() -> None:
    assert decode_json("[" + " " * (MAX_ANNOTATION_BYTES - 2) + "]") == []
    assert decode_legacy(":" * MAX_ANNOTATION_BYTES) == []


def test_raw_bytes_count_one_byte_each_even_beside_other_lone_surrogates() -> None:
    # U+DC80..U+DCFF stand for one invalid byte each; U+D800 (only reachable through the Python API
    # or a \u escape) is 3 bytes as Go would hold it: 262141 + 3 is exactly the limit.
    at_limit = "\udc80" * (MAX_ANNOTATION_BYTES - 3) + "\ud800"
    with pytest.raises(DecodeError) as caught:
        decode_legacy(at_limit)
    assert "annotation limit" not in str(caught.value)  # refused by the parser, not by the size check
    with pytest.raises(DecodeError, match="is 262145 bytes, over the 262144-byte annotation limit"):
        decode_legacy("\udc80" + at_limit)
