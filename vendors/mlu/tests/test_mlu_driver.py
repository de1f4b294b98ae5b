"""The `mlu` driver: the framework's contract, and the exact values of spec section 1."""

from __future__ import annotations

import importlib.metadata

import hami_vendor_mlu

from hami_core.plugins import DriverManager, VendorDriver
from hami_core.testing import DriverContract


class TestContract(DriverContract):
    driver_name = "mlu"
    package = "hami-vendor-mlu"


def _loaded() -> VendorDriver:
    manager = DriverManager()
    return next(d for d in manager.load_entry_points().drivers if d.name == "mlu")


def test_values_are_those_of_the_spec() -> None:
    driver = _loaded()
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


def test_version_matches_the_distribution() -> None:
    assert hami_vendor_mlu.__version__ == importlib.metadata.version("hami-vendor-mlu") == _loaded().version
