"""The example third-party driver: the framework's contract, and the values it describes itself with."""

from __future__ import annotations

from hami_core.plugins import DriverManager, VendorDriver
from hami_core.testing import DriverContract


class TestContract(DriverContract):
    driver_name = "acme"
    package = "hami-vendor-acme"

    def test_its_values_are_what_it_says(self, driver: VendorDriver, manager: DriverManager) -> None:
        assert list(manager.select(["acme"])) == [driver], "the plugin provides this one driver"
        assert (driver.vendor_key, driver.register_annotation, driver.handshake_annotation) == (
            "ACME",
            "hami.io/node-acme-register",
            "hami.io/node-handshake-acme",
        )
        assert (driver.encoding, driver.count_resource, driver.liveness.name, driver.writes_reported) == (
            "legacy",
            "acme.com/gpu",
            "handshake",
            True,
        )
        assert driver.package == "hami-vendor-acme"
