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
        ("", "not JSON"),
        ('{"uuid":"a"}', "expected a JSON array"),
        ("[1]", "entry 0: expected an object"),
        ('[{"uuid":5}]', "entry 0: uuid must be a string"),
        ('[{"uuid":"a","score":[]}]', "entry 0: score must be an object of integers"),
        ('[{"uuid":"a","score":{"b":"1"}}]', "entry 0: score 'b' must be an integer"),
        ('[{"uuid":"a","score":{"b":true}}]', "entry 0: score 'b' must be an integer"),
        ('[{"uuid":"a","score":{"b":1.0}}]', "entry 0: score 'b' 1.0 is not an integer"),
        ('[{"uuid":"a","score":{"b":1e2}}]', "entry 0: score 'b' 1e2 is not an integer"),
        ('[{"uuid":"a","score":{"b":NaN}}]', "not JSON: NaN is not JSON"),
        ('[{"uuid":2.5}]', "entry 0: uuid must be a string"),
        ('[{"uuid":"a","score":{"b":9223372036854775808}}]', "out of range for Go's int"),
        ("[", "not JSON"),
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
