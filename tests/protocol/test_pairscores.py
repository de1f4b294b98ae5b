"""Pair scores decode as Go's json.Unmarshal into HAMi's DevicePairScores, and match devices by uuid."""

from __future__ import annotations

import pytest

from hami_core.protocol.errors import DecodeError
from hami_core.protocol.model import DeviceInfo
from hami_core.protocol.pairscores import PairScore, decode_pair_scores, scores_for


def test_hamis_format_decodes() -> None:
    value = '[{"uuid":"GPU-0","score":{"GPU-1":80,"GPU-2":-3}},{"uuid":"GPU-1","score":{"GPU-0":80}}]'
    assert decode_pair_scores(value) == (
        PairScore("GPU-0", {"GPU-1": 80, "GPU-2": -3}),
        PairScore("GPU-1", {"GPU-0": 80}),
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("null", ()),
        ("[]", ()),
        ("[null]", (PairScore(),)),
        ('[{"UUID":"a","Score":{"b":1}}]', (PairScore("a", {"b": 1}),)),  # Go matches names in any case
        ('[{"uuid":"a","uuid":"b"}]', (PairScore("b"),)),  # the last wins
        ('[{"uuid":"a","uuid":null}]', (PairScore("a"),)),  # but null leaves it
        ('[{"uuid":"a","\u017fcore":{"b":1}}]', (PairScore("a", {"b": 1}),)),  # LONG S folds to s
        ('[{"uu\u0131d":"a"}]', (PairScore(),)),  # DOTLESS I does not fold to i
        ('[{"score":{"b":1,"c":2},"Score":{"c":3}}]', (PairScore("", {"b": 1, "c": 3}),)),  # added to
        ('[{"score":{"b":1},"score":null,"score":{"c":2}}]', (PairScore("", {"c": 2}),)),  # null resets
        ('[{"uuid":"\\ud800"}]', (PairScore("\ufffd"),)),  # a lone surrogate escape is U+FFFD to Go
        ('[{"x":' + "[" * 2000 + "]" * 2000 + "}]", (PairScore(),)),  # Go nests up to 10000 levels
        ('[{"uuid":"a","other":[1,2.5]}]', (PairScore("a"),)),  # unknown fields ignored
        ('[{"uuid":null,"score":null}]', (PairScore(),)),
        ('[{"uuid":"a","score":{"b":null}}]', (PairScore("a", {"b": 0}),)),
        ('[{"uuid":"a","score":{"b":9223372036854775807}}]', (PairScore("a", {"b": 2**63 - 1}),)),
    ],
)
def test_what_go_accepts_is_accepted(value: str, expected: tuple[PairScore, ...]) -> None:
    assert decode_pair_scores(value) == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("", "unexpected end of JSON input"),
        ('{"uuid":"a"}', "top level: cannot decode an object"),
        ("[1]", "[0]: cannot decode number 1 into Go DevicePairScore"),
        ('[{"uuid":5}]', "[0].uuid: cannot decode number 5 into Go string"),
        ('[{"uuid":5,"uuid":"a"}]', "[0].uuid: cannot decode number 5"),  # even when a later one fits
        ('[{"uuid":"a","score":[]}]', "[0].score: cannot decode an array [] into Go map[string]int"),
        ('[{"uuid":"a","score":{"b":"1"}}]', '[0].score.b: cannot decode a string "1" into Go int64'),
        ('[{"uuid":"a","score":{"b":true}}]', "[0].score.b: cannot decode a bool true"),
        ('[{"uuid":"a","score":{"b":1.0}}]', "[0].score.b: number '1.0' is not an integer"),
        ('[{"uuid":"a","score":{"b\\nc":1e2}}]', "[0].score[\"b\\nc\"]: number '1e2' is not an integer"),
        ('[{"uuid":"a","score":{"b":NaN}}]', "invalid literal NaN"),
        ('[{"uuid":2.5}]', "[0].uuid: cannot decode number 2.5"),
        ('[{"uuid":"a","score":{"b":9223372036854775808}}]', "is out of range for Go int64"),
        ("[", "unexpected end of JSON input"),
        ("[] x", "extra data"),
    ],
)
def test_what_go_refuses_is_a_one_line_decode_error(value: str, expected: str) -> None:
    with pytest.raises(DecodeError) as caught:
        decode_pair_scores(value)
    assert expected in str(caught.value) and "\n" not in str(caught.value)


def test_each_device_takes_the_first_entry_with_its_uuid() -> None:
    devices = [DeviceInfo(id="GPU-0"), DeviceInfo(id="GPU-1"), DeviceInfo(id="GPU-9")]
    entries = (PairScore("GPU-1", {"x": 1}), PairScore("GPU-0", {"y": 2}), PairScore("GPU-1", {"z": 3}))
    assert scores_for(devices, entries) == ({"y": 2}, {"x": 1}, None)
