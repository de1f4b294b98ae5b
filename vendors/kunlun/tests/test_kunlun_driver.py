"""The `kunlun` driver: the framework's contract, and the exact values of spec section 1."""

from __future__ import annotations

import importlib.metadata

import hami_vendor_kunlun
import pytest

from hami_core import DecodeError, NodeView
from hami_core.plugins import DriverManager, VendorDriver
from hami_core.testing import DriverContract


class TestContract(DriverContract):
    driver_name = "kunlun"
    package = "hami-vendor-kunlun"


def _loaded() -> VendorDriver:
    manager = DriverManager()
    return next(d for d in manager.load_entry_points().drivers if d.name == "kunlun")


def test_values_are_those_of_the_spec() -> None:
    driver = _loaded()
    assert (driver.vendor_key, driver.register_annotation, driver.handshake_annotation) == (
        "XPU",
        "hami.io/node-register-xpu",
        "hami.io/node-handshake-xpu",
    )
    assert (driver.encoding, driver.count_resource, driver.liveness.name, driver.writes_reported) == (
        "json",
        "kunlunxin.com/vxpu",
        "handshake",
        True,
    )


def test_version_matches_the_distribution() -> None:
    assert (
        hami_vendor_kunlun.__version__
        == importlib.metadata.version("hami-vendor-kunlun")
        == _loaded().version
    )


class TestCardContract(DriverContract):
    driver_name = "kunlun-card"
    package = "hami-vendor-kunlun"
    uses_fake_source = False  # whole cards are the Node's capacity: nothing to publish
    node_views = (NodeView(name="xpu-1", capacity={"kunlunxin.com/xpu": 8}),)


def test_whole_cards_are_what_hami_v210_computes() -> None:
    """``kunlun/device.go`` GetNodeDevices: N cards of 98304 MiB, NUMA 1 from N/2 on, always healthy."""
    (driver,) = [d for d in DriverManager().load_entry_points().drivers if d.name == "kunlun-card"]
    assert (driver.vendor_key, driver.count_resource, driver.sources) == (
        "kunlun",
        "kunlunxin.com/xpu",
        ("node",),
    )
    assert driver.annotation_keys == () and driver.liveness.name == "devices"
    source = driver.node_source
    assert source is not None and source.capacity == ("kunlunxin.com/xpu",)
    devices = source.devices(NodeView(name="xpu-1", capacity={"kunlunxin.com/xpu": 5}))
    assert [(d.id, d.index, d.count, d.devmem, d.devcore, d.type, d.numa, d.health) for d in devices] == [
        (f"xpu-1-kunlun-{i}", i, 100, 98304, 100, "kunlun", 1 if i >= 2 else 0, True) for i in range(5)
    ]
    assert source.devices(NodeView(name="xpu-1")) == []


def test_a_capacity_beyond_any_node_is_refused_not_built() -> None:
    (driver,) = [d for d in DriverManager().load_entry_points().drivers if d.name == "kunlun-card"]
    assert driver.node_source is not None
    with pytest.raises(DecodeError, match="more than 1024 cards"):
        driver.node_source.devices(NodeView(name="x", capacity={"kunlunxin.com/xpu": 2**63 - 1}))
