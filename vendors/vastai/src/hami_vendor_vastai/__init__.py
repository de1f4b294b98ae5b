"""Vastai accelerators for hami-core: the `vastai` vendor driver (spec section 1b).

HAMi v2.10 (``pkg/device/vastai/device.go``) reads ``hami.io/node-va-register`` (JSON) with the
handshake ``hami.io/node-handshake-va`` and its generic liveness check on ``vastaitech.com/va``, and
sets every device's ``devcore`` to 100 whatever the wire says ("only for calscore use"); so does this
driver, with the core's ``fixed_fields`` codec. The count resource is HAMi's device config section ``vastai``.

The reporter's devices come from the simulation source (``HAMI_FAKE_DEVICES``) only.
"""

from __future__ import annotations

from hami_core import JSON_CODEC, DeviceConfig, DeviceInfo, VendorSpec, fake_devices, fixed_fields, hookimpl

__all__ = ["CODEC", "__version__", "hami_discover_devices", "hami_vendor_drivers"]

__version__ = "0.1.0"

#: HAMi's JSON register encoding (either encoding is read, spec 3.4), ``devcore`` 100 on every device.
CODEC = fixed_fields(JSON_CODEC, devcore=100)


@hookimpl
def hami_vendor_drivers(device_config: DeviceConfig) -> list[VendorSpec]:
    """The one vendor this package provides."""
    settings = device_config.section("vastai", resourceCountName="vastaitech.com/va")
    return [
        VendorSpec(
            name="vastai",
            vendor_key="Vastai",
            register_annotation="hami.io/node-va-register",
            handshake_annotation="hami.io/node-handshake-va",
            encoding=CODEC,
            count_resource=settings["resourceCountName"],
            liveness="handshake",
            writes_reported=True,
        )
    ]


@hookimpl
def hami_discover_devices(driver_name: str, node_name: str) -> list[DeviceInfo] | None:
    """Devices listed for this driver in the ``HAMI_FAKE_DEVICES`` file; ``None`` without that source."""
    return fake_devices(driver_name)
