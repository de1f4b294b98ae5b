"""The codec objects, reading either encoding (spec 3.4), and the dict conversion for tools."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

import hami_core
from hami_core.protocol.codecs import CODECS, JSON_CODEC, LEGACY_CODEC, Codec, decode_any
from hami_core.protocol.convert import DEVICE_KEYS, device_from_dict, device_to_dict
from hami_core.protocol.errors import DecodeError
from hami_core.protocol.gojson import JsonDecodeError
from hami_core.protocol.model import DeviceInfo, MigPlacement, MigProfile

GPU = DeviceInfo(id="GPU-0", count=10, devmem=1024, devcore=100, type="T4", mode="hami-core", health=True)


def test_codecs_satisfy_the_protocol_under_their_names() -> None:
    assert CODECS == {"json": JSON_CODEC, "legacy": LEGACY_CODEC}
    for name, codec in CODECS.items():
        assert isinstance(codec, Codec)
        assert codec.name == name
        assert codec.decode(codec.encode([GPU])) == [GPU]


def test_codec_objects_are_the_module_functions() -> None:
    assert JSON_CODEC.encode([GPU]) == hami_core.encode_json([GPU])
    assert LEGACY_CODEC.encode([GPU]) == hami_core.encode_legacy([GPU])
    with pytest.raises(JsonDecodeError):
        JSON_CODEC.decode("GPU-0,1,1,1,T,0,true:")


@pytest.mark.parametrize(
    ("value", "encoding"),
    [
        ("[]", "json"),
        ("  \n\t[{}]", "json"),
        ("null", "json"),
        (" null \r\n", "json"),
        ("[", "json"),  # still JSON, and malformed as such
        ("", "legacy"),
        (":", "legacy"),
        ("GPU-0,1,1,1,T,0,true:", "legacy"),
        ("nullx", "legacy"),
        ('{"id":"x"}', "legacy"),
        ("\u00a0[]", "legacy"),  # only JSON whitespace counts as blank
    ],
)
def test_decode_any_tells_the_encoding(value: str, encoding: str) -> None:
    def outcome(decode: Callable[[str], list[DeviceInfo]]) -> object:
        try:
            return decode(value)
        except DecodeError as exc:
            return type(exc), str(exc)

    chosen, other = (CODECS[name].decode for name in sorted(CODECS, key=lambda name: name != encoding))
    assert outcome(decode_any) == outcome(chosen) != outcome(other)


def test_decode_any_reads_both_encodings_of_the_same_devices() -> None:
    # Beyond HAMi (spec 3.4): an old NVIDIA plugin's legacy value stays readable after an upgrade.
    assert decode_any(hami_core.encode_legacy([GPU])) == decode_any(hami_core.encode_json([GPU])) == [GPU]
    assert decode_any("null") == decode_any(" [ ] ") == decode_any("::") == []


@pytest.mark.parametrize("value", ["nvidia-0,1,1,1,T,0,true:", " GPU-0,1,1,1,T,0,true:", "\tn,1,1,1,T,0,1:"])
def test_decode_any_reads_a_legacy_value_that_starts_as_json_could(value: str) -> None:
    assert decode_any(value) == hami_core.decode_legacy(value) != []


@pytest.mark.parametrize("value", ["", "[", "{}", "GPU-0,1:", "[null]"])
def test_decode_any_refuses_with_decode_error(value: str) -> None:
    with pytest.raises(DecodeError):
        decode_any(value)


def test_decode_any_refuses_a_non_str() -> None:
    with pytest.raises(DecodeError, match="must be a str"):
        decode_any(42)  # type: ignore[arg-type]


# ---- dict conversion ---------------------------------------------------------------------------------------


def test_device_to_dict_writes_every_key_with_protocol_names() -> None:
    device = DeviceInfo(
        id="g",
        index=2,
        mig_profiles=[
            MigProfile(name="1g", memory_mb=5, slice_count=1, placements=[MigPlacement(start=1, size=1)])
        ],
        custominfo={"a": [1]},
        devicevendor="NVIDIA",
    )
    obj = device_to_dict(device)
    assert tuple(obj) == DEVICE_KEYS
    assert obj["migProfiles"] == [
        {"name": "1g", "memoryMB": 5, "core": 0, "sliceCount": 1, "placements": [{"start": 1, "size": 1}]}
    ]
    assert (obj["custominfo"], obj["devicevendor"], obj["health"]) == ({"a": [1]}, "NVIDIA", False)
    assert device_to_dict(DeviceInfo())["migProfiles"] == []
    assert device_to_dict(DeviceInfo())["custominfo"] is None
    assert device_from_dict(obj) == device


def test_device_from_dict_takes_missing_keys_as_zero_values() -> None:
    assert device_from_dict({}) == DeviceInfo()
    assert device_from_dict({"migProfiles": None, "custominfo": None}) == DeviceInfo()
    profile = device_from_dict({"migProfiles": [{"name": "x"}]}).mig_profiles[0]
    assert profile == MigProfile(name="x", placements=None)


@pytest.mark.parametrize(
    ("obj", "message"),
    [
        ({"count": "5"}, r"^count: expected an integer \(int32\), got str$"),
        ({"count": True}, r"^count: expected an integer"),
        ({"count": 2**31}, r"^count: 2147483648 is out of range for int32$"),
        ({"index": -1}, r"^index: -1 is out of range for uint64$"),
        ({"health": 1}, r"^health: expected bool, got int$"),
        ({"id": None}, r"^id: expected str, got null$"),
        ({"bogus": 1}, r"^bogus: unknown key"),
        ({"custominfo": [1]}, r"^custominfo: expected dict, got list$"),
        ({"migProfiles": [{"memoryMB": "x"}]}, r"^migProfiles\[0\]\.memoryMB: expected an integer"),
        ({"migProfiles": [{"placements": [{"start": -1}]}]}, r"^migProfiles\[0\]\.placements\[0\]\.start"),
        ({"migProfiles": [{"instanceCount": 7}]}, r"^migProfiles\[0\]\.instanceCount: unknown key"),
        ({"migProfiles": [1]}, r"^migProfiles\[0\]: expected an object, got int$"),
        ([], r"^device: expected an object, got list$"),
    ],
)
def test_device_from_dict_names_the_bad_key(obj: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        device_from_dict(obj)


def test_public_facade_exports_the_codec_api() -> None:
    for name in [
        "decode_legacy",
        "encode_legacy",
        "decode_json",
        "encode_json",
        "decode_any",
        "JSON_CODEC",
        "LEGACY_CODEC",
        "device_to_dict",
        "device_from_dict",
    ]:
        assert name in hami_core.__all__
        assert getattr(hami_core, name) is not None
