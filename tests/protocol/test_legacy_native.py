"""The C legacy encoder (hami_core/protocol/_legacy_native.c): built wherever it can be, used first,
switched off by HAMI_NO_NATIVE, and declining what only the strict encoder may decide.

Its agreement with the strict encoder on generated devices is in test_fastpath.py (every property runs
against both fast encoders) and with HAMi's own EncodeNodeDevices in tests/oracle.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hami_core.protocol import fastpath
from hami_core.protocol.errors import EncodeError
from hami_core.protocol.legacy import encode_legacy, encode_legacy_strict
from hami_core.protocol.model import DeviceInfo


def _can_build_c_extensions() -> bool:
    compiler = (sysconfig.get_config_var("CC") or "cc").split()[0]
    headers = Path(sysconfig.get_paths()["include"], "Python.h")
    return shutil.which(compiler) is not None and headers.is_file()


def _native() -> Any:
    from hami_core.protocol import _legacy_native

    _legacy_native.bind(DeviceInfo)
    return _legacy_native


def test_the_c_encoder_is_built_and_used_wherever_it_can_be() -> None:
    """Where a C compiler and Python's headers are (this machine, CI), the install built the
    extension, and the legacy codec uses it unless HAMI_NO_NATIVE says not to. Without them the
    msgspec encoder serves (and test_fastpath.py runs every property against it either way)."""
    try:
        _native()
        built = True
    except ImportError:
        built = False
    if _can_build_c_extensions():
        assert built, "a C compiler is here but hami_core/protocol/_legacy_native was not built"
    switched_off = bool(os.environ.get("HAMI_NO_NATIVE"))
    assert fastpath.NATIVE_LEGACY_ENCODER is (built and not switched_off)
    if not fastpath.NATIVE_LEGACY_ENCODER:
        assert fastpath.encode_legacy is fastpath.encode_legacy_rows


def test_a_device_model_the_c_encoder_cannot_read_falls_back_with_a_warning(
    native: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Should DeviceInfo's fields stop being plain slots (another attrs), importing hami_core still
    works: one warning naming why, and the msgspec encoder serves."""

    def refuse(device_type: type) -> None:
        raise TypeError("DeviceInfo.id is not an object slot")

    monkeypatch.setattr(native, "bind", refuse)
    with pytest.warns(RuntimeWarning, match=r"C legacy encoder is not used: DeviceInfo\.id is not"):
        assert fastpath._native_legacy_encoder() is None


def test_hami_no_native_switches_to_the_msgspec_encoder() -> None:
    program = (
        "from hami_core.protocol import fastpath\n"
        "from hami_core.protocol.legacy import encode_legacy\n"
        "from hami_core.protocol.model import DeviceInfo\n"
        "print(fastpath.NATIVE_LEGACY_ENCODER, fastpath.encode_legacy is fastpath.encode_legacy_rows,\n"
        "      encode_legacy([DeviceInfo(id='GPU-0', count=10, health=True)]))\n"
    )
    env = {**os.environ, "HAMI_NO_NATIVE": "1"}
    out = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True", "GPU-0,10,0,0,,0,true,0,:"]


@pytest.fixture
def native() -> Any:
    try:
        return _native()
    except ImportError:
        pytest.fail(
            "the C encoder was not built (no C compiler or Python headers at install): its own tests "
            "need it; hami-core itself runs without it"
        )


class _Device(DeviceInfo):
    """A subclass could override how its fields read; only exact DeviceInfo records are the C path's."""


def _devices() -> Iterator[DeviceInfo]:
    yield DeviceInfo(id="GPU-0", count=10, devmem=32768, devcore=100, type="A100", health=True)
    yield DeviceInfo(id="GPU-1", index=1, numa=1, mode="hami-core")


@pytest.mark.parametrize(
    "devices",
    [
        pytest.param(_devices(), id="a generator (it would be empty to the strict encoder afterwards)"),
        pytest.param(type("Devices", (list,), {})(_devices()), id="a list subclass"),
        pytest.param([*_devices(), _Device(id="x")], id="a DeviceInfo subclass"),
        pytest.param([*_devices(), "GPU-2"], id="not a device"),
        pytest.param([DeviceInfo(id="a:b")], id="a colon in the id"),
        pytest.param([DeviceInfo(type="a,b")], id="a comma in the type"),
        pytest.param([DeviceInfo(mode="\udc80")], id="a lone surrogate"),
        pytest.param([DeviceInfo(index=2**63)], id="an index over int64"),
    ],
)
def test_the_c_encoder_declines_what_the_strict_encoder_decides(native: Any, devices: object) -> None:
    assert native.encode_legacy(devices) is None


def test_a_record_with_an_unset_field_is_declined(native: Any) -> None:
    device = DeviceInfo(id="GPU-0")
    object.__delattr__(device, "type")
    assert native.encode_legacy([device]) is None


def test_long_values_grow_past_the_stack_buffer(native: Any) -> None:
    """Thousands of records and long, non-ASCII strings: the text leaves the 2 KiB buffer on the stack."""
    devices = [
        DeviceInfo(
            id=f"GPU-{i}-" + "x" * 500,
            index=i,
            count=i,
            devmem=-i,
            devcore=2**31 - 1,
            type="显卡" * 50,
            numa=-(2**63) if i % 2 else 2**63 - 1,
            mode="hami-core",
            health=bool(i % 3),
        )
        for i in range(3000)
    ]
    assert native.encode_legacy(devices) == encode_legacy_strict(devices)
    assert native.encode_legacy(tuple(devices)) == encode_legacy_strict(devices)
    assert native.encode_legacy([]) == ""


def test_the_codec_still_refuses_what_the_c_encoder_declines() -> None:
    with pytest.raises(EncodeError, match=r"^device 1: id 'a:b' holds ',' or ':'"):
        encode_legacy([DeviceInfo(id="ok"), DeviceInfo(id="a:b")])


def test_bind_refuses_a_class_whose_fields_are_not_slots(native: Any) -> None:
    class Plain:
        id = "x"

    with pytest.raises(TypeError, match=r"Plain\.id is not an object slot"):
        native.bind(Plain)
    with pytest.raises(AttributeError):
        native.bind(type("Empty", (), {}))
    with pytest.raises(TypeError, match="takes the DeviceInfo class"):
        native.bind(DeviceInfo())
    native.bind(DeviceInfo)
    assert native.encode_legacy([DeviceInfo(id="a")]) == "a,0,0,0,,0,false,0,:"
