"""The `enflame-gcu` and `enflame-drs` drivers: the framework's contract and HAMi v2.10's GetNodeDevices."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import hami_vendor_enflame
import pytest

from hami_core import DecodeError, DeviceConfig, DeviceInfo, FromNode, LivenessFacts, NodeView
from hami_core.plugins import DriverManager, VendorDriver
from hami_core.testing import DriverContract

GCU, DRS = "enflame.com/gcu", "enflame.com/gcu-drs-capacity"
#: HAMi's TestGetNodeDevices_DRSAnnotation (enflame/device_test.go) value.
HAMI_VALUE = '{"devices":[{"index":"0","minor":"0","capacity":6}],"profiles":{"1g.6gb":"0","3g.20gb":"1","6g.40gb":"2"}}'  # noqa: E501
HAMI_PROFILES = {"1g.6gb": "0", "3g.20gb": "1", "6g.40gb": "2"}


class TestGcuContract(DriverContract):
    driver_name = "enflame-gcu"
    package = "hami-vendor-enflame"
    uses_fake_source = False  # whole GCUs are the Node's capacity: nothing to publish
    node_views = (NodeView(name="gcu-1", capacity={GCU: 8}),)

    @pytest.fixture
    def source(self, driver: VendorDriver) -> FromNode:
        assert driver.node_source is not None
        return driver.node_source

    def test_values_are_hamis(self, driver: VendorDriver, source: FromNode) -> None:
        assert (driver.vendor_key, driver.count_resource, driver.sources, driver.liveness.name) == (
            "GCU",
            GCU,
            ("node",),
            "capacity",
        )
        assert driver.annotation_keys == () and source.capacity == (GCU,)
        assert hami_vendor_enflame.__version__ == driver.version  # the kit checks it is the distribution's

    @pytest.mark.parametrize(("capacity", "alive"), [(0, False), (2, True)])
    def test_whole_gcus_live_while_the_capacity_is_above_zero(
        self, driver: VendorDriver, capacity: int, alive: bool
    ) -> None:
        facts = LivenessFacts(stamp_expired=True, allocatable=0, allocatable_seen=False, capacity=capacity)
        assert driver.liveness.alive(facts) is alive

    @pytest.mark.parametrize("count", [0, 1, 4])
    def test_whole_gcus_are_hamis_get_node_devices(self, source: FromNode, count: int) -> None:
        assert source.devices(NodeView(name="n", capacity={GCU: count})) == [
            DeviceInfo(id=f"n-GCU-{i}", index=i, count=1, devmem=100, devcore=100, type="GCU", health=True)
            for i in range(count)
        ]

    @pytest.mark.parametrize("count", [1025, 2**63 - 1])
    def test_a_capacity_beyond_any_node_is_an_error(self, source: FromNode, count: int) -> None:
        """A Node showing ``8Ei`` GCUs (2^63-1 as the API server caps it) would make HAMi build them all."""
        with pytest.raises(DecodeError, match="more than 1024 GCUs"):
            source.devices(NodeView(name="n", capacity={GCU: count}))


class TestDrsContract(DriverContract):
    driver_name = "enflame-drs"
    package = "hami-vendor-enflame"
    uses_fake_source = False  # Enflame's own device plugin writes the annotation
    node_views = (NodeView(name="gcu-1", annotations={DRS: HAMI_VALUE}),)

    def test_values_are_hamis(self, driver: VendorDriver) -> None:
        assert (driver.vendor_key, driver.count_resource, driver.sources, driver.liveness.name) == (
            "Enflame",
            "enflame.com/drs-gcu",
            ("node",),
            "devices",  # HAMi's CheckHealth: always healthy
        )
        assert driver.annotation_keys == ()
        assert driver.node_source is not None and driver.node_source.annotations == (DRS,)


def _drs(value: str) -> list[DeviceInfo]:
    drivers = DriverManager().load_entry_points().drivers
    source = next(d for d in drivers if d.name == "enflame-drs").node_source
    assert source is not None
    return source.devices(NodeView(name="node-a", annotations={DRS: value}))


def _shared(index: int, count: int, devmem: int, info: dict[str, Any]) -> DeviceInfo:
    return DeviceInfo(id=f"node-a-enflame-drs-{index}", index=index, count=count, devmem=devmem, devcore=100,
                      type="Enflame", health=True, custominfo=info)  # fmt: skip


def test_hamis_own_drs_case() -> None:
    """TestGetNodeDevices_DRSAnnotation: one device, count 6, devmem 40 GiB, minor "0"."""
    info = {"minor": "0", "index": "0", "profiles": HAMI_PROFILES, "maxSlice": 6}
    assert _drs(HAMI_VALUE) == [_shared(0, 6, 40960, info)]


def _value(devices: list[Any], profiles: dict[str, Any] | None = None) -> str:
    return json.dumps({"devices": devices, "profiles": HAMI_PROFILES if profiles is None else profiles})


#: More of HAMi's GetNodeDevices rules, as (devices, profiles, [(index, count, devmem, minor, maxSlice)]).
CASES: list[tuple[list[Any], dict[str, Any] | None, list[tuple[int, int, int, str, int]]]] = [
    # the capacity: a number truncated toward zero, or a decimal string (trimmed, clamped to int32)
    ([{"index": "3", "capacity": 2.9}], None, [(3, 2, 40960, "3", 6)]),
    ([{"index": "1", "minor": " 7 ", "capacity": " 4 "}], None, [(1, 4, 40960, "7", 6)]),
    ([{"capacity": "99999999999"}], None, [(0, 2**31 - 1, 40960, "0", 6)]),
    # an index that is not a decimal falls back to the position; Atoi takes a sign and leading zeros
    ([{"index": "x", "capacity": 1}, {"index": " 5", "capacity": 1}, {"index": "+07", "capacity": 1}], None,
     [(0, 1, 40960, "0", 6), (1, 1, 40960, "1", 6), (7, 1, 40960, "7", 6)]),
    # devmem: the largest profile memory; without one, the largest slice count (GB); case-insensitive
    ([{"capacity": 1}], {"2G.x": "a", " 4g.8GB ": "b"}, [(0, 1, 8192, "0", 4)]),
    ([{"capacity": 1}], {"2g.x": "a", "4g": "b", "3g.mem": "c"}, [(0, 1, 3072, "0", 3)]),
]  # fmt: skip


@pytest.mark.parametrize(("devices", "profiles", "expected"), CASES)
def test_drs_devices_are_hamis_get_node_devices(
    devices: list[Any], profiles: dict[str, Any] | None, expected: list[tuple[int, int, int, str, int]]
) -> None:
    kept = HAMI_PROFILES if profiles is None else profiles
    assert _drs(_value(devices, profiles)) == [
        _shared(i, c, m, {"minor": minor, "index": str(i), "profiles": kept, "maxSlice": s})
        for i, c, m, minor, s in expected
    ]


def test_keys_match_as_go_matches_them() -> None:
    """Case-insensitive field names, the last of several wins; a second profiles object adds to the map."""
    value = (
        '{"DEVICES":[{"Index":"1","CAPACITY":2,"capacity":3}],'
        '"profiles":{"1g.2gb":"a"},"Profiles":{"2g.4gb":"b"}}'
    )
    (device,) = _drs(value)
    assert (device.index, device.count, device.devmem) == (1, 3, 4096)
    assert device.custominfo == {
        "minor": "1",
        "index": "1",
        "profiles": {"1g.2gb": "a", "2g.4gb": "b"},
        "maxSlice": 2,
    }


@pytest.mark.parametrize(
    ("lists", "expected"),
    [
        # a second list decodes into the first one's elements: the index "1" stays
        ('[{"index":"1","capacity":4}],"devices":[{"capacity":5}]', [(1, 5)]),
        # a null element leaves the one already there; the list is as long as the last one
        ('[{"index":"1","capacity":4},{"capacity":4}],"devices":[null]', [(1, 4)]),
        ('[{"index":"1","capacity":4},{"index":"2","capacity":4}],"devices":[{}],"devices":[{},{}]',
         [(1, 4), (2, 4)]),
        # an empty list or null starts afresh
        ('[{"index":"1","capacity":4}],"devices":[],"devices":[{"capacity":4}]', [(0, 4)]),
        ('[{"index":"1","capacity":4}],"devices":null,"devices":[{"capacity":4}]', [(0, 4)]),
    ],
)  # fmt: skip
def test_a_repeated_devices_key_decodes_into_the_devices_already_there(
    lists: str, expected: list[tuple[int, int]]
) -> None:
    """Go reuses a slice's backing array (HAMi's oracle agrees); Python's json kept only the last list."""
    got = _drs(f'{{"devices":{lists},"profiles":{{"4g.16gb":"1"}}}}')
    assert [(d.index, d.count) for d in got] == expected


def test_text_and_skipped_values_are_read_as_go_reads_them() -> None:
    """A lone surrogate escape is U+FFFD, in a key too; an unknown key may hold a number past Python's 4300
    digits or arrays nested 3000 deep (Go skips them); HAMi's oracle agrees."""
    (device,) = _drs(
        '{"devices":[{"minor":"\\ud800","capacity":1}],"profiles":{"4g.16gb":"1","\\udc00":"2"}}'
    )
    profiles = {"4g.16gb": "1", "\ufffd": "2"}
    assert device.custominfo == {"minor": "\ufffd", "index": "0", "profiles": profiles, "maxSlice": 4}
    for skipped in ("9" * 5000, "[" * 3000 + "]" * 3000):
        (device,) = _drs(f'{{"devices":[{{"x":{skipped},"capacity":2}}],"profiles":{{"4g.16gb":"1"}}}}')
        assert device.count == 2


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (_value([{"capacity": 1}, {"index": 1}]), "devices[1].index: cannot decode number 1 into Go string"),
        ('{"devices":[{"capacity":[1e400]}]}', "devices[0].capacity: number '1e400' is out of range"),
        (_value([{"capacity": 1}], {"1g.2": 3}), 'profiles["1g.2"]: cannot decode number 3 into Go string'),
        ('{"devices":{}}', "gcu-drs-capacity: devices: cannot decode an object {} into Go []drsDeviceSpec"),
    ],
)
def test_a_refusal_names_the_field_and_the_go_type(value: str, says: str) -> None:
    with pytest.raises(DecodeError) as refused:
        _drs(value)
    assert says in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.parametrize(
    "value",
    [
        "",
        "[]",
        "null",  # no profiles
        '{"devices":[{"capacity":1}]}',  # no profiles
        '{"devices":[{"capacity":1}],"profiles":{"big":"0"}}',  # no valid profile
        _value([]),  # no devices
        _value([None]),  # a zero device: no capacity
        _value([{"capacity": 0}]),
        _value([{"capacity": -1}]),
        _value([{"capacity": 0.5}]),
        _value([{"capacity": 2**31}]),
        _value([{"capacity": "1.5"}]),
        _value([{"capacity": "0x10"}]),
        _value([{"capacity": True}]),
        _value([{"capacity": [1]}]),
        _value([{"index": 1, "capacity": 1}]),  # index must be a string
        _value([{"minor": 0, "capacity": 1}]),
        _value([{"index": "-1", "capacity": 1}]),  # HAMi wraps it to 2^64-1
        _value([1]),
        _value([{"capacity": 1}], {"1g.2gb": 3}),  # profile ids are strings
        _value([{"capacity": 1}], {"1g.3000000gb": "0"}),  # 3,000,000 GB does not fit int32 MiB
        '{"devices":{},"profiles":{"1g.2gb":"a"}}',
        '{"devices":[],"profiles":[]}',
        '{"profiles":{"1g.2gb":"a"},"devices":[{"capacity":NaN}]}',
    ],
)
def test_a_value_hami_refuses_is_a_decode_error(value: str) -> None:
    with pytest.raises(DecodeError):
        _drs(value)


def test_hamis_device_config_sets_the_resource_names(tmp_path: Path) -> None:
    path = tmp_path / "device-config.yaml"
    path.write_text(
        "enflame:\n  resourceNameGCU: example.com/gcu\n"
        "  resourceNameDRSGCU: ''\n  resourceNameVGCU: example.com/vgcu\n"
    )
    drivers = DriverManager(device_config=DeviceConfig.load(path)).load_entry_points().drivers
    names = {d.name: d.count_resource for d in drivers}
    assert names["enflame-gcu"] == "example.com/gcu"
    assert names["enflame-drs"] == "example.com/vgcu"  # InitEnflameDevice's fallback
