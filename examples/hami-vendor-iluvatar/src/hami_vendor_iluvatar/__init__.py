"""Iluvatar GPUs for hami-core, one driver per chip: a vendor HAMi supports that hami-core does not ship.

HAMi configures Iluvatar per chip: the chip's CommonWord is the vendor key and appears in both
annotation keys (``hami.io/node-<chip>-register``, ``hami.io/node-handshake-<chip>``), the register value
uses the legacy colon encoding, and the count resource is ``iluvatar.ai/<chip>-vgpu``. One entry point,
one ``VendorSpec`` per chip: ``--vendors iluvatar`` selects every chip, ``--vendors iluvatar-bi-v150`` one.
The chips are HAMi's device config list ``iluvatars`` (``--device-config``), these four by default.
"""

from __future__ import annotations

from hami_core import DeviceConfig, DeviceInfo, VendorSpec, fake_devices, hookimpl

__all__ = ["CHIPS", "__version__", "hami_discover_devices", "hami_vendor_drivers", "spec_for"]

__version__ = "0.1.0"

#: The chips of HAMi's default device configuration (their CommonWords).
CHIPS = ("MR-V100", "MR-V50", "BI-V150", "BI-V100")


def spec_for(chip: str, count_resource: str = "") -> VendorSpec:
    """The description of one chip's driver, named ``iluvatar-<chip in lower case>``."""
    return VendorSpec(
        name=f"iluvatar-{chip.lower()}",
        vendor_key=chip,
        register_annotation=f"hami.io/node-{chip}-register",
        handshake_annotation=f"hami.io/node-handshake-{chip}",
        encoding="legacy",
        count_resource=count_resource or f"iluvatar.ai/{chip}-vgpu",
        liveness="handshake",
        writes_reported=True,
    )


@hookimpl
def hami_vendor_drivers(device_config: DeviceConfig) -> list[VendorSpec]:
    """One driver per chip of the device config's ``iluvatars`` list."""
    default = [{"commonWord": chip, "resourceCountName": f"iluvatar.ai/{chip}-vgpu"} for chip in CHIPS]
    chips = device_config.entries(
        "iluvatars",
        default,
        chipName="",
        commonWord="",
        resourceCountName="",
        resourceMemoryName="",
        resourceCoreName="",
    )
    return [spec_for(str(c["commonWord"]), str(c["resourceCountName"])) for c in chips]


@hookimpl
def hami_discover_devices(driver_name: str, node_name: str) -> list[DeviceInfo] | None:
    """Devices listed for this chip's driver in the ``HAMI_FAKE_DEVICES`` file; ``None`` without it."""
    return fake_devices(driver_name)
