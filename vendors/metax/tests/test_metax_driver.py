"""The `metax-gpu` and `metax-sgpu` drivers: the framework's contract and HAMi v2.10's GetNodeDevices."""

from __future__ import annotations

from pathlib import Path

import hami_vendor_metax
import pytest

from hami_core import DecodeError, DeviceConfig, DeviceInfo, FromNode, LivenessFacts, NodeView
from hami_core.plugins import DriverManager, VendorDriver
from hami_core.testing import DriverContract

GPU, ANNOTATION = "metax-tech.com/gpu", "metax-tech.com/node-gpu-devices"
ONE = '[{"uuid":"GPU-a","model":"C500","totalDevCount":16,"totalCompute":100,"totalVRam":65536,"numa":1,"healthy":true,"qosPolicy":"best-effort","linkZone":2}]'  # noqa: E501


class TestGpuContract(DriverContract):
    driver_name = "metax-gpu"
    package = "hami-vendor-metax"
    uses_fake_source = False  # whole GPUs are the Node's capacity: nothing to publish
    node_views = (NodeView(name="mx-1", capacity={GPU: 8}),)

    @pytest.fixture
    def source(self, driver: VendorDriver) -> FromNode:
        assert driver.node_source is not None
        return driver.node_source

    def test_values_are_hamis(self, driver: VendorDriver, source: FromNode) -> None:
        assert (driver.vendor_key, driver.count_resource, driver.sources, driver.liveness.name) == (
            "Metax-GPU",
            GPU,
            ("node",),
            "capacity",
        )
        assert driver.annotation_keys == () and source.capacity == (GPU,)
        assert hami_vendor_metax.__version__ == driver.version  # the kit checks it is the distribution's

    @pytest.mark.parametrize(("capacity", "alive"), [(0, False), (1, True)])
    def test_whole_gpus_live_while_the_capacity_is_above_zero(
        self, driver: VendorDriver, capacity: int, alive: bool
    ) -> None:
        """HAMi's CheckHealth for Metax-GPU: ``(capacity > 0, true)``."""
        facts = LivenessFacts(stamp_expired=True, allocatable=0, allocatable_seen=False, capacity=capacity)
        assert driver.liveness.alive(facts) is alive

    @pytest.mark.parametrize("count", [0, 1, 3])
    def test_whole_gpus_are_hamis_get_node_devices(self, source: FromNode, count: int) -> None:
        assert source.devices(NodeView(name="n", capacity={GPU: count})) == [
            DeviceInfo(
                id=f"n-metax-{i}", index=i, count=1, devmem=65536, devcore=100, type="Metax-GPU", health=True
            )
            for i in range(count)
        ]

    @pytest.mark.parametrize("count", [1025, 2**63 - 1])
    def test_a_capacity_beyond_any_node_is_an_error(self, source: FromNode, count: int) -> None:
        """A Node showing ``8Ei`` GPUs (2^63-1 as the API server caps it) would make HAMi build them all."""
        with pytest.raises(DecodeError, match="more than 1024 GPUs"):
            source.devices(NodeView(name="n", capacity={GPU: count}))


class TestSgpuContract(DriverContract):
    driver_name = "metax-sgpu"
    package = "hami-vendor-metax"
    uses_fake_source = False  # MetaX's own device plugin writes the annotation
    node_views = (NodeView(name="mx-1", annotations={ANNOTATION: ONE}),)

    def test_values_are_hamis(self, driver: VendorDriver) -> None:
        assert (driver.vendor_key, driver.count_resource, driver.sources, driver.liveness.name) == (
            "Metax-SGPU",
            "metax-tech.com/sgpu",
            ("node",),
            "devices",
        )
        assert driver.annotation_keys == ()
        assert driver.node_source is not None and driver.node_source.annotations == (ANNOTATION,)


def _sgpu(value: str) -> list[DeviceInfo]:
    drivers = DriverManager().load_entry_points().drivers
    source = next(d for d in drivers if d.name == "metax-sgpu").node_source
    assert source is not None
    return source.devices(NodeView(name="n", annotations={ANNOTATION: value}))


def test_sgpus_are_hamis_conversion() -> None:
    """``convertMetaxSDeviceToHAMIDevice``: index = position, count/devmem/devcore from the totals."""
    assert _sgpu(ONE) == [
        DeviceInfo(id="GPU-a", index=0, count=16, devmem=65536, devcore=100, type="Metax-SGPU", numa=1,
                   health=True, custominfo={"QosPolicy": "best-effort", "Model": "C500", "LinkZone": 2})
    ]  # fmt: skip


def test_keys_match_as_go_matches_them() -> None:
    """Case-insensitive (the Kelvin sign folds to k), the last of several wins, null leaves the value,
    unknown keys are ignored whatever their type."""
    value = '[{"UUID":"x","uuid":"y","TOTALVRAM":7,"totalVRam":null,"lin\u212aZone":3,"extra":[1,{}]},{}]'
    first, second = _sgpu(value)
    assert (first.id, first.devmem, first.custominfo) == (
        "y",
        7,
        {"QosPolicy": "", "Model": "", "LinkZone": 3},
    )
    assert second == DeviceInfo(
        id="", index=1, type="Metax-SGPU", custominfo={"QosPolicy": "", "Model": "", "LinkZone": 0}
    )


def test_text_and_skipped_values_are_read_as_go_reads_them() -> None:
    """Where Python's json read otherwise (HAMi's oracle agrees): a lone surrogate escape is U+FFFD, and an
    unknown key may hold a number past Python's 4300 digits or arrays nested 3000 deep (Go skips them)."""
    (device,) = _sgpu('[{"uuid":"\\ud800a","qosPolicy":"\\udc00","totalDevCount":2}]')
    assert (device.id, device.count) == ("\ufffda", 2)
    assert device.custominfo == {"QosPolicy": "\ufffd", "Model": "", "LinkZone": 0}
    for skipped in ("9" * 5000, "[" * 3000 + "]" * 3000):
        (device,) = _sgpu(f'[{{"uuid":"a","x":{skipped},"totalDevCount":2}}]')
        assert (device.id, device.count) == ("a", 2)


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ('[{"uuid":"a"},{"totalVRam":1e2}]', "[1].totalVRam: number '1e2' is not an integer for Go int32"),
        ('[{"NUMA":2147483648}]', "[0].numa: number '2147483648' is out of range for Go int32"),
        ('[{"healthy":"true"}]', '[0].healthy: cannot decode a string "true" into Go bool'),
        ("{}", "node-gpu-devices: cannot decode an object {} into Go []*MetaxSDeviceInfo"),
        ("[" * 10001 + "]" * 10001, "exceeded max depth 10000"),
    ],
)
def test_a_refusal_names_the_field_and_the_go_type(value: str, says: str) -> None:
    with pytest.raises(DecodeError) as refused:
        _sgpu(value)
    assert says in str(refused.value) and "\n" not in str(refused.value)


@pytest.mark.parametrize("value", ["[]", "null", " null "])
def test_an_empty_list_is_no_devices(value: str) -> None:
    """HAMi: "no sdevice found on node", and CheckHealth unhealthy: the vendor leaves the node."""
    assert _sgpu(value) == []


@pytest.mark.parametrize(
    "value",
    [
        "",
        "{}",
        '"x"',
        "[null]",
        "[1]",
        '[{"uuid":1}]',
        '[{"totalVRam":1.0}]',
        '[{"totalVRam":1e2}]',
        '[{"totalVRam":"4"}]',
        '[{"totalVRam":2147483648}]',
        '[{"numa":-2147483649}]',
        '[{"healthy":"true"}]',
        '[{"healthy":1}]',
        '[{"totalCompute":true}]',
        "[NaN]",
        "[{}] x",
    ],
)
def test_a_value_go_does_not_decode_is_a_decode_error(value: str) -> None:
    with pytest.raises(DecodeError):
        _sgpu(value)


def test_hamis_device_config_sets_the_resource_names(tmp_path: Path) -> None:
    path = tmp_path / "device-config.yaml"
    path.write_text("metax:\n  resourceCountName: example.com/gpu\n  resourceVCountName: example.com/sgpu\n")
    drivers = DriverManager(device_config=DeviceConfig.load(path)).load_entry_points().drivers
    names = {d.name: d.count_resource for d in drivers}
    assert (names["metax-gpu"], names["metax-sgpu"]) == ("example.com/gpu", "example.com/sgpu")
