"""The `mthreads` driver: the framework's contract and HAMi v2.10's GetNodeDevices, case by case."""

from __future__ import annotations

from pathlib import Path

import hami_vendor_mthreads
import pytest

from hami_core import DecodeError, DeviceConfig, DeviceInfo, FromNode, NodeView
from hami_core.plugins import DriverManager, VendorDriver
from hami_core.testing import DriverContract

CORES, MEMORY = "mthreads.com/sgpu-core", "mthreads.com/sgpu-memory"


def _device(node: str, i: int, devmem: int) -> DeviceInfo:
    return DeviceInfo(
        id=f"{node}-mthreads-{i}", index=i, count=100, devmem=devmem, devcore=16, type="Mthreads", health=True
    )


#: HAMi's ``Test_GetNodeDevices`` (mthreads/device_test.go: memory 1, cores 1 -> one GPU of 8192 MiB),
#: and more of its arithmetic: (capacity, devices).
CASES = [
    ({MEMORY: 1, CORES: 1}, [_device("test", 0, 8192)]),
    ({MEMORY: 384, CORES: 64}, [_device("test", i, 384 * 512 * 16 // 64) for i in range(4)]),
    ({MEMORY: 100, CORES: 17}, [_device("test", i, 100 * 8192 // 17) for i in range(2)]),
    ({MEMORY: 0, CORES: 16}, [_device("test", 0, 0)]),
    ({CORES: 16}, [_device("test", 0, 0)]),
    ({MEMORY: -3, CORES: 16}, [_device("test", 0, -1536)]),  # Go's division truncates toward zero
    ({MEMORY: 96}, []),
    ({MEMORY: 96, CORES: 0}, []),
    ({MEMORY: 96, CORES: -16}, []),
]


class TestContract(DriverContract):
    driver_name = "mthreads"
    package = "hami-vendor-mthreads"
    uses_fake_source = False  # the devices are the Node's capacity: nothing to publish
    node_views = (
        NodeView(name="mt-1", capacity={CORES: 64, MEMORY: 384}),
        NodeView(name="mt-1", capacity={CORES: 1}),
    )

    @pytest.fixture
    def source(self, driver: VendorDriver) -> FromNode:
        assert driver.node_source is not None
        return driver.node_source

    def test_values_are_hamis(self, driver: VendorDriver, source: FromNode) -> None:
        assert (driver.vendor_key, driver.count_resource, driver.sources, driver.annotation_keys) == (
            "Mthreads",
            "mthreads.com/vgpu",
            ("node",),
            (),
        )
        assert driver.liveness.name == "devices"  # HAMi's CheckHealth: always healthy
        assert source.capacity == (CORES, MEMORY)
        assert hami_vendor_mthreads.__version__ == driver.version  # the kit checks it is the distribution's

    @pytest.mark.parametrize(("capacity", "devices"), CASES)
    def test_devices_are_hamis_get_node_devices(
        self, source: FromNode, capacity: dict[str, int], devices: list[DeviceInfo]
    ) -> None:
        assert source.devices(NodeView(name="test", capacity=capacity)) == devices

    def test_a_memory_per_gpu_beyond_int32_is_an_error_not_a_wrap(self, source: FromNode) -> None:
        with pytest.raises(DecodeError, match="beyond int32"):
            source.devices(NodeView(name="test", capacity={CORES: 16, MEMORY: 2**22}))

    @pytest.mark.parametrize("cores", [1024 * 16 + 1, 2**63 - 1])
    def test_a_capacity_beyond_any_node_is_an_error(self, source: FromNode, cores: int) -> None:
        """A Node showing ``8Ei`` cores (2^63-1 as the API server caps it) would make HAMi build them all."""
        with pytest.raises(DecodeError, match="more than 1024 GPUs"):
            source.devices(NodeView(name="test", capacity={CORES: cores, MEMORY: 1}))


def test_hamis_device_config_sets_the_resource_names(tmp_path: Path) -> None:
    path = tmp_path / "device-config.yaml"
    path.write_text(
        "mthreads:\n  resourceCountName: example.com/vgpu\n  resourceCoreName: example.com/core\n"
    )
    drivers = DriverManager(device_config=DeviceConfig.load(path)).load_entry_points().drivers
    driver = next(d for d in drivers if d.name == "mthreads")
    assert driver.count_resource == "example.com/vgpu"
    assert driver.node_source is not None and driver.node_source.capacity == ("example.com/core", MEMORY)
