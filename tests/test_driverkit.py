"""The pieces several vendor drivers build with: the device cap, numbered devices, fixed-field codecs."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

import hami_core
from hami_core import (
    JSON_CODEC,
    LEGACY_CODEC,
    MAX_DEVICES,
    Codec,
    DecodeError,
    DeviceInfo,
    NodeView,
    capacity_count,
    encode_json,
    fixed_fields,
    memory_per_device,
    numbered_devices,
)


def _node(**capacity: int) -> NodeView:
    return NodeView(name="node-1", capacity={f"example.com/{k}": v for k, v in capacity.items()})


@pytest.mark.parametrize(
    ("capacity", "per_device", "count"),
    [
        ({}, 1, 0),  # absent
        ({"gpu": 0}, 1, 0),
        ({"gpu": -3}, 1, 0),
        ({"gpu": 5}, 1, 5),
        ({"gpu": 250}, 100, 3),  # a part of one is one device
        ({"gpu": 16}, 16, 1),
        ({"gpu": 1}, 16, 1),
        ({"gpu": MAX_DEVICES}, 1, MAX_DEVICES),
        ({"gpu": MAX_DEVICES * 100}, 100, MAX_DEVICES),
    ],
)
def test_the_count_is_what_hamis_loops_build(capacity: dict[str, int], per_device: int, count: int) -> None:
    assert capacity_count(_node(**capacity), "example.com/gpu", per_device=per_device) == count


@pytest.mark.parametrize(
    ("value", "per_device"), [(MAX_DEVICES + 1, 1), (MAX_DEVICES * 16 + 1, 16), (2**63 - 1, 1)]
)
def test_a_count_beyond_any_node_is_one_line_naming_the_capacity(value: int, per_device: int) -> None:
    with pytest.raises(DecodeError) as refused:
        capacity_count(_node(gpu=value), "example.com/gpu", per_device=per_device, noun="GPUs")
    assert str(refused.value) == f"capacity example.com/gpu = {value} gives more than {MAX_DEVICES} GPUs"


def test_a_unit_size_below_one_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="per_device must be at least 1, got 0"):
        capacity_count(_node(gpu=1), "example.com/gpu", per_device=0)


def test_devices_are_numbered_as_hami_names_them() -> None:
    devices = numbered_devices(_node(), "acme", 3, count=1, devmem=100, devcore=100, type="ACME", health=True)
    assert devices == [
        DeviceInfo(id=f"node-1-acme-{i}", index=i, count=1, devmem=100, devcore=100, type="ACME", health=True)
        for i in range(3)
    ]
    assert numbered_devices(_node(), "acme", 0, count=1) == []


def test_numbered_devices_are_healthy_unless_told() -> None:
    """HAMi sets ``Health: true`` on every device it computes from a Node (MLU, Kunlun cards, MetaX GPU,
    Moore Threads, GCU, AWS Neuron)."""
    assert [d.health for d in numbered_devices(_node(), "acme", 2, count=1)] == [True, True]
    assert [d.health for d in numbered_devices(_node(), "acme", 2, count=1, health=False)] == [False, False]


@pytest.mark.parametrize(
    ("capacity", "share"),
    [
        ({"mem": 384, "core": 64}, 384 * 512 * 16 // 64),
        ({"mem": 100, "core": 17}, 100 * 8192 // 17),
        ({"mem": -3, "core": 16}, -1536),  # Go's division truncates toward zero
        ({"mem": -1, "core": 17}, -481),  # -8192 / 17 = -481.9: -481, not Python's -482
        ({"core": 16}, 0),
        ({"mem": 96}, 0),  # no cores: no devices
        ({"mem": 96, "core": 0}, 0),
        ({"mem": 96, "core": -16}, 0),
    ],
)
def test_the_memory_per_device_is_hamis_int64_arithmetic(capacity: dict[str, int], share: int) -> None:
    node = _node(**capacity)
    assert memory_per_device(node, "example.com/mem", "example.com/core", factor=512, per_device=16) == share


@pytest.mark.parametrize(
    ("capacity", "message"),
    [
        ({"mem": 2**22, "core": 16}, "^capacity example.com/mem gives 2147483648 MiB per device, beyond"),
        ({"mem": -(2**22) - 1, "core": 16}, "gives -2147484160 MiB per device, beyond int32"),
        ({"mem": 2**60, "core": 2**62}, "^capacity example.com/mem = 1152921504606846976 times 8192 is"),
    ],
)
def test_a_memory_per_device_where_hami_wraps_is_one_line(capacity: dict[str, int], message: str) -> None:
    with pytest.raises(DecodeError, match=message):
        memory_per_device(_node(**capacity), "example.com/mem", "example.com/core", factor=512, per_device=16)


def test_a_fixed_field_is_set_on_every_device_read_in_either_encoding() -> None:
    codec = fixed_fields(JSON_CODEC, devcore=100)
    assert isinstance(codec, Codec) and codec.name == "json"
    expected = [
        DeviceInfo(id="a", count=2, devcore=100, health=True),
        DeviceInfo(id="b", index=1, devcore=100),
    ]
    assert codec.decode('[{"id":"a","count":2,"devcore":7,"health":true},{"id":"b","index":1}]') == expected
    assert codec.decode("a,2,0,7,,0,true,0,:b,0,0,0,,0,false,1,:") == expected  # spec 3.4: either encoding


def test_a_fixed_field_codec_writes_as_its_codec() -> None:
    devices = [DeviceInfo(id="a", count=2, devcore=7, health=True)]
    assert fixed_fields(JSON_CODEC, devcore=100).encode(devices) == encode_json(devices)
    assert fixed_fields(LEGACY_CODEC, numa=1).encode(devices) == LEGACY_CODEC.encode(devices)
    assert fixed_fields(LEGACY_CODEC, numa=1).name == "legacy"


def test_a_drivers_own_codec_is_read_with_its_own_decode() -> None:
    class Upper:
        name = "upper"

        def decode(self, value: str) -> list[DeviceInfo]:
            return [DeviceInfo(id=value.upper())]

        def encode(self, devices: Sequence[DeviceInfo]) -> str:
            return ",".join(d.id for d in devices)

    assert fixed_fields(Upper(), health=True).decode("[x]") == [DeviceInfo(id="[X]", health=True)]


@pytest.mark.parametrize("value", ["", "[{", "not a device list"])
def test_a_value_that_does_not_decode_is_still_a_decode_error(value: str) -> None:
    with pytest.raises(DecodeError):
        fixed_fields(JSON_CODEC, devcore=100).decode(value)


def test_a_field_the_device_does_not_have_or_refuses_fails_when_the_driver_loads() -> None:
    with pytest.raises(TypeError, match="devcores"):
        fixed_fields(JSON_CODEC, devcores=100)
    with pytest.raises(ValueError, match="devcore"):
        fixed_fields(JSON_CODEC, devcore=2**31)


def test_the_facade_exports_them() -> None:
    names = ("MAX_DEVICES", "FixedFields", "capacity_count", "fixed_fields", "memory_per_device")
    for name in (*names, "numbered_devices"):
        assert name in hami_core.__all__ and hami_core.home_of(name) == "hami_core.driverkit", name
