"""The `nvidia` driver: the framework's contract, and the exact values of spec section 1."""

from __future__ import annotations

from pathlib import Path

import hami_vendor_nvidia

from hami_core import DeviceConfig
from hami_core.plugins import DriverManager, VendorDriver
from hami_core.testing import DriverContract


class TestContract(DriverContract):
    driver_name = "nvidia"
    package = "hami-vendor-nvidia"

    def test_values_are_those_of_the_spec(self, driver: VendorDriver) -> None:
        assert (driver.vendor_key, driver.register_annotation, driver.handshake_annotation) == (
            "NVIDIA",
            "hami.io/node-nvidia-register",
            "hami.io/node-handshake",
        )
        assert (driver.encoding, driver.count_resource, driver.liveness.name, driver.writes_reported) == (
            "json",
            "nvidia.com/gpu",
            "allocatable",
            False,
        )
        assert driver.rules().pair_scores_annotation == "hami.io/node-nvidia-score"
        assert hami_vendor_nvidia.__version__ == driver.version  # the kit checks it is the distribution's


def test_settings_are_hamis_nvidia_section(tmp_path: Path) -> None:
    path = tmp_path / "device-config.yaml"
    path.write_text("nvidia:\n  resourceCountName: nvidia.com/vgpu\n  deviceSplitCount: 4\n")
    manager = DriverManager(device_config=DeviceConfig.load(path))
    (driver,) = [d for d in manager.load_entry_points().drivers if d.name == "nvidia"]
    assert driver.count_resource == "nvidia.com/vgpu"
    assert ("nvidia", "deviceSplitCount", 4, True) in driver.settings
    assert ("nvidia", "memoryFactor", 1, False) in driver.settings
    config = DeviceConfig.load(path)
    DriverManager(device_config=config).load_entry_points()
    assert config.unknown() == [], "every key of HAMi's nvidia section is the driver's"
