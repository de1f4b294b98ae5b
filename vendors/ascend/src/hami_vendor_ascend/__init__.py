"""Huawei Ascend NPUs for hami-core, one driver per chip model (spec section 1b).

HAMi v2.10 (``pkg/device/ascend/device.go``) registers one vendor per entry of its device config's
``vnpus.configs``: the entry's ``commonWord`` is the vendor key and names both annotations
(``hami.io/node-register-<commonWord>``, JSON; ``hami.io/node-handshake-<commonWord>``), and the generic
handshake check counts the entry's ``resourceName``. One entry point, one ``VendorSpec`` per chip:
``--vendors ascend`` selects every chip, ``--vendors ascend910b3`` one.

The reporter's devices come from the simulation source (``HAMI_FAKE_DEVICES``) only.
"""

from __future__ import annotations

from hami_core import DeviceConfig, DeviceInfo, VendorSpec, fake_devices, hookimpl

__all__ = ["CHIPS", "__version__", "hami_discover_devices", "hami_vendor_drivers"]

__version__ = "0.1.0"

#: The chips of HAMi v2.10's chart device config (``vnpus.configs``): chip name and CommonWord.
CHIPS = (
    ("910A", "Ascend910A"),
    ("910B2", "Ascend910B2"),
    ("910B3", "Ascend910B3"),
    ("910B4-1", "Ascend910B4-1"),
    ("910B4", "Ascend910B4"),
    ("310P3", "Ascend310P"),
    ("Ascend910", "Ascend910C"),
)


def _default(chip: str, word: str) -> dict[str, str]:
    resource = f"huawei.com/{word}"
    return {
        "chipName": chip,
        "commonWord": word,
        "resourceName": resource,
        "resourceMemoryName": f"{resource}-memory",
        "resourceCoreName": f"{resource}-core",
    }


@hookimpl
def hami_vendor_drivers(device_config: DeviceConfig) -> list[VendorSpec]:
    """One driver per chip of the device config's ``vnpus.configs``."""
    chips = device_config.entries(
        "vnpus.configs",
        default=[_default(chip, word) for chip, word in CHIPS],
        chipName="",
        commonWord="",
        resourceName="",
        resourceMemoryName="",
        resourceCoreName="",
        memoryAllocatable=0,
        memoryCapacity=0,
        memoryFactor=0,
        aiCore=0,
        aiCPU=0,
        runtimeClassName="",
        overwriteEnv=False,
        superPod=False,
        templates=(),
    )
    return [
        VendorSpec(
            name=str(chip["commonWord"]).lower(),
            vendor_key=str(chip["commonWord"]),
            register_annotation=f"hami.io/node-register-{chip['commonWord']}",
            handshake_annotation=f"hami.io/node-handshake-{chip['commonWord']}",
            encoding="json",
            count_resource=str(chip["resourceName"]),
            liveness="handshake",
            writes_reported=True,
        )
        for chip in chips
    ]


@hookimpl
def hami_discover_devices(driver_name: str, node_name: str) -> list[DeviceInfo] | None:
    """Devices listed for this chip's driver in the ``HAMI_FAKE_DEVICES`` file; ``None`` without it."""
    return fake_devices(driver_name)
