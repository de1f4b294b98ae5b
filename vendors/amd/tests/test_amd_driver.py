"""The `amd` driver: the framework's contract and HAMi v2.10's values (no handshake, capacity liveness)."""

from __future__ import annotations

from pathlib import Path

import hami_vendor_amd
import pytest

from hami_core import DeviceConfig, DeviceInfo, LivenessFacts
from hami_core.plugins import DriverManager, VendorDriver
from hami_core.testing import DriverContract


class TestContract(DriverContract):
    driver_name = "amd"
    package = "hami-vendor-amd"

    def test_values_are_hamis(self, driver: VendorDriver) -> None:
        """``amd/device.go``: the register key, JSON, no handshake, liveness from ``amd.com/gpu`` capacity."""
        assert (driver.vendor_key, driver.register_annotation, driver.handshake_annotation) == (
            "AMD",
            "hami.io/node-amd-register",
            None,
        )
        assert (driver.encoding, driver.count_resource, driver.liveness.name, driver.writes_reported) == (
            "json",
            "amd.com/gpu",
            "capacity",
            False,
        )
        assert driver.annotation_keys == ("hami.io/node-amd-register",)
        assert hami_vendor_amd.__version__ == driver.version  # the kit checks it is the distribution's

    @pytest.mark.parametrize(("capacity", "alive"), [(0, False), (1, True), (8, True)])
    def test_liveness_is_hamis_check_health(self, driver: VendorDriver, capacity: int, alive: bool) -> None:
        """HAMi's CheckHealth: capacity 0 (or absent, which reads as 0) is unhealthy, whatever the stamp."""
        for expired in (False, True):
            facts = LivenessFacts(
                stamp_expired=expired, allocatable=0, allocatable_seen=False, capacity=capacity
            )
            assert driver.liveness.alive(facts) is alive

    def test_the_register_value_reads_as_hamis_get_node_devices(self, driver: VendorDriver) -> None:
        assert driver.codec is not None
        value = '[{"id":"GPU-0","count":10,"devmem":65536,"devcore":100,"type":"MI300X","health":true}]'
        assert driver.codec.decode(value) == [
            DeviceInfo(id="GPU-0", count=10, devmem=65536, devcore=100, type="MI300X", health=True)
        ]


def test_hamis_device_config_sets_the_count_resource(tmp_path: Path) -> None:
    path = tmp_path / "device-config.yaml"
    path.write_text("amd:\n  resourceCountName: example.com/amd\n")
    drivers = DriverManager(device_config=DeviceConfig.load(path)).load_entry_points().drivers
    assert next(d for d in drivers if d.name == "amd").count_resource == "example.com/amd"
