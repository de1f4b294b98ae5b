"""The legacy colon encoding, rule by rule (spec 3.1), with Go strconv's exact behaviour."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from hami_core.protocol import legacy
from hami_core.protocol.errors import DecodeError, EncodeError
from hami_core.protocol.legacy import decode_legacy, encode_legacy
from hami_core.protocol.model import DeviceInfo, MigProfile

V100 = "GPU-0,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,true"


def record(**fields: str) -> str:
    """A 9-field record with one or more fields replaced (names: id, count, devmem, devcore, type, numa,
    health, index, mode)."""
    values = {
        "id": "GPU-0",
        "count": "10",
        "devmem": "7680",
        "devcore": "100",
        "type": "T4",
        "numa": "0",
        "health": "true",
        "index": "1",
        "mode": "hami-core",
    }
    values.update(fields)
    return ",".join(values.values()) + ":"


# ---- the seed note's examples -------------------------------------------------------------------------


def test_seed_nvidia_value_is_two_v100s() -> None:
    value = (
        "GPU-00552014-5c87-89ac-b1a6-7b53aa24b0ec,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,true:"
        "GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,true:"
    )
    devices = decode_legacy(value)
    assert [d.id for d in devices] == [
        "GPU-00552014-5c87-89ac-b1a6-7b53aa24b0ec",
        "GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448",
    ]
    assert {(d.type, d.count, d.devmem, d.devcore, d.numa, d.health, d.index, d.mode) for d in devices} == {
        ("NVIDIA-Tesla V100-PCIE-32GB", 10, 32768, 100, 0, True, 0, "hami-core")
    }


def test_seed_mlu_value_is_rejected_naming_its_truncated_second_record() -> None:
    value = (
        "MLU-45013011-2257-0000-0000-000000000000,10,23308,0,MLU-MLU370-X4,0,false:"
        "MLU-54043011-2257-0000-0000-000000000000,10,23308,0,"
    )
    with pytest.raises(DecodeError, match=r"segment 2 .*field count 5.*MLU-54043011") as caught:
        decode_legacy(value)
    assert "\n" not in str(caught.value)


# ---- decode rule 1: at least one ':' ----------------------------------------------------------------------


@pytest.mark.parametrize("value", ["", "a", ",", "[]", V100, V100 + "\n"])
def test_a_value_without_separator_is_rejected(value: str) -> None:
    with pytest.raises(DecodeError, match="separator"):
        decode_legacy(value)


# ---- rule 2: empty segments are skipped -------------------------------------------------------------------


@pytest.mark.parametrize("value", [":", "::", ":::::"])
def test_separators_only_decode_to_no_devices(value: str) -> None:
    assert decode_legacy(value) == []


def test_leading_doubled_and_trailing_separators_are_skipped() -> None:
    assert decode_legacy(f"::{V100}::{V100}:") == decode_legacy(f"{V100}:{V100}:")
    assert len(decode_legacy(f"::{V100}::{V100}:")) == 2


def test_the_last_record_needs_no_trailing_separator_once_one_exists() -> None:
    assert decode_legacy(f"{V100}:{V100}") == decode_legacy(f"{V100}:{V100}:")


# ---- rule 3: a segment without ',' ------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "segment"), [("garbage:", 1), (f"{V100}:\n", 2), (f"::x:{V100}:", 3)])
def test_a_segment_without_comma_is_malformed(value: str, segment: int) -> None:
    with pytest.raises(DecodeError, match=rf"segment {segment} .*malformed"):
        decode_legacy(value)


# ---- rule 4: exactly 7 or 9 fields ------------------------------------------------------------------------


@pytest.mark.parametrize("count", [2, 5, 6, 8, 10, 11])
def test_field_counts_other_than_7_or_9_are_rejected(count: int) -> None:
    value = ",".join(["1"] * count) + ":"
    with pytest.raises(DecodeError, match=f"field count {count}"):
        decode_legacy(value)


def test_a_comma_in_the_type_makes_ten_fields() -> None:
    with pytest.raises(DecodeError, match="field count 10"):
        decode_legacy(record(type="A,B"))


# ---- rule 5: field order and defaults ---------------------------------------------------------------------


def test_seven_fields_mean_index_0_and_mode_hami_core() -> None:
    (device,) = decode_legacy("id-1,3,1024,50,MLU370,-1,false:")
    assert device == DeviceInfo(
        id="id-1",
        count=3,
        devmem=1024,
        devcore=50,
        type="MLU370",
        numa=-1,
        health=False,
        index=0,
        mode="hami-core",
    )


def test_nine_fields_take_index_and_mode_verbatim_even_empty() -> None:
    (device,) = decode_legacy(record(index="7", mode=""))
    assert (device.index, device.mode) == (7, "")
    (device,) = decode_legacy(record(mode=" mig "))
    assert device.mode == " mig "


def test_id_and_type_are_verbatim_not_trimmed_and_may_be_empty() -> None:
    (device,) = decode_legacy(record(id=" GPU 0 ", type=""))
    assert (device.id, device.type) == (" GPU 0 ", "")


@pytest.mark.parametrize(
    ("fields", "reported"),
    [
        # count is checked before devmem, devmem before devcore, devcore before health ...
        ({"count": "x", "devmem": "x"}, "count"),
        ({"devmem": "x", "devcore": "x"}, "devmem"),
        ({"devcore": "x", "health": "x"}, "devcore"),
        # ... and health before numa (field 7 before field 6), numa before index.
        ({"health": "x", "numa": "x"}, "health"),
        ({"numa": "x", "index": "x"}, "numa"),
        ({"index": "x"}, "index"),
    ],
)
def test_fields_are_checked_in_hamis_order(fields: dict[str, str], reported: str) -> None:
    with pytest.raises(DecodeError, match=f"invalid {reported} field"):
        decode_legacy(record(**fields))


def test_a_negative_index_is_rejected() -> None:
    with pytest.raises(DecodeError, match="index field must not be negative"):
        decode_legacy(record(index="-1"))


def test_any_failure_discards_the_whole_value() -> None:
    with pytest.raises(DecodeError, match="segment 2"):
        decode_legacy(f"{V100}:{record(count='x')}")


# ---- rule 6: integers as Go's strconv parses them -------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("007", 7),
        ("+5", 5),
        ("-0", 0),
        ("-2147483648", -(2**31)),
        ("2147483647", 2**31 - 1),
        ("-12", -12),
        ("0" * 40 + "1", 1),
    ],
)
def test_int32_fields_accept_what_parseint_accepts(text: str, number: int) -> None:
    (device,) = decode_legacy(record(count=text, devmem=text, devcore=text))
    assert (device.count, device.devmem, device.devcore) == (number, number, number)


@pytest.mark.parametrize(
    "text", ["", " 1", "1 ", "0x1", "1_000", "١", "1.0", "1e2", "+", "-", "--1", "+-1", "ten", "1\n"]
)
def test_integer_syntax_errors(text: str) -> None:
    with pytest.raises(DecodeError, match=r"invalid count field .*not a base-10 integer"):
        decode_legacy(record(count=text))


@pytest.mark.parametrize("text", ["2147483648", "-2147483649", "9" * 30, "9" * 5000])
def test_int32_out_of_range_is_an_error_not_a_clamp(text: str) -> None:
    with pytest.raises(DecodeError, match=r"invalid devmem field .*out of range for int32"):
        decode_legacy(record(devmem=text))


def test_numa_and_index_are_64_bit() -> None:
    (device,) = decode_legacy(record(numa=str(-(2**63)), index=str(2**63 - 1)))
    assert (device.numa, device.index) == (-(2**63), 2**63 - 1)
    with pytest.raises(DecodeError, match=r"numa field .*out of range for int64"):
        decode_legacy(record(numa=str(2**63)))
    with pytest.raises(DecodeError, match=r"index field .*out of range for int64"):
        decode_legacy(record(index=str(2**63)))


# ---- rule 7: booleans as Go's ParseBool -------------------------------------------------------------------


@pytest.mark.parametrize("text", ["1", "t", "T", "TRUE", "true", "True"])
def test_true_spellings(text: str) -> None:
    assert decode_legacy(record(health=text))[0].health is True


@pytest.mark.parametrize("text", ["0", "f", "F", "FALSE", "false", "False"])
def test_false_spellings(text: str) -> None:
    assert decode_legacy(record(health=text))[0].health is False


@pytest.mark.parametrize("text", ["tRUE", "yes", "no", " true", "true ", "", "2", "TrUe", "on"])
def test_other_booleans_are_rejected(text: str) -> None:
    with pytest.raises(DecodeError, match="invalid health field"):
        decode_legacy(record(health=text))


# ---- the reader of values as HAMi writes them, and the reading by record -------------------------------

_ASCII_TEXT = st.text(st.characters(max_codepoint=127, exclude_characters=",:"), max_size=6)
#: Records as HAMi writes them (mostly), and records of every other kind.
_PLAIN = {
    "health": st.sampled_from(["true", "false", "1", "F", "True"]),
    **{name: st.integers(0, 99999).map(str) for name in ("count", "devmem", "devcore", "numa", "index")},
    **{name: _ASCII_TEXT for name in ("id", "type", "mode")},
}
_ODD_INT = st.one_of(
    st.integers(-(2**64), 2**64).map(str),
    st.sampled_from(["007", "+5", "-0", " 1", "1_0", "", "١", "9" * 19, "0" * 18 + "1", "0" * 19]),
)
_ODD = {
    "health": st.sampled_from(["true", "t", "yes", ""]),
    **{name: _ODD_INT for name in ("count", "devmem", "devcore", "numa", "index")},
    **{name: st.text(st.characters(exclude_characters=",:"), max_size=3) for name in ("id", "type", "mode")},
}


def _records(fields: dict[str, st.SearchStrategy[str]]) -> st.SearchStrategy[str]:
    return st.fixed_dictionaries(fields).map(lambda texts: record(**texts)[:-1])


_SEGMENT = st.one_of(
    *[_records(_PLAIN)] * 3,
    _records({name: st.one_of(_PLAIN[name], _ODD[name]) for name in _PLAIN}),
    _records(_PLAIN).map(lambda text: text.rsplit(",", 2)[0]),  # 7 fields
    st.just(""),
)


def _by_record(value: str) -> list[DeviceInfo] | None:
    try:
        return [legacy._decode_record(segment) for segment in value.split(":") if segment]
    except ValueError:
        return None


@settings(max_examples=400, deadline=None)
@given(st.lists(_SEGMENT, min_size=1, max_size=4).map(lambda segments: ":".join(segments) + ":"))
@example(record(count="١"))
@example(record(count="1_0") + record())
@example(record(index=str(2**63)))
@example(record(index="0" * 19))
def test_a_value_decodes_as_its_records_read_one_by_one(value: str) -> None:
    """Whether the table-written reader takes a value or the reading by record does, the devices are the
    same, and a value is refused exactly when one of its records is."""
    try:
        decoded: list[DeviceInfo] | None = decode_legacy(value)
    except DecodeError:
        decoded = None
    assert decoded == _by_record(value)


def test_values_as_hami_writes_them_take_the_table_written_reader() -> None:
    devices = [
        DeviceInfo(id=f"GPU-{i}", index=i, count=10, devmem=32768, devcore=100, health=i % 2 == 0)
        for i in range(3)
    ]
    assert legacy._READ_PLAIN(encode_legacy(devices)) == devices
    for odd in (record(count="+5"), record(numa="-1"), record(index=str(2**63)), V100 + ":"):
        with pytest.raises(ValueError):
            legacy._READ_PLAIN(odd)


def test_the_reader_keeps_at_most_1024_integer_texts_and_none_it_refuses() -> None:
    kept = legacy._READ_PLAIN.__globals__["_DIGITS"]
    many = "".join(
        record(count=str(n), devmem=str(n + 1), devcore=str(n + 2)) for n in range(10**6, 10**6 + 900)
    )
    devices = decode_legacy(many)
    assert [d.count for d in devices] == list(range(10**6, 10**6 + 900))
    assert legacy._READ_PLAIN(many) == devices  # the reader of values as HAMi writes them took it
    assert len(kept) <= 1024 + 5  # cleared once full, then the record's own texts
    assert decode_legacy(many) == devices  # read again, partly from what was kept
    assert decode_legacy(record(count="+5"))[0].count == 5  # Go's reading, by record
    with pytest.raises(DecodeError, match="not a base-10 integer"):
        decode_legacy(record(count="٥"))
    assert "+5" not in kept and "٥" not in kept


# ---- encoder ---------------------------------------------------------------------------------------------


def test_encode_writes_nine_fields_and_a_separator_per_device() -> None:
    devices = [
        DeviceInfo(
            id="GPU-a",
            count=10,
            devmem=7680,
            devcore=100,
            type="NVIDIA-Tesla P4",
            numa=0,
            health=True,
            index=1,
            mode="hami-core",
        ),
        DeviceInfo(id="GPU-b", count=-1, devmem=0, devcore=-5, type="T", numa=-1, health=False, index=0),
    ]
    assert encode_legacy(devices) == (
        "GPU-a,10,7680,100,NVIDIA-Tesla P4,0,true,1,hami-core:GPU-b,-1,0,-5,T,-1,false,0,:"
    )


def test_encode_of_no_devices_is_the_empty_string() -> None:
    assert encode_legacy([]) == ""


def test_encode_drops_what_the_legacy_format_cannot_hold() -> None:
    device = DeviceInfo(
        id="g", mig_profiles=[MigProfile(name="1g")], custominfo={"a": 1}, devicevendor="NVIDIA"
    )
    assert encode_legacy([device]) == "g,0,0,0,,0,false,0,:"
    assert decode_legacy(encode_legacy([device])) == [DeviceInfo(id="g")]


@pytest.mark.parametrize("field", ["id", "type", "mode"])
@pytest.mark.parametrize("bad", [",", ":", "a,b", "x:y"])
def test_encode_refuses_separators_inside_a_field(field: str, bad: str) -> None:
    # Beyond HAMi (spec 3.1): HAMi writes these unescaped and corrupts the record.
    with pytest.raises(EncodeError, match=rf"device 1: {field} .* holds ',' or ':'"):
        encode_legacy([DeviceInfo(id="ok"), DeviceInfo(**{field: bad})])  # type: ignore[arg-type]


def test_encode_refuses_an_index_beyond_gos_signed_int() -> None:
    # HAMi would write 2**63 as a negative number that its own decoder then rejects.
    assert encode_legacy([DeviceInfo(index=2**63 - 1)]) == f",0,0,0,,0,false,{2**63 - 1},:"
    with pytest.raises(EncodeError, match="index"):
        encode_legacy([DeviceInfo(index=2**63)])


def test_encode_refuses_something_that_is_not_a_device() -> None:
    with pytest.raises(EncodeError, match="device 0: expected a DeviceInfo"):
        encode_legacy(["GPU-0"])  # type: ignore[list-item]


def test_decode_refuses_a_non_str() -> None:
    with pytest.raises(DecodeError, match="must be a str"):
        decode_legacy(b"a:")  # type: ignore[arg-type]
