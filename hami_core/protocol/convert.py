"""DeviceInfo <-> plain dict with the JSON key names (``model.fields_of``), for ``hami codec`` and tests."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from hami_core.protocol.errors import member_path
from hami_core.protocol.model import DeviceInfo, IntRange, MigPlacement, MigProfile, fields_of

#: The keys of a device dict, in the order ``device_to_dict`` writes them (HAMi's key order).
DEVICE_KEYS = tuple(field.key for field in fields_of(DeviceInfo))


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__


def device_to_dict(record: DeviceInfo | MigProfile | MigPlacement) -> dict[str, Any]:
    """Every key of a DeviceInfo (or MigProfile), zero values included."""
    out: dict[str, Any] = {}
    for field in fields_of(type(record)):
        value = getattr(record, field.name)
        if field.kind is dict:
            value = None if value is None else dict(value)
        elif field.record is not None:
            value = None if value is None else [device_to_dict(item) for item in value]
        out[field.key] = value
    return out


def _from_dict(cls: type, obj: object, path: str) -> Any:
    """A record from a dict, missing keys zero; ``ValueError`` naming the first bad key
    (``migProfiles[0].memoryMB``)."""
    if not isinstance(obj, Mapping):
        raise ValueError(f"{path or 'device'}: expected an object, got {_kind(obj)}")
    by_key = {field.key: field for field in fields_of(cls)}
    values: dict[str, Any] = {}
    for key, value in obj.items():
        where = member_path(path, key)
        field = by_key.get(key) if isinstance(key, str) else None
        if field is None:
            raise ValueError(f"{where}: unknown key (known: {', '.join(by_key)})")
        kind = field.kind
        if value is None and (kind is dict or field.record is not None):
            continue  # a null list is an empty one (or absent, where the field keeps them apart)
        if isinstance(kind, IntRange):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"{where}: expected an integer ({kind.go_type}), got {_kind(value)}")
            if value not in kind:
                raise ValueError(f"{where}: {value} is out of range for {kind.go_type}")
        elif kind is dict:
            if not isinstance(value, dict):
                raise ValueError(f"{where}: expected dict, got {_kind(value)}")
            if not all(isinstance(k, str) for k in value):
                raise ValueError(f"{where}: keys must be strings")
        elif kind is str or kind is bool:
            if not isinstance(value, kind):
                raise ValueError(f"{where}: expected {kind.__name__}, got {_kind(value)}")
        elif not isinstance(value, list):
            raise ValueError(f"{where}: expected list, got {_kind(value)}")
        else:
            value = [_from_dict(kind, item, f"{where}[{position}]") for position, item in enumerate(value)]
        values[field.name] = value
    return cls(**values)


def device_from_dict(obj: Any) -> DeviceInfo:
    """A DeviceInfo from a dict (``_from_dict``)."""
    return cast(DeviceInfo, _from_dict(DeviceInfo, obj, ""))
