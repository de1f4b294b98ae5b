"""The JSON encoding, rule by rule (spec 3.2, 3.3), with Go encoding/json v1's exact behaviour."""

from __future__ import annotations

import json

import pytest

from hami_core.protocol.errors import DecodeError, EncodeError
from hami_core.protocol.gojson import (
    MAX_DEPTH,
    JsonDecodeError,
    decode_json,
    encode_json,
)
from hami_core.protocol.model import DeviceInfo, MigPlacement, MigProfile

A10 = DeviceInfo(
    id="GPU-0", count=10, devmem=24576, devcore=100, type="NVIDIA-A10", mode="hami-core", health=True
)
A10_WIRE = (
    '[{"id":"GPU-0","count":10,"devmem":24576,"devcore":100,"type":"NVIDIA-A10","mode":"hami-core",'
    '"health":true}]'
)


def encode_mig_profile(profile: MigProfile) -> str:
    """One MIG profile as Go writes it, cut out of the device that holds it."""
    wire = encode_json([DeviceInfo(mig_profiles=[profile])])
    assert wire.startswith('[{"migProfiles":[') and wire.endswith("]}]"), wire
    return wire[len('[{"migProfiles":[') : -len("]}]")]


def one(value: str) -> DeviceInfo:
    (device,) = decode_json(value)
    return device


def kind_of(value: str) -> str:
    with pytest.raises(JsonDecodeError) as caught:
        decode_json(value)
    assert "\n" not in str(caught.value)
    return caught.value.kind


# ---- encoder: key order, omitted zero values, compact ---------------------------------------------------


def test_spec_example_is_byte_exact() -> None:
    assert encode_json([A10]) == A10_WIRE


def test_zero_values_are_omitted_and_keys_keep_go_struct_order() -> None:
    assert encode_json([DeviceInfo(id="GPU-1", index=3, numa=1)]) == '[{"id":"GPU-1","index":3,"numa":1}]'
    assert encode_json([DeviceInfo()]) == "[{}]"
    full = DeviceInfo(
        id="i",
        index=1,
        count=2,
        devmem=3,
        devcore=4,
        type="t",
        numa=-5,
        mode="mig",
        health=True,
        mig_profiles=[MigProfile(name="1g.5gb")],
    )
    assert encode_json([full]) == (
        '[{"id":"i","index":1,"count":2,"devmem":3,"devcore":4,"type":"t","numa":-5,"mode":"mig",'
        '"migProfiles":[{"name":"1g.5gb","memoryMB":0,"core":0,"sliceCount":0,"placements":null}],'
        '"health":true}]'
    )


def test_no_devices_encode_to_an_empty_array() -> None:
    assert encode_json([]) == "[]"


def test_devicevendor_and_custominfo_are_never_written() -> None:
    device = DeviceInfo(id="x", devicevendor="NVIDIA", custominfo={"a": 1})
    assert encode_json([device]) == '[{"id":"x"}]'


def test_integer_extremes_are_written_in_full() -> None:
    device = DeviceInfo(index=2**64 - 1, count=-(2**31), numa=-(2**63))
    assert encode_json([device]) == f'[{{"index":{2**64 - 1},"count":{-(2**31)},"numa":{-(2**63)}}}]'


def test_encoder_refuses_something_that_is_not_a_device() -> None:
    with pytest.raises(EncodeError, match="device 0"):
        encode_json([{"id": "x"}])  # type: ignore[list-item]


# ---- encoder: Go's string escaping ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "wire"),
    [
        ("<a&b>", '"\\u003ca\\u0026b\\u003e"'),
        ("\u2028\u2029", '"\\u2028\\u2029"'),
        ('q"b\\s/', '"q\\"b\\\\s/"'),
        ("\n\r\t", '"\\n\\r\\t"'),
        ("\b\f", '"\\b\\f"'),  # Go 1.22+ (HAMi v2.10 builds with Go 1.26) writes these short
        ("\x00\x01\x1f", '"\\u0000\\u0001\\u001f"'),
        ("\x7f", '"\x7f"'),
        ("é😀\ufffd", '"é😀\ufffd"'),  # non-ASCII stays raw UTF-8, U+FFFD included
    ],
)
def test_strings_are_escaped_as_go_does(text: str, wire: str) -> None:
    assert encode_json([DeviceInfo(id=text)]) == f'[{{"id":{wire}}}]'


def test_invalid_utf8_bytes_are_written_as_replacement_escapes() -> None:
    # A value read with errors="surrogateescape" carries each invalid byte as U+DC80..U+DCFF.
    raw = b"a\xffb\xe2\x82".decode("utf-8", "surrogateescape")
    assert encode_json([DeviceInfo(id=raw)]) == '[{"id":"a\\ufffdb\\ufffd\\ufffd"}]'


def test_mig_profile_writes_every_key_and_null_placements() -> None:
    assert encode_mig_profile(
        MigProfile(
            name="1g.5gb", memory_mb=4864, core=15, slice_count=1, placements=[MigPlacement(start=6, size=1)]
        )
    ) == ('{"name":"1g.5gb","memoryMB":4864,"core":15,"sliceCount":1,"placements":[{"start":6,"size":1}]}')
    assert encode_mig_profile(MigProfile()) == (
        '{"name":"","memoryMB":0,"core":0,"sliceCount":0,"placements":null}'
    )
    assert encode_mig_profile(MigProfile(placements=[])).endswith('"placements":[]}')


# ---- decoder: top level ------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", ["null", " null\n", "[]", "\t[ ]\r\n"])
def test_null_and_empty_array_are_no_devices(value: str) -> None:
    assert decode_json(value) == []


def test_surrounding_whitespace_and_a_trailing_newline_are_accepted() -> None:
    assert decode_json(f" \n{A10_WIRE}\n") == [A10]


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        ("", "json_eof"),
        ("  ", "json_eof"),
        ("[", "json_eof"),
        ('[{"id":"x"', "json_eof"),
        ("[1.", "json_syntax"),  # Go reads a blank after a cut literal or number: a syntax error
        ("[tru", "json_syntax"),
        ('["a\\', "json_syntax"),  # cut inside an escape
        ('["a\\\\', "json_eof"),
        ('"abc', "json_eof"),
        ("not-json", "json_syntax"),
        (":", "json_syntax"),
        ("[] trailing", "json_syntax"),
        ("[][]", "json_syntax"),
        ("[]]", "json_syntax"),
        ("[01]", "json_syntax"),
        ("[1.]", "json_syntax"),
        ("[-]", "json_syntax"),
        ("[+1]", "json_syntax"),
        ("[.5]", "json_syntax"),
        ("[NaN]", "json_syntax"),
        ("[Infinity]", "json_syntax"),
        ("[-Infinity]", "json_syntax"),
        ('[{"id":"x",}]', "json_syntax"),
        ("[1,]", "json_syntax"),
        ("[{'id':'x'}]", "json_syntax"),
        ('["a\tb"]', "json_syntax"),  # a raw control character inside a string
        ('["\\x"]', "json_syntax"),
        ('["\\u12"]', "json_syntax"),
        ("\ufeff[]", "json_syntax"),
        ('{"id":"x"}', "json_type"),
        ('"[]"', "json_type"),
        ("1", "json_type"),
        ("true", "json_type"),
    ],
)
def test_what_is_not_an_array_of_devices(value: str, kind: str) -> None:
    assert kind_of(value) == kind


def test_a_syntax_error_names_its_character_offset() -> None:
    # what is wrong and where, not Go's wording
    with pytest.raises(JsonDecodeError, match=r"^[^\n]*offset 11: [^\n]*found 'x'"):
        decode_json('[{"id":"a"}x]')


def test_syntax_is_checked_before_types_as_go_does() -> None:
    # A type error early in the text does not hide a syntax error later in it.
    assert kind_of('[{"count":"4"}] x') == "json_syntax"


def test_nesting_up_to_gos_limit_is_accepted_and_deeper_is_a_syntax_error() -> None:
    deep = '[{"custominfo":{"a":' + "[" * (MAX_DEPTH - 3) + "]" * (MAX_DEPTH - 3) + "}}]"
    (device,) = decode_json(deep)
    assert device.custominfo is not None
    too_deep = '[{"custominfo":{"a":' + "[" * (MAX_DEPTH - 2) + "]" * (MAX_DEPTH - 2) + "}}]"
    with pytest.raises(JsonDecodeError, match="exceeded max depth") as caught:
        decode_json(too_deep)
    assert caught.value.kind == "json_syntax"


# ---- decoder: null elements (beyond HAMi) -----------------------------------------------------------------


def test_a_null_device_is_a_decode_error() -> None:
    # Beyond HAMi (spec 3.2): HAMi decodes [null] to a nil pointer and its scheduler crashes on it.
    with pytest.raises(JsonDecodeError, match=r"\[1\]: a device is null") as caught:
        decode_json(f'[{{"id":"a"}},null,{A10_WIRE[1:-1]}]')
    assert caught.value.kind == "null_element"


def test_a_type_error_is_reported_before_a_null_device() -> None:
    # HAMi's decode fails on the type error before any caller touches the nil element.
    assert kind_of('[null,{"count":"x"}]') == "json_type"


# ---- decoder: missing, unknown and null keys --------------------------------------------------------------


def test_missing_keys_are_zero_values_and_missing_health_means_unhealthy() -> None:
    assert one('{"id":"GPU-0"}'.join("[]")) == DeviceInfo(id="GPU-0", health=False)
    assert one("[{}]") == DeviceInfo()


def test_unknown_keys_are_ignored_whatever_they_hold() -> None:
    value = '[{"id":"a","devicepairscore":{"x":[1,{"y":null}]},"instanceCount":"?","unknown":1e999}]'
    assert one(value) == DeviceInfo(id="a")


def test_null_leaves_a_zero_value() -> None:
    value = '[{"id":null,"count":null,"health":null,"migProfiles":null,"custominfo":null,"index":null}]'
    assert one(value) == DeviceInfo()


def test_null_after_a_value_keeps_a_scalar_but_resets_a_list_or_map() -> None:
    # Go ignores null for a number, string or bool, and sets a slice or map to nil.
    value = (
        '[{"count":5,"count":null,"id":"x","id":null,"health":true,"health":null,'
        '"migProfiles":[{"name":"a"}],"migProfiles":null,"custominfo":{"a":1},"custominfo":null}]'
    )
    assert one(value) == DeviceInfo(count=5, id="x", health=True)


# ---- decoder: key matching --------------------------------------------------------------------------------


def test_keys_match_case_insensitively() -> None:
    value = (
        '[{"ID":"a","Count":2,"DEVMEM":3,"devCore":4,"TYPE":"t","Numa":-1,"MODE":"m","Health":true,'
        '"INDEX":9}]'
    )
    assert one(value) == DeviceInfo(
        id="a", count=2, devmem=3, devcore=4, type="t", numa=-1, mode="m", health=True, index=9
    )


def test_unicode_simple_folding_matches_kelvin_sign_and_long_s() -> None:
    # U+212A KELVIN SIGN folds to k, U+017F LATIN SMALL LETTER LONG S folds to s.
    assert one('[{"cuſtominfo":{"a":"b"},"\u212aey":1,"healtH":true}]') == DeviceInfo(
        custominfo={"a": "b"}, health=True
    )
    profiles = one('[{"ſliceCount":1,"migProfileſ":[{"ſliceCount":2}]}]').mig_profiles
    assert profiles == (MigProfile(slice_count=2),)


@pytest.mark.parametrize("key", ["ıd", "İD", "i\u0307d", "id ", "i-d", "ｉｄ"])
def test_other_look_alike_keys_do_not_match(key: str) -> None:
    assert one(f'[{{"{key}":"x"}}]') == DeviceInfo()


def test_escaped_keys_are_unescaped_before_matching() -> None:
    assert one('[{"\\u0069d":"x","co\\u0055nt":3}]') == DeviceInfo(id="x", count=3)


@pytest.mark.parametrize(
    ("value", "expected"),
    [('[{"ID":"A","id":"B"}]', "B"), ('[{"id":"A","ID":"B"}]', "B"), ('[{"id":"A","Id":"B","iD":"C"}]', "C")],
)
def test_the_last_of_several_matching_keys_wins(value: str, expected: str) -> None:
    assert one(value).id == expected


def test_a_repeated_list_key_decodes_into_the_same_go_slice() -> None:
    # Go reuses the elements a slice already has (it does not zero them), and keeps ones past the length.
    value = (
        '[{"migProfiles":[{"name":"a","core":5},{"name":"b","core":6},{"name":"c","core":7}],'
        '"migProfiles":[{"name":"x"}],'
        '"migProfiles":[{"memoryMB":1},{"sliceCount":3}]}]'
    )
    assert one(value).mig_profiles == (
        MigProfile(name="x", core=5, memory_mb=1),
        MigProfile(name="b", core=6, slice_count=3),
    )
    # An empty array is a fresh empty slice: nothing of the old one comes back.
    value = '[{"migProfiles":[{"name":"a"}],"migProfiles":[],"migProfiles":[{}]}]'
    assert one(value).mig_profiles == (MigProfile(),)


def test_a_repeated_custominfo_adds_to_the_same_map() -> None:
    assert one('[{"custominfo":{"a":1,"b":2},"custominfo":{"b":3}}]').custominfo == {"a": 1.0, "b": 3.0}


# ---- decoder: numbers --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("field", "literal", "value"),
    [
        ("count", "2147483647", 2**31 - 1),
        ("count", "-2147483648", -(2**31)),
        ("count", "-0", 0),
        ("devmem", "-1", -1),
        ("numa", "-9223372036854775808", -(2**63)),
        ("index", "18446744073709551615", 2**64 - 1),
    ],
)
def test_integers_in_range_are_accepted(field: str, literal: str, value: int) -> None:
    assert getattr(one(f'[{{"{field}":{literal}}}]'), field) == value


@pytest.mark.parametrize(
    ("field", "literal"),
    [
        ("count", "2147483648"),
        ("devcore", "-2147483649"),
        ("numa", "9223372036854775808"),
        ("index", "18446744073709551616"),
        ("index", "-1"),
        ("index", "-0"),  # Go's ParseUint refuses any sign
        ("count", "1.0"),
        ("count", "1e2"),
        ("count", "1E+0"),
        ("count", "1.5"),
        ("count", "9" * 400),
        ("count", '"4"'),
        ("count", "true"),
        ("count", "[]"),
        ("count", "{}"),
    ],
)
def test_integer_fields_refuse_anything_but_an_integer_literal_in_range(field: str, literal: str) -> None:
    with pytest.raises(JsonDecodeError, match=rf"\[0\]\.{field}: ") as caught:
        decode_json(f'[{{"{field}":{literal}}}]')
    assert caught.value.kind == "json_type"


@pytest.mark.parametrize(
    ("key", "literal"),
    [("memoryMB", "2147483648"), ("sliceCount", "-1"), ("sliceCount", "4294967296"), ("core", "0.5")],
)
def test_mig_profile_integer_ranges(key: str, literal: str) -> None:
    with pytest.raises(JsonDecodeError, match=rf"\[0\]\.migProfiles\[1\]\.{key}"):
        decode_json(f'[{{"migProfiles":[{{}},{{"{key}":{literal}}}]}}]')


def test_placement_ranges() -> None:
    value = '[{"migProfiles":[{"placements":[{"start":4294967295,"size":0}]}]}]'
    assert one(value).mig_profiles[0].placements == (MigPlacement(start=2**32 - 1, size=0),)
    with pytest.raises(JsonDecodeError, match=r"placements\[0\]\.start"):
        decode_json('[{"migProfiles":[{"placements":[{"start":4294967296}]}]}]')


# ---- decoder: type mismatches ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pair",
    [
        '"health":"true"',
        '"health":1',
        '"id":123',
        '"type":true',
        '"mode":[]',
        '"id":{}',
        '"migProfiles":{}',
        '"migProfiles":"x"',
        '"migProfiles":[1]',
        '"migProfiles":[{"name":1}]',
        '"migProfiles":[{"placements":{}}]',
        '"migProfiles":[{"placements":[[]]}]',
        '"custominfo":[]',
        '"custominfo":"x"',
        '"custominfo":1',
        '"devicevendor":1',
        '"migtemplate":1',
        '"migtemplate":[{}]',
        '"migtemplate":[[{"Name":1}]]',
        '"migtemplate":[[{"core":2147483648}]]',
        '"migtemplate":[[1]]',
    ],
)
def test_type_mismatches_are_errors(pair: str) -> None:
    assert kind_of(f"[{{{pair}}}]") == "json_type"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ('[{"count":"4"}]', '[0].count: cannot decode a string "4" into Go int32'),
        ('[{"health":"yes"}]', '[0].health: cannot decode a string "yes" into Go bool'),
        ('[{"count":true}]', "[0].count: cannot decode a bool true into Go int32"),
        ('{"devices":[]}', 'top level: cannot decode an object {"devices":[]} into Go []*DeviceInfo'),
        ('[{"id":["a", "b"]}]', '[0].id: cannot decode an array ["a","b"] into Go string'),
        ('[{"mode":"a\\nb\\u2028"}, {"type":1}]', "[1].type: cannot decode number 1 into Go string"),
        ('[{"devmem":"x\\u2028\\n"}]', '[0].devmem: cannot decode a string "x\\u2028\\n" into Go int32'),
    ],
)
def test_a_type_error_shows_the_offending_value_on_one_line(value: str, message: str) -> None:
    with pytest.raises(JsonDecodeError) as caught:
        decode_json(value)
    assert str(caught.value) == message


def test_a_huge_mistyped_value_is_shown_shortened() -> None:
    with pytest.raises(JsonDecodeError) as caught:
        decode_json('[{"id":[' + ",".join(['"xxxxxxxx"'] * 20_000) + "]}]")
    text = str(caught.value)
    assert text.startswith('[0].id: cannot decode an array ["xxxxxxxx","xxxxxxxx",') and len(text) < 150


@pytest.mark.parametrize(
    ("key", "path"),
    [
        ("gpu_model", "[0].custominfo.gpu_model"),
        ("gpu.model", '[0].custominfo["gpu.model"]'),
        ("a\nb\u2028" + "k" * 3000, '[0].custominfo["a\\nb\\u2028kkkkkkkkkkkkk ... kkkkkkkkkkkkkkkkk"]'),
    ],
)
def test_a_custominfo_key_in_an_error_is_quoted_and_shortened(key: str, path: str) -> None:
    value = json.dumps([{"custominfo": {key: 1}}]).replace(": 1}", ": 1e400}")
    with pytest.raises(JsonDecodeError) as caught:
        decode_json(value)
    assert str(caught.value) == f"{path}: number '1e400' is out of range for Go float64"


def test_deprecated_migtemplate_is_checked_and_dropped() -> None:
    value = '[{"id":"a","migtemplate":[[{"Name":"1g","core":1,"MEMORY":2,"count":3,"x":[]}],null,[]]}]'
    assert one(value) == DeviceInfo(id="a")


# ---- decoder: strings and custominfo --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("escaped", "text"),
    [
        ("\\ud800", "\ufffd"),
        ("\\udc00", "\ufffd"),
        ("\\ud800x", "\ufffdx"),
        ("\\ud800\\u0041", "\ufffdA"),
        ("\\ud800\\ud800\\udc00", "\ufffd\U00010000"),
        ("\\ud83d\\ude00", "😀"),
        ('\\u00e9\\/\\b\\f\\n\\r\\t\\"\\\\', 'é/\b\f\n\r\t"\\'),
        ("\\u0000", "\x00"),
    ],
)
def test_string_escapes_decode_as_go_does(escaped: str, text: str) -> None:
    assert one(f'[{{"id":"{escaped}"}}]').id == text


def test_invalid_utf8_becomes_one_replacement_character_per_byte() -> None:
    raw = b'[{"id":"a\xffb\xe2\x82c\xed\xa0\x80"}]'.decode("utf-8", "surrogateescape")
    assert one(raw).id == "a\ufffdb\ufffd\ufffdc\ufffd\ufffd\ufffd"


def test_invalid_utf8_outside_a_string_is_a_syntax_error() -> None:
    raw = b"[\xff]".decode("utf-8", "surrogateescape")
    assert kind_of(raw) == "json_syntax"


def test_custominfo_holds_plain_values_with_numbers_as_float64() -> None:
    value = (
        '[{"custominfo":{"n":1,"f":-2.5e1,"big":123456789012345678901,"s":"x","b":false,"z":null,'
        '"l":[1,{"k":[]}],"d":{"x":1,"x":2}}}]'
    )
    assert one(value).custominfo == {
        "n": 1.0,
        "f": -25.0,
        "big": 1.2345678901234568e20,
        "s": "x",
        "b": False,
        "z": None,
        "l": [1.0, {"k": []}],
        "d": {"x": 2.0},
    }


def test_a_custominfo_number_beyond_float64_is_a_type_error() -> None:
    assert kind_of('[{"custominfo":{"a":1e400}}]') == "json_type"
    assert one('[{"custominfo":{"a":1e-400}}]').custominfo == {"a": 0.0}


def test_devicevendor_is_read_as_sent() -> None:
    # The scheduler overwrites it with the vendor key; the codec only reports the wire.
    assert one('[{"devicevendor":"amd"}]').devicevendor == "amd"


# ---- decoder: errors -----------------------------------------------------------------------------------


def test_type_errors_name_the_path() -> None:
    expected = r"^\[2\]\.count: number '2147483648' is out of range for Go int32$"
    with pytest.raises(JsonDecodeError, match=expected):
        decode_json('[{},{},{"count":2147483648}]')


def test_decode_refuses_a_non_str() -> None:
    with pytest.raises(DecodeError, match="must be a str"):
        decode_json(None)  # type: ignore[arg-type]
