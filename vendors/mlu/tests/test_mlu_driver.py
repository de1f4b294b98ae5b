"""The `mlu` driver: the framework's contract, and the exact values of spec section 1."""

from __future__ import annotations

from pathlib import Path

import hami_vendor_mlu
import pytest

from hami_core import DecodeError, DeviceConfig, NodeView
from hami_core.plugins import DriverManager, VendorDriver
from hami_core.testing import DriverContract

CORES, MEMORY = "cambricon.com/mlu.smlu.vcore", "cambricon.com/mlu.smlu.vmemory"


class TestContract(DriverContract):
    driver_name = "mlu"
    package = "hami-vendor-mlu"

    def test_values_are_those_of_the_spec(self, driver: VendorDriver) -> None:
        assert (driver.vendor_key, driver.register_annotation, driver.handshake_annotation) == (
            "MLU",
            "hami.io/node-mlu-register",
            "hami.io/node-handshake-mlu",
        )
        assert (driver.encoding, driver.count_resource, driver.liveness.name, driver.writes_reported) == (
            "legacy",
            "cambricon.com/mlu",
            "handshake",
            True,
        )
        assert hami_vendor_mlu.__version__ == driver.version  # the kit checks it is the distribution's

    def test_the_capacity_source_computes_what_hami_v210_computes(self, driver: VendorDriver) -> None:
        """``cambricon/device.go`` GetNodeDevices: ceil(vcore/100) MLUs, devmem = vmemory*256*100/vcore."""
        source = driver.node_source
        assert source is not None and source.capacity == (CORES, MEMORY)
        devices = source.devices(NodeView(name="mlu-1", capacity={CORES: 250, MEMORY: 96}))
        assert [(d.id, d.index, d.count, d.devmem, d.devcore, d.type, d.numa, d.health) for d in devices] == [
            (f"mlu-1-cambricon-mlu-{i}", i, 100, 96 * 256 * 100 // 250, 100, "MLU", 0, True) for i in range(3)
        ]
        assert source.devices(NodeView(name="mlu-1")) == []
        node_path = driver.rules().node_path()
        assert node_path is not None and node_path.liveness.name == "devices"

    def test_a_memory_per_device_beyond_int32_is_an_error_not_a_wrap(self, driver: VendorDriver) -> None:
        assert driver.node_source is not None
        with pytest.raises(DecodeError, match="beyond int32"):
            driver.node_source.devices(NodeView(name="mlu-1", capacity={CORES: 100, MEMORY: 2**30}))

    def test_a_negative_memory_is_shared_out_as_hamis_int64_division(self, driver: VendorDriver) -> None:
        """-3 vmemory over 250 vcores: HAMi's GetNodeDevices gives -307 MiB a device (Go truncates)."""
        assert driver.node_source is not None
        devices = driver.node_source.devices(NodeView(name="mlu-1", capacity={CORES: 250, MEMORY: -3}))
        assert [d.devmem for d in devices] == [-307, -307, -307]

    def test_a_capacity_beyond_any_node_is_refused_not_built(self, driver: VendorDriver) -> None:
        assert driver.node_source is not None
        with pytest.raises(DecodeError, match="more than 1024 MLUs"):
            driver.node_source.devices(NodeView(name="x", capacity={CORES: 2**63 - 1}))


def test_hamis_chart_device_config_sets_the_resource_names(tmp_path: Path) -> None:
    config = tmp_path / "device-config.yaml"
    config.write_text(
        "cambricon:\n  resourceCountName: cambricon.com/vmlu\n  resourceCoreName: example.com/vcore\n"
    )
    manager = DriverManager(device_config=DeviceConfig.load(config))
    (driver,) = [d for d in manager.load_entry_points().drivers if d.name == "mlu"]
    assert driver.count_resource == "cambricon.com/vmlu"
    assert driver.node_source is not None and driver.node_source.capacity[0] == "example.com/vcore"
