"""The example third-party driver: the framework's contract for every chip, and HAMi's per-chip values."""

from __future__ import annotations

from pathlib import Path

import pytest

from hami_core.plugins import DeviceConfig, DriverManager
from hami_core.testing import DriverContract


class TestMRV100(DriverContract):
    driver_name = "iluvatar-mr-v100"
    package = "hami-vendor-iluvatar"


class TestMRV50(DriverContract):
    driver_name = "iluvatar-mr-v50"
    package = "hami-vendor-iluvatar"


class TestBIV150(DriverContract):
    driver_name = "iluvatar-bi-v150"
    package = "hami-vendor-iluvatar"


class TestBIV100(DriverContract):
    driver_name = "iluvatar-bi-v100"
    package = "hami-vendor-iluvatar"


@pytest.mark.parametrize("chip", ["MR-V100", "MR-V50", "BI-V150", "BI-V100"])
def test_per_chip_values_are_hamis(chip: str) -> None:
    manager = DriverManager()
    manager.load_entry_points()
    (driver,) = [d for d in manager.select(["iluvatar"]) if d.vendor_key == chip]
    assert driver.register_annotation == f"hami.io/node-{chip}-register"
    assert driver.handshake_annotation == f"hami.io/node-handshake-{chip}"
    assert (driver.encoding, driver.count_resource, driver.liveness.name) == (
        "legacy",
        f"iluvatar.ai/{chip}-vgpu",
        "handshake",
    )


def test_one_plugin_name_selects_every_chip() -> None:
    manager = DriverManager()
    manager.load_entry_points()
    assert sorted(d.name for d in manager.select(["iluvatar"])) == [
        "iluvatar-bi-v100",
        "iluvatar-bi-v150",
        "iluvatar-mr-v100",
        "iluvatar-mr-v50",
    ]


def test_the_chips_come_from_hamis_device_config(tmp_path: Path) -> None:
    """HAMi's ``iluvatars`` list: one driver per entry, its count resource the entry's."""
    path = tmp_path / "device-config.yaml"
    path.write_text(
        "iluvatars:\n- chipName: MR-V100\n  commonWord: MR-V100\n  resourceCountName: iluvatar.ai/mr\n"
    )
    manager = DriverManager(device_config=DeviceConfig.load(path))
    manager.load_entry_points()
    drivers = manager.select(["iluvatar"])
    assert [(d.vendor_key, d.count_resource) for d in drivers] == [("MR-V100", "iluvatar.ai/mr")]
