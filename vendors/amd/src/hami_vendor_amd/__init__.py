"""AMD GPUs for hami-core: the `amd` vendor driver (spec section 1b).

HAMi v2.10 (``pkg/device/amd/device.go``) reads ``hami.io/node-amd-register`` (JSON) and has no handshake:
its liveness is the Node's ``status.capacity`` of ``amd.com/gpu`` (0 or absent: unhealthy), so nothing is
ever stamped for AMD. The resource names are HAMi's device config section ``amd``.

The reporter's devices come from the simulation source (``HAMI_FAKE_DEVICES``) only.
"""

from __future__ import annotations

from hami_core import DeviceConfig, DeviceInfo, VendorSpec, fake_devices, hookimpl

__all__ = ["__version__", "hami_discover_devices", "hami_vendor_drivers"]

__version__ = "0.1.0"


@hookimpl
def hami_vendor_drivers(device_config: DeviceConfig) -> list[VendorSpec]:
    """The one vendor this package provides."""
    settings = device_config.section(
        "amd",
        resourceCountName="amd.com/gpu",
        resourceMemoryName="amd.com/gpumem",
        resourceCoreName="amd.com/gpucores",
    )
    return [
        VendorSpec(
            name="amd",
            vendor_key="AMD",
            register_annotation="hami.io/node-amd-register",
            encoding="json",
            count_resource=settings["resourceCountName"],
            liveness="capacity",
        )
    ]


@hookimpl
def hami_discover_devices(driver_name: str, node_name: str) -> list[DeviceInfo] | None:
    """Devices listed for this driver in the ``HAMI_FAKE_DEVICES`` file; ``None`` without that source."""
    return fake_devices(driver_name)
