"""The `iluvatar` drivers: the framework's contract for every chip, and HAMi v2.10's per-chip values."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import hami_vendor_iluvatar
import pytest

from hami_core import DeviceConfig, DeviceInfo
from hami_core.plugins import DriverManager, VendorDriver
from hami_core.testing import DriverContract

#: HAMi v2.10's chart device config (``iluvatars``).
HAMI_CHART = Path(__file__).resolve().parents[3] / ".." / "shared" / "hami" / "device-config.yaml"
CHIPS = ["MR-V100", "MR-V50", "BI-V150", "BI-V100"]


def _drivers(config: DeviceConfig | None = None) -> list[VendorDriver]:
    manager = DriverManager(device_config=config or DeviceConfig())
    manager.load_entry_points()
    return list(manager.select(["iluvatar"]))


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


@pytest.mark.parametrize("config", [None, HAMI_CHART], ids=["defaults", "hamis-chart"])
def test_one_driver_per_chip_with_hamis_keys(config: Path | None) -> None:
    """``iluvatar/device.go`` InitIluvatarDevice: per chip, ``hami.io/node-<commonWord>-register``
    (legacy), ``hami.io/node-handshake-<commonWord>``, the generic check on ``resourceCountName``."""
    drivers = {d.vendor_key: d for d in _drivers(DeviceConfig.load(config) if config else None)}
    assert sorted(drivers) == sorted(CHIPS)
    for chip, driver in drivers.items():
        assert driver.name == f"iluvatar-{chip.lower()}"
        assert (driver.register_annotation, driver.handshake_annotation) == (
            f"hami.io/node-{chip}-register",
            f"hami.io/node-handshake-{chip}",
        )
        assert (driver.encoding, driver.count_resource, driver.liveness.name, driver.sources) == (
            "legacy",
            f"iluvatar.ai/{chip}-vgpu",
            "handshake",
            ("annotation",),
        )


def test_hamis_chart_config_is_read_without_warnings() -> None:
    config = DeviceConfig.load(HAMI_CHART)
    _drivers(config)
    assert not [u for u in config.unknown() if u.startswith("iluvatars")]


def test_the_chips_are_the_device_configs(tmp_path: Path) -> None:
    path = tmp_path / "device-config.yaml"
    path.write_text(
        "iluvatars:\n- chipName: BI-V200\n  commonWord: BI-V200\n  resourceCountName: example.com/v200\n"
    )
    (driver,) = _drivers(DeviceConfig.load(path))
    assert (driver.name, driver.vendor_key, driver.count_resource) == (
        "iluvatar-bi-v200",
        "BI-V200",
        "example.com/v200",
    )
    assert driver.register_annotation == "hami.io/node-BI-V200-register"


def test_the_register_value_reads_as_hamis_get_node_devices() -> None:
    """DecodeNodeDevices: ``id,count,devmem,devcore,type,numa,health,index,mode:`` per device."""
    (driver,) = [d for d in _drivers() if d.vendor_key == "BI-V150"]
    assert driver.codec is not None
    assert driver.codec.decode(
        "ILU-0,4,32768,100,BI-V150,0,true,0,:ILU-1,4,32768,100,BI-V150,1,true,1,:"
    ) == [
        DeviceInfo(id="ILU-0", count=4, devmem=32768, devcore=100, type="BI-V150", health=True),
        DeviceInfo(
            id="ILU-1", index=1, count=4, devmem=32768, devcore=100, type="BI-V150", numa=1, health=True
        ),
    ]


def test_version_matches_the_distribution() -> None:
    version = importlib.metadata.version("hami-vendor-iluvatar")
    assert {hami_vendor_iluvatar.__version__, *(d.version for d in _drivers())} == {version}
