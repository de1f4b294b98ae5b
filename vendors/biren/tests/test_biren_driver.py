"""The `biren` driver: the framework's contract, HAMi v2.10's values, and its GetNodeDevices cases."""

from __future__ import annotations

from pathlib import Path

import hami_vendor_biren
import pytest

from hami_core import DecodeError, DeviceConfig, DeviceInfo, FixedFields
from hami_core.plugins import DriverManager, VendorDriver
from hami_core.testing import DriverContract

#: HAMi's ``Test_GetNodeDevices`` cases (biren/device_test.go) as data: register value -> devices.
HAMI_CASES = [
    (
        '[{"id":"7-0","count":1,"devmem":32768,"type":"Biren","health":true,"devicepairscore":{}}]',
        [DeviceInfo(id="7-0", count=1, devmem=32768, devcore=100, type="Biren", health=True)],
    ),
    # devcore on the wire is ignored: HAMi sets 100 for every device
    (
        '[{"id":"a","devcore":7,"health":true},{"id":"b","index":1,"devcore":0}]',
        [DeviceInfo(id="a", devcore=100, health=True), DeviceInfo(id="b", index=1, devcore=100)],
    ),
]


class TestContract(DriverContract):
    driver_name = "biren"
    package = "hami-vendor-biren"

    def test_every_device_read_has_devcore_100(self, driver: VendorDriver) -> None:
        """The codec says so (the kit's round trip expects these values on every device it reads)."""
        assert isinstance(driver.codec, FixedFields) and driver.codec.fixed_values == {"devcore": 100}

    def test_values_are_hamis(self, driver: VendorDriver) -> None:
        """``biren/device.go``: register and handshake keys, JSON, generic handshake check on the count."""
        assert (driver.vendor_key, driver.register_annotation, driver.handshake_annotation) == (
            "Biren",
            "hami.io/node-biren-register",
            "hami.io/node-handshake-biren",
        )
        assert (driver.encoding, driver.count_resource, driver.liveness.name, driver.sources) == (
            "json",
            "birentech.com/gpu",
            "handshake",
            ("annotation",),
        )
        assert hami_vendor_biren.__version__ == driver.version  # the kit checks it is the distribution's

    @pytest.mark.parametrize(("value", "devices"), HAMI_CASES)
    def test_the_register_value_reads_as_hamis_get_node_devices(
        self, driver: VendorDriver, value: str, devices: list[DeviceInfo]
    ) -> None:
        assert driver.codec is not None and driver.codec.decode(value) == devices

    def test_a_value_that_does_not_decode_is_a_decode_error(self, driver: VendorDriver) -> None:
        """HAMi's "node annotations not decode successfully" case (an empty value)."""
        assert driver.codec is not None
        with pytest.raises(DecodeError):
            driver.codec.decode("")


def test_hamis_device_config_sets_the_count_resource(tmp_path: Path) -> None:
    path = tmp_path / "device-config.yaml"
    path.write_text("biren:\n  resourceCountName: example.com/br\n")
    drivers = DriverManager(device_config=DeviceConfig.load(path)).load_entry_points().drivers
    assert next(d for d in drivers if d.name == "biren").count_resource == "example.com/br"
