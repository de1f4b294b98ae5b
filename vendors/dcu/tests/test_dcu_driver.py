"""The `dcu` driver: the framework's contract, and the exact values of spec section 1."""

from __future__ import annotations

import hami_vendor_dcu

from hami_core.plugins import VendorDriver
from hami_core.testing import DriverContract


class TestContract(DriverContract):
    driver_name = "dcu"
    package = "hami-vendor-dcu"

    def test_values_are_those_of_the_spec(self, driver: VendorDriver) -> None:
        assert (driver.vendor_key, driver.register_annotation, driver.handshake_annotation) == (
            "DCU",
            "hami.io/node-dcu-register",
            "hami.io/node-handshake-dcu",
        )
        assert (driver.encoding, driver.count_resource, driver.liveness.name, driver.writes_reported) == (
            "legacy",
            "hygon.com/dcunum",
            "handshake",
            True,
        )
        assert hami_vendor_dcu.__version__ == driver.version  # the kit checks it is the distribution's
