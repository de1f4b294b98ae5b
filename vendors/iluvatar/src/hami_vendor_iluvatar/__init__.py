"""Iluvatar GPUs for hami-core, one driver per chip (spec section 1b).

HAMi v2.10 (``pkg/device/iluvatar/device.go``) registers one vendor per entry of its device config's
``iluvatars``: the entry's ``commonWord`` is the vendor key and names both annotations
(``hami.io/node-<commonWord>-register``, legacy colon encoding; ``hami.io/node-handshake-<commonWord>``),
and the generic handshake check counts the entry's ``resourceCountName``. One entry point, one
``VendorSpec`` per chip: ``--vendors iluvatar`` selects every chip, ``--vendors iluvatar-bi-v150`` one.

The reporter's devices come from the simulation source (``HAMI_FAKE_DEVICES``) only.
"""

from __future__ import annotations

from hami_core import DeviceConfig, DeviceInfo, VendorSpec, fake_devices, hookimpl

__all__ = ["CHIPS", "__version__", "hami_discover_devices", "hami_vendor_drivers"]

__version__ = "0.1.0"

#: The chips of HAMi v2.10's device config (``iluvatars[].commonWord``, also their chip names).
CHIPS = ("MR-V100", "MR-V50", "BI-V150", "BI-V100")


def _default(chip: str) -> dict[str, str]:
    return {
        "chipName": chip,
        "commonWord": chip,
        "resourceCountName": f"iluvatar.ai/{chip}-vgpu",
        "resourceMemoryName": f"iluvatar.ai/{chip}.vMem",
        "resourceCoreName": f"iluvatar.ai/{chip}.vCore",
    }


@hookimpl
def hami_vendor_drivers(device_config: DeviceConfig) -> list[VendorSpec]:
    """One driver per chip of the device config's ``iluvatars``, named ``iluvatar-<chip in lower case>``."""
    chips = device_config.entries(
        "iluvatars",
        default=[_default(chip) for chip in CHIPS],
        chipName="",
        commonWord="",
        resourceCountName="",
        resourceMemoryName="",
        resourceCoreName="",
    )
    return [
        VendorSpec(
            name=f"iluvatar-{str(chip['commonWord']).lower()}",
            vendor_key=str(chip["commonWord"]),
            register_annotation=f"hami.io/node-{chip['commonWord']}-register",
            handshake_annotation=f"hami.io/node-handshake-{chip['commonWord']}",
            encoding="legacy",
            count_resource=str(chip["resourceCountName"]),
            liveness="handshake",
            writes_reported=True,
        )
        for chip in chips
    ]


@hookimpl
def hami_discover_devices(driver_name: str, node_name: str) -> list[DeviceInfo] | None:
    """Devices listed for this chip's driver in the ``HAMI_FAKE_DEVICES`` file; ``None`` without it."""
    return fake_devices(driver_name)
