"""Cambricon MLUs for hami-core: the `mlu` vendor driver (spec sections 1 and 1b).

Two sources, as spec 1b says. Where the Node advertises the dynamic-smlu capacity of Cambricon's own
device plugin (``cambricon.com/mlu.smlu.vcore``, ``.vmemory``), the devices are computed from it as HAMi
v2.10 does (``pkg/device/cambricon/device.go``), always healthy, nothing written. Elsewhere the seed's
``hami.io/node-mlu-register`` (legacy encoding, with the handshake) is read, for plugins of HAMi before
2.3 that still write it. The resource names are HAMi's device config section ``cambricon``.

The reporter's devices come from the simulation source (``HAMI_FAKE_DEVICES``) only; probing real
hardware through CNDev is not implemented yet.
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
    memory_per_device,
    numbered_devices,
)

__all__ = ["__version__", "hami_discover_devices", "hami_vendor_drivers", "mlu_from_capacity"]

__version__ = "0.1.0"

#: One ``vmemory`` unit is 256 MiB (HAMi's ``MemoryFactor``).
_MIB_PER_VMEMORY = 256


def mlu_from_capacity(node: NodeView, cores: str, memory: str) -> list[DeviceInfo]:
    """HAMi's ``GetNodeDevices``: one MLU per 100 vcores, the vmemory shared out evenly. No vcore
    capacity means no devices here (HAMi answers an error, which keeps a stale list)."""
    mlus = capacity_count(node, cores, per_device=100, noun="MLUs")
    devmem = memory_per_device(node, memory, cores, factor=_MIB_PER_VMEMORY, per_device=100)
    return numbered_devices(node, "cambricon-mlu", mlus, count=100, devmem=devmem, devcore=100, type="MLU")


@hookimpl
def hami_vendor_drivers(device_config: DeviceConfig) -> list[VendorSpec]:
    """The one vendor this package provides, its resource names from HAMi's device config."""
    names = device_config.section(
        "cambricon",
        resourceCountName="cambricon.com/mlu",
        resourceMemoryName="cambricon.com/mlu.smlu.vmemory",
        resourceCoreName="cambricon.com/mlu.smlu.vcore",
    )
    cores, memory = names["resourceCoreName"], names["resourceMemoryName"]
    return [
        VendorSpec(
            name="mlu",
            vendor_key="MLU",
            count_resource=names["resourceCountName"],
            from_node=FromNode(lambda node: mlu_from_capacity(node, cores, memory), capacity=[cores, memory]),
            register_annotation="hami.io/node-mlu-register",
            handshake_annotation="hami.io/node-handshake-mlu",
            encoding="legacy",
            liveness="handshake",
            writes_reported=True,
        )
    ]


@hookimpl
def hami_discover_devices(driver_name: str, node_name: str) -> list[DeviceInfo] | None:
    """Devices listed for this driver in the ``HAMI_FAKE_DEVICES`` file; ``None`` without that source."""
    return fake_devices(driver_name)
