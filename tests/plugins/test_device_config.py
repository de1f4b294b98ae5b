"""HAMi's device-config.yaml as the drivers' settings: valid, unknown keys warned, bad values exit 2."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from click.testing import CliRunner

from hami_core.cli import main
from hami_core.plugins import DeviceConfig, DeviceConfigError, load_drivers
from hami_core.plugins.settings import Setting

#: HAMi's chart's own device config (``charts/hami`` ConfigMap), as shipped with HAMi v2.10.
HAMI_CHART = Path(__file__).resolve().parents[2] / ".." / "shared" / "hami" / "device-config.yaml"


def test_hamis_chart_config_keeps_a_cluster_moving_from_hami_on_its_resource_names() -> None:
    _, drivers = load_drivers(device_config=DeviceConfig.load(HAMI_CHART))
    counts = {d.name: d.count_resource for d in drivers}
    assert counts["mlu"] == "cambricon.com/vmlu"  # our default: cambricon.com/mlu
    assert counts["kunlun-card"] == "kunlunxin.com/xpu"
    assert counts["kunlun"] == "kunlunxin.com/vxpu"
    assert counts["nvidia"] == "nvidia.com/gpu" and counts["dcu"] == "hygon.com/dcunum"
    mlu = next(d for d in drivers if d.name == "mlu")
    assert ("cambricon", "resourceCountName", "cambricon.com/vmlu", True) in mlu.settings


def test_without_a_file_every_driver_has_its_defaults() -> None:
    _, drivers = load_drivers()
    assert {d.name: d.count_resource for d in drivers}["mlu"] == "cambricon.com/mlu"


def test_unknown_keys_are_warnings(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "device-config.yaml"
    path.write_text("cambricon:\n  resourceCountName: cambricon.com/vmlu\n  resourceCountNmae: x\nacme: {}\n")
    with caplog.at_level(logging.WARNING, logger="hami_core.plugins.manager"):
        _, drivers = load_drivers(device_config=DeviceConfig.load(path))
    assert {d.name: d.count_resource for d in drivers}["mlu"] == "cambricon.com/vmlu"
    warned = [r.getMessage() for r in caplog.records]
    assert f"{path}: unknown key cambricon.resourceCountNmae, ignored" in warned
    assert f"{path}: unknown key acme (no installed driver reads this section), ignored" in warned


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cambricon:\n  resourceCountName: 5\n", "cambricon.resourceCountName: expected a string, got 5"),
        ("hygon:\n  memoryFactor: two\n", "hygon.memoryFactor: expected an integer, got 'two'"),
        ("nvidia:\n  overwriteEnv: 1\n", "nvidia.overwriteEnv: expected true or false, got 1"),
        ("kunlun: [1, 2]\n", "kunlun: expected a mapping, got [1, 2]"),
        ("- a\n- b\n", "expected a mapping of sections, got ['a', 'b']"),
        ("cambricon: {resourceCountName: [\n", "not YAML"),
        (b"nvidia: {resourceCountName: caf\xe9}\n", "not UTF-8 text"),
        ("[" * 5000 + "]" * 5000, "nested too deeply"),
        ("hygon:\n  memoryFactor: 2026-13-45\n", "not YAML: month must be in 1..12"),
        ("hygon:\n  memoryFactor: " + "9" * 5000 + "\n", "not YAML: Exceeds the limit (4300 digits)"),
    ],
)
def test_a_bad_value_is_one_line_and_exit_2(tmp_path: Path, text: str | bytes, expected: str) -> None:
    path = tmp_path / "device-config.yaml"
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    with pytest.raises(DeviceConfigError) as caught:
        load_drivers(device_config=DeviceConfig.load(path))
    assert expected in str(caught.value) and str(path) in str(caught.value)
    result = CliRunner().invoke(main, ["vendors", "--device-config", str(path)])
    assert result.exit_code == 2, result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0], result.stderr
    assert result.stdout == ""


def test_a_bad_value_stops_the_scheduler_with_exit_2(tmp_path: Path) -> None:
    path = tmp_path / "device-config.yaml"
    path.write_text("cambricon:\n  resourceCoreName: 7\n")
    result = CliRunner().invoke(main, ["scheduler", "run", "--device-config", str(path), "--read-only"])
    assert result.exit_code == 2, result.output
    assert "cambricon.resourceCoreName: expected a string, got 7" in result.stderr


def test_a_missing_file_is_one_line_and_exit_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["vendors", "--device-config", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 2
    assert "nope.yaml" in result.stderr and len(result.stderr.strip().splitlines()) == 1


def test_each_settings_type_takes_its_own_values_and_refuses_others() -> None:
    config = DeviceConfig({"acme": {"ratio": 2, "chips": ["a", "b"], "on": True, "n": 3}}, source="f")
    read = config.section("acme", ratio=0.5, chips=(), on=False, n=1, label="x")
    assert dict(read) == {"ratio": 2.0, "chips": ("a", "b"), "on": True, "n": 3, "label": "x"}
    assert isinstance(read["ratio"], float)
    cases: list[tuple[object, Setting, str]] = [
        (True, 0.5, "expected a number, got True"),
        (True, 1, "expected an integer, got True"),
        ("a", (), "expected a list, got 'a'"),
    ]
    for value, default, expected in cases:
        with pytest.raises(DeviceConfigError, match=f"^f: acme.k: {expected}$"):
            DeviceConfig({"acme": {"k": value}}, source="f").section("acme", k=default)
