"""The `nvidia` driver: the framework's contract, and the exact values of spec section 1."""

from __future__ import annotations

import importlib.metadata

import hami_vendor_nvidia

from hami_core.plugins import DriverManager, VendorDriver
from hami_core.testing import DriverContract


class TestContract(DriverContract):
    driver_name = "nvidia"
    package = "hami-vendor-nvidia"


def _loaded() -> VendorDriver:
    manager = DriverManager()
    return next(d for d in manager.load_entry_points().drivers if d.name == "nvidia")


def test_values_are_those_of_the_spec() -> None:
    driver = _loaded()
    assert (driver.vendor_key, driver.register_annotation, driver.handshake_annotation) == (
        "NVIDIA",
        "hami.io/node-nvidia-register",
        "hami.io/node-handshake",
    )
    assert (driver.encoding, driver.count_resource, driver.liveness.name, driver.writes_reported) == (
        "json",
        "nvidia.com/gpu",
        "allocatable",
        False,
    )


def test_version_matches_the_distribution() -> None:
    assert (
        hami_vendor_nvidia.__version__
        == importlib.metadata.version("hami-vendor-nvidia")
        == _loaded().version
    )
