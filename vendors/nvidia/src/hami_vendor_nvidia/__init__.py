"""NVIDIA GPUs for hami-core: the `nvidia` vendor driver (spec sections 1 and 1b).

The devices come from ``hami.io/node-nvidia-register`` (JSON), with the topology pair scores of
``hami.io/node-nvidia-score`` kept beside them, as HAMi's ``nvidia/device.go`` reads them.

Devices come from the simulation source (``HAMI_FAKE_DEVICES``) only; probing real hardware through
NVML is not implemented yet.
"""

from __future__ import annotations

from hami_core import DeviceConfig, DeviceInfo, VendorSpec, fake_devices, hookimpl

__all__ = ["__version__", "hami_discover_devices", "hami_vendor_drivers"]

__version__ = "0.1.0"

#: HAMi's device config section ``nvidia`` (``NvidiaConfig``), with HAMi's chart defaults.
SETTINGS: dict[str, str | int | float | bool | tuple[object, ...]] = {
    "resourceCountName": "nvidia.com/gpu",
    "resourceMemoryName": "nvidia.com/gpumem",
    "resourceMemoryPercentageName": "nvidia.com/gpumem-percentage",
    "resourceCoreName": "nvidia.com/gpucores",
    "resourcePriorityName": "nvidia.com/priority",
    "overwriteEnv": False,
    "defaultMemory": 0,
    "defaultCores": 0,
    "defaultGPUNum": 1,
    "preConfiguredDeviceMemory": 0,
    "memoryFactor": 1,
    "deviceSplitCount": 10,
    "deviceMemoryScaling": 1.0,
    "deviceCoreScaling": 1.0,
    "disableCoreLimit": False,
    "enableNumaTopology": False,
    "gpuCorePolicy": "default",
    "libCudaLogLevel": 1,
    "runtimeClassName": "",
    "migProfileAllowlist": (),
}


@hookimpl
def hami_vendor_drivers(device_config: DeviceConfig) -> list[VendorSpec]:
    """The one vendor this package provides; its settings are HAMi's device config section ``nvidia``."""
    settings = device_config.section("nvidia", **SETTINGS)
    return [
        VendorSpec(
            name="nvidia",
            vendor_key="NVIDIA",
            register_annotation="hami.io/node-nvidia-register",
            handshake_annotation="hami.io/node-handshake",
            encoding="json",
            count_resource=str(settings["resourceCountName"]),
            liveness="allocatable",
            writes_reported=False,
            pair_scores_annotation="hami.io/node-nvidia-score",
        )
    ]


@hookimpl
def hami_discover_devices(driver_name: str, node_name: str) -> list[DeviceInfo] | None:
    """Devices listed for this driver in the ``HAMI_FAKE_DEVICES`` file; ``None`` without that source."""
    return fake_devices(driver_name)
