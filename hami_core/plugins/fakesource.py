"""A device source for simulations and tests: the JSON file named by ``HAMI_FAKE_DEVICES`` (the guide's
section 1), driver name -> device list in the JSON register encoding."""

from __future__ import annotations

import json
import os

from hami_core.protocol.codecs import JSON_CODEC
from hami_core.protocol.errors import DecodeError
from hami_core.protocol.model import DeviceInfo

__all__ = ["FAKE_DEVICES_ENV", "fake_devices"]

#: The environment variable naming the fake device file.
FAKE_DEVICES_ENV = "HAMI_FAKE_DEVICES"


def fake_devices(driver_name: str) -> list[DeviceInfo] | None:
    """The devices the fake device file lists for ``driver_name``; ``None`` when ``HAMI_FAKE_DEVICES`` is
    unset or empty, or the file has no entry for the driver (no source, not "no devices"). A file that
    cannot be read or does not parse raises ``ValueError`` naming the file and what is wrong."""
    path = os.environ.get(FAKE_DEVICES_ENV, "")
    if not path:
        return None
    where = f"{FAKE_DEVICES_ENV}={path}"
    try:
        with open(path, encoding="utf-8") as file:
            document = json.load(file)
    except OSError as error:
        raise ValueError(f"{where}: cannot read it: {error.strerror or error}") from None
    except ValueError as error:
        raise ValueError(f"{where}: not valid JSON: {error}") from None
    if not isinstance(document, dict):
        raise ValueError(
            f"{where}: expected an object of driver name -> device list, got {type(document).__name__}"
        )
    if driver_name not in document:
        return None
    entry = document[driver_name]
    if not isinstance(entry, list):
        raise ValueError(
            f"{where}: entry {driver_name!r} must be a list of devices, got {type(entry).__name__}"
        )
    try:
        return JSON_CODEC.decode(json.dumps(entry))
    except DecodeError as error:
        raise ValueError(f"{where}: entry {driver_name!r}: {error}") from None
