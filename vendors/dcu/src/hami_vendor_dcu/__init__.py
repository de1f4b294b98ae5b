"""Hygon DCUs for hami-core: the `dcu` vendor driver (spec section 1).

Devices come from the simulation source (``HAMI_FAKE_DEVICES``) only; probing real hardware through
the DCU management library is not implemented yet.
"""

from __future__ import annotations

from hami_core import DeviceConfig, DeviceInfo, VendorSpec, fake_devices, hookimpl

__all__ = ["__version__", "hami_discover_devices", "hami_vendor_drivers"]

__version__ = "0.1.0"


@hookimpl
def hami_vendor_drivers(device_config: DeviceConfig) -> list[VendorSpec]:
    """The one vendor this package provides; its settings are HAMi's device config section ``hygon``."""
    settings = device_config.section(
        "hygon",
        resourceCountName="hygon.com/dcunum",
        resourceMemoryName="hygon.com/dcumem",
        resourceCoreName="hygon.com/dcucores",
        memoryFactor=1,
    )
    return [
        VendorSpec(
            name="dcu",
            vendor_key="DCU",
            register_annotation="hami.io/node-dcu-register",
            handshake_annotation="hami.io/node-handshake-dcu",
            encoding="legacy",
            count_resource=str(settings["resourceCountName"]),
            liveness="handshake",
            writes_reported=True,
        )
    ]


@hookimpl
def hami_discover_devices(driver_name: str, node_name: str) -> list[DeviceInfo] | None:
    """Devices listed for this driver in the ``HAMI_FAKE_DEVICES`` file; ``None`` without that source."""
    return fake_devices(driver_name)
