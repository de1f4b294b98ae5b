"""The `ascend` drivers: the framework's contract for every chip, and HAMi v2.10's per-chip values."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

import hami_vendor_ascend
import pytest

from hami_core import DeviceConfig, DeviceInfo
from hami_core.plugins import DriverManager, VendorDriver
from hami_core.testing import DriverContract

#: HAMi v2.10's chart device config (``vnpus.configs[].commonWord``, ``resourceName``).
HAMI_CHART = Path(__file__).resolve().parents[3] / ".." / "shared" / "hami" / "device-config.yaml"
WORDS = [
    "Ascend910A",
    "Ascend910B2",
    "Ascend910B3",
    "Ascend910B4-1",
    "Ascend910B4",
    "Ascend310P",
    "Ascend910C",
]


def _drivers(config: DeviceConfig | None = None) -> list[VendorDriver]:
    manager = DriverManager(device_config=config or DeviceConfig())
    manager.load_entry_points()
    return list(manager.select(["ascend"]))


class TestAscend910A(DriverContract):
    driver_name = "ascend910a"
    package = "hami-vendor-ascend"


class TestAscend910B41(DriverContract):
    driver_name = "ascend910b4-1"
    package = "hami-vendor-ascend"


class TestAscend910C(DriverContract):
    driver_name = "ascend910c"
    package = "hami-vendor-ascend"


@pytest.mark.parametrize("config", [None, HAMI_CHART], ids=["defaults", "hamis-chart"])
def test_one_driver_per_chip_with_hamis_keys(config: Path | None) -> None:
    """``ascend/device.go`` InitDevices: per chip, ``hami.io/node-register-<commonWord>`` (JSON),
    ``hami.io/node-handshake-<commonWord>``, the generic check on the chip's ``resourceName``."""
    drivers = {d.vendor_key: d for d in _drivers(DeviceConfig.load(config) if config else None)}
    assert sorted(drivers) == sorted(WORDS)
    for word, driver in drivers.items():
        assert driver.name == word.lower()
        assert (driver.register_annotation, driver.handshake_annotation) == (
            f"hami.io/node-register-{word}",
            f"hami.io/node-handshake-{word}",
        )
        assert (driver.encoding, driver.count_resource, driver.liveness.name, driver.sources) == (
            "json",
            f"huawei.com/{word}",
            "handshake",
            ("annotation",),
        )


def test_hamis_chart_config_is_read_without_warnings() -> None:
    config = DeviceConfig.load(HAMI_CHART)
    _drivers(config)
    assert not [u for u in config.unknown() if u.startswith("vnpus")]


def test_the_chips_are_the_device_configs(tmp_path: Path) -> None:
    path = tmp_path / "device-config.yaml"
    path.write_text(
        "vnpus:\n  hamiVnpuCore: false\n  configs:\n"
        "  - chipName: 910B9\n    commonWord: Ascend910B9\n    resourceName: example.com/npu\n"
    )
    (driver,) = _drivers(DeviceConfig.load(path))
    assert (driver.name, driver.vendor_key, driver.count_resource) == (
        "ascend910b9",
        "Ascend910B9",
        "example.com/npu",
    )
    assert driver.register_annotation == "hami.io/node-register-Ascend910B9"


def test_the_register_value_reads_as_hamis_get_node_devices() -> None:
    (driver,) = [d for d in _drivers() if d.vendor_key == "Ascend910B3"]
    assert driver.codec is not None
    value = (
        '[{"id":"npu-0","count":4,"devmem":65536,"devcore":20,"type":"Ascend910B3","numa":0,"health":true}]'
    )
    assert driver.codec.decode(value) == [
        DeviceInfo(id="npu-0", count=4, devmem=65536, devcore=20, type="Ascend910B3", health=True)
    ]


def test_version_matches_the_distribution() -> None:
    version = importlib.metadata.version("hami-vendor-ascend")
    assert {hami_vendor_ascend.__version__, *(d.version for d in _drivers())} == {version}
