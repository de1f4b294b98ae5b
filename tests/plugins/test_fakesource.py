"""The simulation device source behind ``HAMI_FAKE_DEVICES``, read from the environment."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from hami_core import FAKE_DEVICES_ENV, DeviceInfo, fake_devices


@pytest.fixture
def write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    """Writes the fake device file and names it in the environment."""

    def write(content: str) -> None:
        path = tmp_path / "devices.json"
        path.write_text(content)
        monkeypatch.setenv(FAKE_DEVICES_ENV, str(path))

    return write


def test_no_variable_or_empty_variable_means_no_source(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(FAKE_DEVICES_ENV, raising=False)
    assert fake_devices("nvidia") is None
    monkeypatch.setenv(FAKE_DEVICES_ENV, "")
    assert fake_devices("nvidia") is None


def test_devices_are_read_in_the_json_register_encoding(write: Callable[[str], None]) -> None:
    write(json.dumps({"nvidia": [{"id": "GPU-0", "count": 10, "health": True}, {}], "mlu": []}))
    assert fake_devices("nvidia") == [DeviceInfo(id="GPU-0", count=10, health=True), DeviceInfo()]
    assert fake_devices("mlu") == []
    assert fake_devices("dcu") is None


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{", "not valid JSON"),
        ("[]", "expected an object of driver name -> device list, got list"),
        ('{"nvidia": {"id": "x"}}', "entry 'nvidia' must be a list of devices, got dict"),
        ('{"nvidia": [{"count": 1e2}]}', "entry 'nvidia': "),
    ],
)
def test_a_bad_file_is_an_error_naming_the_file(
    write: Callable[[str], None], tmp_path: Path, content: str, message: str
) -> None:
    write(content)
    with pytest.raises(ValueError, match="^" + FAKE_DEVICES_ENV) as caught:
        fake_devices("nvidia")
    assert str(tmp_path / "devices.json") in str(caught.value)
    assert message in str(caught.value)


def test_a_missing_file_is_an_error_naming_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    missing = tmp_path / "nope.json"
    monkeypatch.setenv(FAKE_DEVICES_ENV, str(missing))
    with pytest.raises(ValueError, match=f"^{FAKE_DEVICES_ENV}={missing}: cannot read it: No such file"):
        fake_devices("nvidia")
