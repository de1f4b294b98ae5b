"""The `dcu` driver: the framework's contract, and the exact values of spec section 1."""

from __future__ import annotations

import importlib.metadata

import hami_vendor_dcu

from hami_core.plugins import DriverManager, VendorDriver
from hami_core.testing import DriverContract


class TestContract(DriverContract):
    driver_name = "dcu"
    package = "hami-vendor-dcu"


def _loaded() -> VendorDriver:
    manager = DriverManager()
    return next(d for d in manager.load_entry_points().drivers if d.name == "dcu")


def test_values_are_those_of_the_spec() -> None:
    driver = _loaded()
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


def test_version_matches_the_distribution() -> None:
    assert hami_vendor_dcu.__version__ == importlib.metadata.version("hami-vendor-dcu") == _loaded().version
