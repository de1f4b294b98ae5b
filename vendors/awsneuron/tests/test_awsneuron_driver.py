"""The `awsneuron` driver: the framework's contract and HAMi v2.10's GetNodeDevices, case by case."""

from __future__ import annotations

from pathlib import Path

import hami_vendor_awsneuron
import pytest

from hami_core import DecodeError, DeviceConfig, DeviceInfo, FromNode, NodeView
from hami_core.plugins import DriverManager, VendorDriver
from hami_core.testing import DriverContract

NEURON, CORE = "aws.amazon.com/neuron", "aws.amazon.com/neuroncore"
TYPE = "node.kubernetes.io/instance-type"


def _device(i: int, cores: int, kind: str) -> DeviceInfo:
    return DeviceInfo(id=f"n-AWSNeuron-{i}", index=i, count=cores, devmem=0, devcore=2**cores - 1,
                      type="AWSNeuron", health=True, custominfo={"AWSNodeType": kind})  # fmt: skip


#: HAMi's GetNodeDevices arithmetic (awsneuron/device.go), as (capacity, labels, devices).
CASES = [
    ({NEURON: 2, CORE: 4}, {TYPE: "inf2.xlarge"}, [_device(i, 2, "inf2.xlarge") for i in range(2)]),
    ({NEURON: 16, CORE: 32}, {TYPE: "trn1.32xlarge"}, [_device(i, 2, "trn1.32xlarge") for i in range(16)]),
    ({NEURON: 1, CORE: 1}, {}, [_device(0, 1, "")]),  # no instance-type label: ""
    ({NEURON: 3, CORE: 7}, {}, [_device(i, 2, "") for i in range(3)]),  # integer division
    ({NEURON: 2}, {}, [_device(i, 0, "") for i in range(2)]),  # no cores: count 0, mask 0
    ({CORE: 4}, {}, []),
    ({NEURON: 0, CORE: 4}, {}, []),
    ({NEURON: -1, CORE: 4}, {}, []),
]


class TestContract(DriverContract):
    driver_name = "awsneuron"
    package = "hami-vendor-awsneuron"
    uses_fake_source = False  # the devices are the Node's capacity: nothing to publish
    node_views = (NodeView(name="inf-1", capacity={NEURON: 16, CORE: 32}, labels={TYPE: "trn1.32xlarge"}),)

    @pytest.fixture
    def source(self, driver: VendorDriver) -> FromNode:
        assert driver.node_source is not None
        return driver.node_source

    def test_values_are_hamis(self, driver: VendorDriver, source: FromNode) -> None:
        assert (driver.vendor_key, driver.count_resource, driver.sources, driver.annotation_keys) == (
            "AWSNeuron",
            NEURON,
            ("node",),
            (),
        )
        assert driver.liveness.name == "devices"  # HAMi's CheckHealth: always healthy
        assert (source.capacity, source.labels) == ((NEURON, CORE), (TYPE,))
        assert hami_vendor_awsneuron.__version__ == driver.version  # the kit checks it is the distribution's

    @pytest.mark.parametrize(("capacity", "labels", "devices"), CASES)
    def test_devices_are_hamis_get_node_devices(
        self, source: FromNode, capacity: dict[str, int], labels: dict[str, str], devices: list[DeviceInfo]
    ) -> None:
        assert source.devices(NodeView(name="n", capacity=capacity, labels=labels)) == devices

    def test_cores_per_device_come_from_each_nodes_own_capacity(self, source: FromNode) -> None:
        """Spec 1b: HAMi keeps the first Neuron node's cores per device for every later node; not here."""
        first = source.devices(NodeView(name="n", capacity={NEURON: 1, CORE: 2}))
        second = source.devices(NodeView(name="n", capacity={NEURON: 1, CORE: 8}))
        assert (first[0].count, first[0].devcore, second[0].count, second[0].devcore) == (2, 3, 8, 255)

    @pytest.mark.parametrize("capacity", [{NEURON: 1, CORE: 32}, {NEURON: 1, CORE: -2}])
    def test_a_core_mask_beyond_int32_is_an_error_not_a_wrap(
        self, source: FromNode, capacity: dict[str, int]
    ) -> None:
        with pytest.raises(DecodeError, match="beyond int32"):
            source.devices(NodeView(name="n", capacity=capacity))

    @pytest.mark.parametrize("devices", [1025, 2**63 - 1])
    def test_a_capacity_beyond_any_node_is_an_error(self, source: FromNode, devices: int) -> None:
        """A Node showing ``8Ei`` devices (2^63-1, as the API server caps it): HAMi would build them all."""
        with pytest.raises(DecodeError, match="more than 1024 devices"):
            source.devices(NodeView(name="n", capacity={NEURON: devices, CORE: devices}))


def test_hamis_device_config_sets_the_resource_names(tmp_path: Path) -> None:
    path = tmp_path / "device-config.yaml"
    path.write_text("awsneuron:\n  resourceCountName: example.com/nd\n  resourceCoreName: example.com/nc\n")
    drivers = DriverManager(device_config=DeviceConfig.load(path)).load_entry_points().drivers
    driver = next(d for d in drivers if d.name == "awsneuron")
    assert driver.count_resource == "example.com/nd"
    assert driver.node_source is not None
    assert driver.node_source.capacity == ("example.com/nd", "example.com/nc")
