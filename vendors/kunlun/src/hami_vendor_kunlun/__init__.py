"""Kunlunxin XPUs for hami-core: the `kunlun` (vXPU) and `kunlun-card` (whole cards) vendor drivers.

HAMi v2.10 registers two vendor keys for Kunlunxin (spec 1b): ``XPU``, the vXPU devices the node's plugin
writes into ``hami.io/node-register-xpu`` (JSON, with the handshake; ``pkg/device/kunlun/vdevice.go``), and
``kunlun``, whole cards computed from the Node's ``kunlunxin.com/xpu`` capacity, always healthy, nothing
written (``pkg/device/kunlun/device.go``). The resource names are HAMi's device config section ``kunlun``.

The reporter's devices come from the simulation source (``HAMI_FAKE_DEVICES``) only; probing real
hardware through the XPU management library is not implemented yet.
"""

from __future__ import annotations

from hami_core import (
    DeviceConfig,
    DeviceInfo,
    FromNode,
    NodeView,
    VendorSpec,
    capacity_count,
    fake_devices,
    hookimpl,
)

__all__ = ["__version__", "hami_discover_devices", "hami_vendor_drivers", "whole_cards"]

__version__ = "0.1.0"


def whole_cards(node: NodeView, count: str) -> list[DeviceInfo]:
    """HAMi's ``GetNodeDevices`` for whole cards: N cards of 96 GiB, the second half on NUMA node 1."""
    cards = capacity_count(node, count, noun="cards")
    return [
        DeviceInfo(id=f"{node.name}-kunlun-{i}", index=i, count=100, devmem=98304, devcore=100, type="kunlun",
                   numa=1 if i >= cards // 2 else 0, health=True)
        for i in range(cards)
    ]  # fmt: skip


@hookimpl
def hami_vendor_drivers(device_config: DeviceConfig) -> list[VendorSpec]:
    """vXPU from the register annotation, whole cards from the capacity."""
    names = device_config.section(
        "kunlun",
        resourceCountName="kunlunxin.com/xpu",
        resourceVCountName="kunlunxin.com/vxpu",
        resourceVMemoryName="kunlunxin.com/vxpu-memory",
    )
    count = names["resourceCountName"]
    return [
        VendorSpec(
            name="kunlun",
            vendor_key="XPU",
            count_resource=names["resourceVCountName"],
            register_annotation="hami.io/node-register-xpu",
            handshake_annotation="hami.io/node-handshake-xpu",
            encoding="json",
            liveness="handshake",
            writes_reported=True,
        ),
        VendorSpec(
            name="kunlun-card",
            vendor_key="kunlun",
            count_resource=count,
            from_node=FromNode(lambda node: whole_cards(node, count), capacity=count),
        ),
    ]


@hookimpl
def hami_discover_devices(driver_name: str, node_name: str) -> list[DeviceInfo] | None:
    """Devices listed for the vXPU driver in the ``HAMI_FAKE_DEVICES`` file; ``None`` without that source
    (whole cards are the Node's capacity: the kubelet's device plugin advertises them, nothing to write)."""
    return fake_devices(driver_name) if driver_name == "kunlun" else None
