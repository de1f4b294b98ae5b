"""NVIDIA GPUs for hami-core: the `nvidia` vendor driver (spec section 1).

Devices come from the simulation source (``HAMI_FAKE_DEVICES``) only; probing real hardware through
NVML is not implemented yet.
"""

from __future__ import annotations

from hami_core import DeviceInfo, VendorSpec, fake_devices, hookimpl

__all__ = ["SPEC", "__version__", "hami_discover_devices", "hami_vendor_drivers"]

__version__ = "0.1.0"

SPEC = VendorSpec(
    name="nvidia",
    vendor_key="NVIDIA",
    register_annotation="hami.io/node-nvidia-register",
    handshake_annotation="hami.io/node-handshake",
    encoding="json",
    count_resource="nvidia.com/gpu",
    liveness="allocatable",
    writes_reported=False,
)


@hookimpl
def hami_vendor_drivers() -> list[VendorSpec]:
    """The one vendor this package provides."""
    return [SPEC]


@hookimpl
def hami_discover_devices(driver_name: str, node_name: str) -> list[DeviceInfo] | None:
    """Devices listed for this driver in the ``HAMI_FAKE_DEVICES`` file; ``None`` without that source."""
    return fake_devices(driver_name)
