"""HAMi's own unit-test cases for the codecs (shared/vectors), run against our codecs.

The file is read at test time; a missing file fails the test run (it is never skipped).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hami_core.protocol.convert import device_from_dict, device_to_dict
from hami_core.protocol.errors import DecodeError
from hami_core.protocol.gojson import JsonDecodeError, decode_json, encode_json
from hami_core.protocol.legacy import decode_legacy, encode_legacy
from hami_core.protocol.model import DeviceInfo

VECTORS = Path(__file__).resolve().parents[2] / ".." / "shared" / "vectors" / "hami-unit-test-cases.json"

CODEC_FUNCTIONS = {
    "device.DecodeNodeDevices",
    "device.UnMarshalNodeDevices",
    "device.EncodeNodeDevices",
    "device.MarshalNodeDevices",
    "device.EncodeNodeDevices+DecodeNodeDevices",
    "json.Marshal(MigProfile)",
}


def _load() -> list[dict[str, Any]]:
    if not VECTORS.is_file():
        raise FileNotFoundError(f"conformance vectors missing: {VECTORS} (shared/ must sit beside the clone)")
    cases: list[dict[str, Any]] = json.loads(VECTORS.read_text(encoding="utf-8"))
    return [case for case in cases if case["function"] in CODEC_FUNCTIONS]


CASES = _load()


def _by(function: str) -> list[Any]:
    chosen = [case for case in CASES if case["function"] == function]
    return [pytest.param(case, id=case["source"].split(":", 1)[1]) for case in chosen]


def _devices(objs: list[dict[str, Any]] | None) -> list[DeviceInfo]:
    return [device_from_dict(obj) for obj in objs or []]


def test_every_codec_function_has_cases() -> None:
    counts = {function: len(_by(function)) for function in CODEC_FUNCTIONS}
    assert all(counts.values()), counts
    assert counts["device.DecodeNodeDevices"] == 18


@pytest.mark.parametrize("case", _by("device.DecodeNodeDevices"))
def test_legacy_decode(case: dict[str, Any]) -> None:
    expect = case["expect"]
    if expect["error"] is None:
        assert decode_legacy(case["input"]) == _devices(expect["devices"])
    else:
        with pytest.raises(DecodeError):
            decode_legacy(case["input"])


@pytest.mark.parametrize("case", _by("device.UnMarshalNodeDevices"))
def test_json_decode(case: dict[str, Any]) -> None:
    expect = case["expect"]
    if expect["error"] is None:
        assert decode_json(case["input"]) == _devices(expect["devices"])
    else:
        with pytest.raises(JsonDecodeError) as caught:
            decode_json(case["input"])
        if "error_kind" in case:
            assert caught.value.kind == case["error_kind"]


@pytest.mark.parametrize("case", _by("device.EncodeNodeDevices"))
def test_legacy_encode(case: dict[str, Any]) -> None:
    assert encode_legacy(_devices(case["input"])) == case["expect"]


@pytest.mark.parametrize("case", _by("device.MarshalNodeDevices"))
def test_json_encode_is_byte_exact(case: dict[str, Any]) -> None:
    devices = _devices(case["input"])
    encoded = encode_json(devices)
    assert encoded == case["expect"]["exact"]
    if "test_want_semantic" in case["expect"]:  # what HAMi's test compares after unmarshalling both sides
        assert decode_json(encoded) == decode_json(case["expect"]["test_want_semantic"]) == devices


@pytest.mark.parametrize("case", _by("device.EncodeNodeDevices+DecodeNodeDevices"))
def test_legacy_round_trip(case: dict[str, Any]) -> None:
    devices = _devices(case["input"])
    encoded = encode_legacy(devices)
    assert encoded == case["expect"]["encoded"]
    assert decode_legacy(encoded) == _devices(case["expect"]["decoded"]) == devices


@pytest.mark.parametrize("case", _by("json.Marshal(MigProfile)"))
def test_mig_profile_wire_format(case: dict[str, Any]) -> None:
    # InstanceCount is Go-only (tagged "-"): it never reaches the wire, and our model has no such field.
    wire = {key: value for key, value in case["input"].items() if "go-only" not in key}
    device = device_from_dict({"id": "GPU-0", "migProfiles": [wire]})
    assert encode_json([device]) == f'[{{"id":"GPU-0","migProfiles":[{case["expect"]}]}}]'
    assert decode_json(encode_json([device])) == [device]
    assert device_to_dict(device)["migProfiles"] == [{**wire, "placements": wire["placements"]}]


def _json_error_values() -> list[Any]:
    """Register values from HAMi's vendor tests whose JSON decode fails, with Go's error kind."""
    cases = json.loads(VECTORS.read_text(encoding="utf-8"))
    chosen = []
    for case in cases:
        if "error_kind" not in case or "PairScores" in case["source"]:  # that one fails on the score
            continue
        for key, value in case["input"]["annotations"].items():
            if not key.endswith("-score"):
                chosen.append(pytest.param(value, case["error_kind"], id=case["source"].split(":", 1)[1]))
    return chosen


@pytest.mark.parametrize(("value", "kind"), _json_error_values())
def test_json_error_kinds_from_vendor_cases(value: str, kind: str) -> None:
    with pytest.raises(JsonDecodeError) as caught:
        decode_json(value)
    assert caught.value.kind == kind
