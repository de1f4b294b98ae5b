"""Acme accelerators for hami-core: an example of a third-party vendor driver, for a made-up vendor.

It is the package ``docs/vendor-guide.md`` builds in its first section: one vendor whose node-side plugin
writes ``hami.io/node-acme-register`` in the legacy colon encoding and heartbeats ``Reported_<time>``
into ``hami.io/node-handshake-acme``, the count resource being ``acme.com/gpu``. Nothing in hami-core
knows it: installed with pip, it is found through its ``hami.vendors`` entry point.
"""

from __future__ import annotations

from hami_core import DeviceInfo, VendorSpec, fake_devices, hookimpl

__all__ = ["__version__", "hami_discover_devices", "hami_vendor_drivers"]

__version__ = "0.1.0"


@hookimpl
def hami_vendor_drivers() -> list[VendorSpec]:
    """The one vendor this package provides."""
    return [
        VendorSpec(
            name="acme",
            vendor_key="ACME",
            register_annotation="hami.io/node-acme-register",
            handshake_annotation="hami.io/node-handshake-acme",
            encoding="legacy",
            count_resource="acme.com/gpu",
            liveness="handshake",
            writes_reported=True,
        )
    ]


@hookimpl
def hami_discover_devices(driver_name: str, node_name: str) -> list[DeviceInfo] | None:
    """Devices listed for this driver in the ``HAMI_FAKE_DEVICES`` file; ``None`` without that source."""
    return fake_devices(driver_name)
