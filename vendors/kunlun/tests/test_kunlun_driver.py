"""The `kunlun` driver: the framework's contract, and the exact values of spec section 1."""

from __future__ import annotations

import hami_vendor_kunlun
import pytest

from hami_core import DecodeError, NodeView
from hami_core.plugins import VendorDriver
from hami_core.testing import DriverContract


class TestContract(DriverContract):
    driver_name = "kunlun"
    package = "hami-vendor-kunlun"

    def test_values_are_those_of_the_spec(self, driver: VendorDriver) -> None:
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
        assert hami_vendor_kunlun.__version__ == driver.version  # the kit checks it is the distribution's


class TestCardContract(DriverContract):
    driver_name = "kunlun-card"
    package = "hami-vendor-kunlun"
    uses_fake_source = False  # whole cards are the Node's capacity: nothing to publish
    node_views = (NodeView(name="xpu-1", capacity={"kunlunxin.com/xpu": 8}),)

    def test_whole_cards_are_what_hami_v210_computes(self, driver: VendorDriver) -> None:
        """``kunlun/device.go`` GetNodeDevices: N cards of 98304 MiB, NUMA 1 from N/2 on, always healthy."""
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

    def test_a_capacity_beyond_any_node_is_refused_not_built(self, driver: VendorDriver) -> None:
        assert driver.node_source is not None
        with pytest.raises(DecodeError, match="more than 1024 cards"):
            driver.node_source.devices(NodeView(name="x", capacity={"kunlunxin.com/xpu": 2**63 - 1}))
