"""``hami vendors``: table, JSON, selection options, failed drivers on stderr, one real subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from plugins.driverkit import IN_TREE, FakeDist, good_driver

from hami_core.cli import main
from hami_core.cli.vendors import JSON_KEYS, driver_options, drivers_from_options

NVIDIA = {
    "name": "nvidia",
    "vendor_key": "NVIDIA",
    "register_annotation": "hami.io/node-nvidia-register",
    "handshake_annotation": "hami.io/node-handshake",
    "encoding": "json",
    "count_resource": "nvidia.com/gpu",
    "liveness": "allocatable",
    "writes_reported": False,
    "sources": ["annotation"],
    "package": "hami-vendor-nvidia",
    "version": "0.1.0",
}


def without_settings(entry: dict[str, object]) -> dict[str, object]:
    """An entry of ``hami vendors --json`` without its settings (those are tested with the device config)."""
    settings = entry.pop("settings")
    assert isinstance(settings, dict)
    return entry


@pytest.fixture
def runner(monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.delenv("HAMI_VENDORS", raising=False)
    monkeypatch.delenv("HAMI_COUNT_RESOURCES", raising=False)
    return CliRunner()


def test_json_lists_every_installed_driver_with_exactly_the_documented_keys(runner: CliRunner) -> None:
    result = runner.invoke(main, ["vendors", "--json"])
    assert result.exit_code == 0, result.output
    listed = json.loads(result.stdout)
    assert all(tuple(entry) == JSON_KEYS for entry in listed)
    assert set(IN_TREE) <= {entry["name"] for entry in listed}
    nvidia = next(e for e in listed if e["name"] == "nvidia")
    assert nvidia["settings"]["nvidia.resourceCountName"] == {"value": "nvidia.com/gpu", "from": "default"}
    assert without_settings(nvidia) == NVIDIA
    assert result.stderr == ""


def test_the_table_shows_one_row_per_driver(runner: CliRunner) -> None:
    result = runner.invoke(main, ["vendors", "--vendors", "nvidia,kunlun"])
    assert result.exit_code == 0, result.output
    header, *rows = result.stdout.split("\n\n")[0].splitlines()
    assert header.split() == [
        "NAME", "VENDOR", "KEY", "SOURCE", "REGISTER", "HANDSHAKE", "ENCODING", "COUNT", "RESOURCE",
        "LIVENESS", "REPORTED_", "PACKAGE",
    ]  # fmt: skip
    assert [row.split() for row in rows] == [
        ["nvidia", "NVIDIA", "annotation", "hami.io/node-nvidia-register", "hami.io/node-handshake", "json",
         "nvidia.com/gpu", "allocatable", "no", "hami-vendor-nvidia", "0.1.0"],
        ["kunlun", "XPU", "annotation", "hami.io/node-register-xpu", "hami.io/node-handshake-xpu", "json",
         "kunlunxin.com/vxpu", "handshake", "yes", "hami-vendor-kunlun", "0.1.0"],
        ["kunlun-card", "kunlun", "node", "-", "-", "-", "kunlunxin.com/xpu", "devices", "no",
         "hami-vendor-kunlun", "0.1.0"],
    ]  # fmt: skip
    assert "kunlun settings (device config section: value):" in result.stdout
    assert "  kunlun.resourceCountName = 'kunlunxin.com/xpu'  (default)" in result.stdout


def test_selection_and_count_resource_override_come_from_the_environment(runner: CliRunner) -> None:
    env = {"HAMI_VENDORS": "nvidia", "HAMI_COUNT_RESOURCES": "nvidia=nvidia.com/gpu-shared"}
    result = runner.invoke(main, ["vendors", "--json"], env=env)
    assert result.exit_code == 0, result.output
    assert [without_settings(e) for e in json.loads(result.stdout)] == [
        NVIDIA | {"count_resource": "nvidia.com/gpu-shared"}
    ]


def test_count_resource_option_may_repeat(runner: CliRunner) -> None:
    args = [
        "vendors",
        "--json",
        "--count-resource",
        "mlu=cambricon.com/vmlu",
        "--count-resource",
        "dcu=x.io/y",
    ]
    listed = json.loads(runner.invoke(main, args).stdout)
    resources = {e["name"]: e["count_resource"] for e in listed}
    assert (resources["mlu"], resources["dcu"], resources["nvidia"]) == (
        "cambricon.com/vmlu",
        "x.io/y",
        "nvidia.com/gpu",
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--vendors", "nvidia,nvdia"], "unknown vendor driver 'nvdia' (installed: "),
        (["--count-resource", "nvidia"], "count resource override 'nvidia': expected DRIVER=RESOURCE"),
        (["--vendors", "mlu", "--count-resource", "nvidia=a.io/b"], "count resource override for 'nvidia'"),
    ],
)
def test_a_bad_selection_exits_2_with_a_one_line_error(
    runner: CliRunner, args: list[str], message: str
) -> None:
    result = runner.invoke(main, ["vendors", *args])
    assert result.exit_code == 2
    assert message in result.stderr
    assert result.stdout == ""


def test_a_driver_that_failed_to_load_is_reported_on_stderr_and_the_listing_still_works(
    runner: CliRunner, fake_dist: FakeDist
) -> None:
    fake_dist("hami-vendor-broken", "raise RuntimeError('boom')\n", entry_name="broken")
    result = runner.invoke(main, ["vendors", "--json"])
    assert result.exit_code == 0
    assert set(IN_TREE) <= {e["name"] for e in json.loads(result.stdout)}
    assert result.stderr == "error: broken (hami-vendor-broken 1.2.3): import failed: RuntimeError: boom\n"


def test_conflicting_drivers_exit_1_naming_both_packages(runner: CliRunner, fake_dist: FakeDist) -> None:
    fake_dist("hami-vendor-gpu-twin", good_driver("twin", key="NVIDIA"), entry_name="twin")
    result = runner.invoke(main, ["vendors"])
    assert result.exit_code == 1
    assert (
        "vendor key 'NVIDIA' is claimed by driver 'nvidia' (hami-vendor-nvidia 0.1.0) and driver "
        "'twin' (hami-vendor-gpu-twin 1.2.3)" in result.stderr
    )
    assert runner.invoke(main, ["vendors", "--vendors", "twin"]).exit_code == 0


@click.command()
@driver_options
def daemon(vendors: str | None, count_resources: tuple[str, ...], device_config: str | None) -> None:
    """Stands in for a daemon using the shared options."""
    _, drivers = drivers_from_options(vendors, count_resources, device_config)
    click.echo(" ".join(f"{d.name}:{d.count_resource}" for d in drivers))


def test_daemons_share_the_options_and_get_the_selected_drivers(runner: CliRunner) -> None:
    result = runner.invoke(daemon, ["--vendors", "dcu,nvidia", "--count-resource", "dcu=hygon.com/dcu"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "dcu:hygon.com/dcu nvidia:nvidia.com/gpu\n"
    assert runner.invoke(daemon, ["--vendors", "nope"]).exit_code == 2


def test_the_command_runs_as_a_real_process() -> None:
    hami = Path(sys.executable).with_name("hami")
    env = {k: v for k, v in os.environ.items() if k not in ("HAMI_VENDORS", "HAMI_COUNT_RESOURCES")}
    done = subprocess.run(
        [str(hami), "vendors", "--json", "--vendors", "nvidia"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert [without_settings(e) for e in json.loads(done.stdout)] == [NVIDIA]
