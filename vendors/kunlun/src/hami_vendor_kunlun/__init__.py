"""Kunlunxin XPUs (vXPU) for hami-core: the `kunlun` vendor driver (spec section 1).

Devices come from the simulation source (``HAMI_FAKE_DEVICES``) only; probing real hardware through
the XPU management library is not implemented yet.
"""

from __future__ import annotations

from hami_core import DeviceInfo, VendorSpec, fake_devices, hookimpl

__all__ = ["SPEC", "__version__", "hami_discover_devices", "hami_vendor_drivers"]

__version__ = "0.1.0"

SPEC = VendorSpec(
    name="kunlun",
    vendor_key="XPU",
    register_annotation="hami.io/node-register-xpu",
    handshake_annotation="hami.io/node-handshake-xpu",
    encoding="json",
    count_resource="kunlunxin.com/vxpu",
    liveness="handshake",
    writes_reported=True,
)


@hookimpl
def hami_vendor_drivers() -> list[VendorSpec]:
    """The one vendor this package provides."""
    return [SPEC]


@hookimpl
def hami_discover_devices(driver_name: str, node_name: str) -> list[DeviceInfo] | None:
    """Devices listed for this driver in the ``HAMI_FAKE_DEVICES`` file; ``None`` without that source."""
    return fake_devices(driver_name)
