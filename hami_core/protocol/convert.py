"""DeviceInfo <-> plain dict with the protocol's JSON key names (a cattrs converter).

``device_to_dict`` writes every key (zero values included); ``device_from_dict`` takes missing keys as
zero values and refuses unknown keys, wrong types and out-of-range integers with a ``ValueError`` that
names the key, e.g. ``migProfiles[0].memoryMB``. These dicts are for tools and tests (the ``hami codec``
command, conformance data); the wire format itself is written by the codecs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from hami_core.protocol.errors import member_path
from hami_core.protocol.model import (
    INT32,
    INT64,
    UINT32,
    UINT64,
    DeviceInfo,
    IntRange,
    MigProfile,
)

__all__ = ["DEVICE_KEYS", "device_from_dict", "device_to_dict", "profile_from_dict", "profile_to_dict"]

#: The keys of a device dict, in the order ``device_to_dict`` writes them.
DEVICE_KEYS = (
    "id",
    "index",
    "count",
    "devmem",
    "devcore",
    "type",
    "numa",
    "mode",
    "health",
    "migProfiles",
    "custominfo",
    "devicevendor",
)

_PLACEMENT_FIELDS: dict[str, IntRange] = {"start": UINT32, "size": UINT32}
_PROFILE_FIELDS: dict[str, type | IntRange] = {
    "name": str,
    "memoryMB": INT32,
    "core": INT32,
    "sliceCount": UINT32,
    "placements": list,
}
_DEVICE_FIELDS: dict[str, type | IntRange] = {
    "id": str,
    "index": UINT64,
    "count": INT32,
    "devmem": INT32,
    "devcore": INT32,
    "type": str,
    "numa": INT64,
    "mode": str,
    "health": bool,
    "migProfiles": list,
    "custominfo": dict,
    "devicevendor": str,
}
#: Keys that may hold null: a null list is an empty one, a null custominfo / placements is absent.
_NULLABLE = {"migProfiles", "custominfo", "placements"}


def _make_converter() -> cattrs.Converter:
    converter = cattrs.Converter(forbid_extra_keys=True)
    memory_mb, slice_count = override(rename="memoryMB"), override(rename="sliceCount")
    mig_profiles = override(rename="migProfiles")
    custominfo = override(omit=True)  # copied by device_to_dict itself: cattrs would recurse into it
    converter.register_unstructure_hook(
        MigProfile,
        make_dict_unstructure_fn(MigProfile, converter, memory_mb=memory_mb, slice_count=slice_count),
    )
    converter.register_structure_hook(
        MigProfile,
        make_dict_structure_fn(
            MigProfile,
            converter,
            _cattrs_forbid_extra_keys=True,
            memory_mb=memory_mb,
            slice_count=slice_count,
        ),
    )
    converter.register_unstructure_hook(
        DeviceInfo,
        make_dict_unstructure_fn(DeviceInfo, converter, mig_profiles=mig_profiles, custominfo=custominfo),
    )
    converter.register_structure_hook(
        DeviceInfo,
        make_dict_structure_fn(
            DeviceInfo, converter, _cattrs_forbid_extra_keys=True, mig_profiles=mig_profiles
        ),
    )
    return converter


_CONVERTER = _make_converter()


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__


def _check_fields(obj: object, fields: Mapping[str, type | IntRange], path: str) -> None:
    """Raise ``ValueError`` naming the first key of ``obj`` that is unknown, mistyped or out of range."""
    if not isinstance(obj, Mapping):
        raise ValueError(f"{path or 'device'}: expected an object, got {_kind(obj)}")
    for key, value in obj.items():
        where = member_path(path, key)
        expected = fields.get(key) if isinstance(key, str) else None
        if expected is None:
            raise ValueError(f"{where}: unknown key (known: {', '.join(fields)})")
        if value is None and key in _NULLABLE:
            continue
        if isinstance(expected, IntRange):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{where}: expected an integer ({expected.go_type}), got {_kind(value)}")
            if value not in expected:
                raise ValueError(f"{where}: {value} is out of range for {expected.go_type}")
        elif not isinstance(value, expected):
            raise ValueError(f"{where}: expected {expected.__name__}, got {_kind(value)}")
        if key == "custominfo" and not all(isinstance(k, str) for k in value):
            raise ValueError(f"{where}: keys must be strings")


def profile_from_dict(obj: Any, path: str = "") -> MigProfile:
    """A MigProfile from ``{name, memoryMB, core, sliceCount, placements}``; missing keys are zero."""
    _check_fields(obj, _PROFILE_FIELDS, path)
    for position, placement in enumerate(obj.get("placements") or ()):
        _check_fields(placement, _PLACEMENT_FIELDS, f"{path}.placements[{position}]".lstrip("."))
    return _CONVERTER.structure(dict(obj), MigProfile)


def profile_to_dict(profile: MigProfile) -> dict[str, Any]:
    """A MigProfile with every key; ``placements`` is ``None`` or a list."""
    result: dict[str, Any] = _CONVERTER.unstructure(profile, MigProfile)
    return result


def device_from_dict(obj: Any) -> DeviceInfo:
    """A DeviceInfo from a dict with the protocol's JSON keys; missing keys are zero values.

    Raises ``ValueError`` naming the key for an unknown key, a wrong type or an out-of-range integer."""
    _check_fields(obj, _DEVICE_FIELDS, "")
    data = dict(obj)
    if data.get("migProfiles") is None:
        data.pop("migProfiles", None)
    for position, profile in enumerate(data.get("migProfiles", ())):
        profile_from_dict(profile, f"migProfiles[{position}]")  # validates with the full path
    try:
        device: DeviceInfo = _CONVERTER.structure(data, DeviceInfo)
    except cattrs.BaseValidationError as exc:  # pragma: no cover  (_check_fields found every case)
        raise ValueError("; ".join(cattrs.transform_error(exc))) from None
    return device


def device_to_dict(device: DeviceInfo) -> dict[str, Any]:
    """Every key of the device, with the protocol's JSON key names; ``migProfiles`` is a list and
    ``custominfo`` a dict or ``None``."""
    raw: dict[str, Any] = _CONVERTER.unstructure(device, DeviceInfo)
    raw["migProfiles"] = list(raw["migProfiles"])
    raw["custominfo"] = None if device.custominfo is None else dict(device.custominfo)
    return {key: raw[key] for key in DEVICE_KEYS}
