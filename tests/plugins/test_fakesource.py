"""The simulation device source behind ``HAMI_FAKE_DEVICES``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hami_core import FAKE_DEVICES_ENV, DeviceInfo, fake_devices


def write(tmp_path: Path, content: str) -> dict[str, str]:
    path = tmp_path / "devices.json"
    path.write_text(content)
    return {FAKE_DEVICES_ENV: str(path)}


def test_no_variable_or_empty_variable_means_no_source() -> None:
    assert fake_devices("nvidia", {}) is None
    assert fake_devices("nvidia", {FAKE_DEVICES_ENV: ""}) is None


def test_devices_are_read_in_the_json_register_encoding(tmp_path: Path) -> None:
    env = write(
        tmp_path, json.dumps({"nvidia": [{"id": "GPU-0", "count": 10, "health": True}, {}], "mlu": []})
    )
    assert fake_devices("nvidia", env) == [DeviceInfo(id="GPU-0", count=10, health=True), DeviceInfo()]
    assert fake_devices("mlu", env) == []
    assert fake_devices("dcu", env) is None


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "not valid JSON"),
        ("[]", "expected an object of driver name -> device list, got list"),
        ('{"nvidia": {"id": "x"}}', "entry 'nvidia' must be a list of devices, got dict"),
        ('{"nvidia": [{"count": 1e2}]}', "entry 'nvidia': "),
    ],
)
def test_a_bad_file_is_an_error_naming_the_file(tmp_path: Path, content: str, message: str) -> None:
    env = write(tmp_path, content)
    with pytest.raises(ValueError, match="^" + FAKE_DEVICES_ENV) as caught:
        fake_devices("nvidia", env)
    assert str(tmp_path / "devices.json") in str(caught.value)
    assert message in str(caught.value)


def test_a_missing_file_is_an_error_naming_it(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    with pytest.raises(ValueError, match=f"^{FAKE_DEVICES_ENV}={missing}: cannot read it: No such file"):
        fake_devices("nvidia", {FAKE_DEVICES_ENV: str(missing)})


def test_the_environment_is_read_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = write(tmp_path, json.dumps({"kunlun": [{"id": "XPU-0"}]}))
    monkeypatch.setenv(FAKE_DEVICES_ENV, env[FAKE_DEVICES_ENV])
    assert fake_devices("kunlun") == [DeviceInfo(id="XPU-0")]
