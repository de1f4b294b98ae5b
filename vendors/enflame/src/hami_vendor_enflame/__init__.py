"""Enflame GCUs for hami-core: the `enflame-gcu` (whole GCUs) and `enflame-drs` (shared GCUs) drivers.

HAMi v2.10 registers two vendor keys for Enflame (spec 1b), both computed from the Node, neither with a
handshake, nothing written:

* ``GCU`` (``pkg/device/enflame/gcu.go``): N whole GCUs from ``status.capacity`` of ``enflame.com/gcu``,
  alive while that capacity is above 0;
* ``Enflame`` (``enflame/device.go``): one shared GCU per device of the DRS capacity annotation
  ``enflame.com/gcu-drs-capacity`` that Enflame's device plugin writes (its own JSON schema,
  ``{"devices": [{"index", "minor", "capacity"}], "profiles": {name: id}}``, read here with Go
  ``encoding/json`` rules); always healthy.

The resource names are HAMi's device config section ``enflame``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from hami_core import (
    MAX_ANNOTATION_BYTES,
    DecodeError,
    DeviceConfig,
    DeviceInfo,
    FromNode,
    NodeView,
    VendorSpec,
    capacity_count,
    hookimpl,
    numbered_devices,
)

__all__ = ["DRS_ANNOTATION", "__version__", "drs_gcus", "hami_vendor_drivers", "whole_gcus"]

__version__ = "0.1.0"

#: Enflame's device plugin describes the node's DRS-partitionable GCUs here (``GCUDrsCapacity``).
DRS_ANNOTATION = "enflame.com/gcu-drs-capacity"

_INT32 = range(-(2**31), 2**31)


def whole_gcus(node: NodeView, count: str) -> list[DeviceInfo]:
    """HAMi's GetNodeDevices for ``GCU``: N GCUs ``<node>-GCU-<i>``."""
    gcus = capacity_count(node, count, noun="GCUs")
    return numbered_devices(node, "GCU", gcus, count=1, devmem=100, devcore=100, type="GCU")


# --- Go's encoding/json and strconv, as far as the DRS capacity needs them ------------------------------


class _Pairs(list[tuple[str, Any]]):
    """A JSON object as its key/value pairs in document order (Go assigns fields in that order)."""


def _refuse(constant: str) -> Any:
    raise ValueError(f"invalid character {constant[0]!r} looking for beginning of value")


def _go_json(value: str) -> Any:
    """``value`` parsed as Go's encoding/json parses it (strict JSON), objects as ``_Pairs``; a number
    with a fraction or exponent is a float (``interface{}`` holds every number as float64)."""
    if len(value.encode("utf-8", "surrogatepass")) > MAX_ANNOTATION_BYTES:
        raise DecodeError(f"value is larger than {MAX_ANNOTATION_BYTES} bytes")
    try:
        return json.loads(value, object_pairs_hook=_Pairs, parse_constant=_refuse)
    except ValueError as error:
        raise DecodeError(f"not JSON: {error}") from None


def _fold(key: str) -> str:
    """Go's case-insensitive key match for ASCII field names (the Kelvin sign and long s fold too)."""
    return "".join({"\u212a": "k", "\u017f": "s"}.get(c, c.lower() if c.isascii() else c) for c in key)


def _kind(value: Any) -> str:
    kinds = {bool: "bool", str: "string", int: "number", float: "number", list: "array", _Pairs: "object"}
    return kinds.get(type(value), "null")


def _string(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise DecodeError(f"{where}: cannot unmarshal {_kind(value)} into Go value of type string")
    return value


#: What Go's strings.TrimSpace removes (unicode.IsSpace); Python's str.strip removes more.
_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"  # noqa: E501
_ATOI = re.compile(r"[+-]?[0-9]+\Z")


def _atoi(text: str) -> int | None:
    """Go's strconv.Atoi (64-bit int): ``None`` where it fails."""
    if not _ATOI.match(text):
        return None
    number = int(text)
    return number if -(2**63) <= number < 2**63 else None


def _profile(name: str) -> tuple[int, int]:
    """HAMi's parseProfile: ``"<slices>g.<memory>gb"`` -> (slices, memory GB), 0 where unreadable."""
    parts = name.strip(_SPACE).lower().split(".")
    if len(parts) < 2:
        return 0, 0
    size = _atoi(parts[0].strip(_SPACE).removesuffix("g"))
    if size is None:
        return 0, 0
    memory = _atoi(parts[1].strip(_SPACE).removesuffix("gb"))
    return size, memory or 0


def _capacity(raw: Any) -> int | None:
    """HAMi's parseDRSCapacity: a JSON number truncated to int32, a decimal string clamped to it."""
    if isinstance(raw, bool) or raw is None:
        return None
    if isinstance(raw, int | float):
        try:
            number = float(raw)
        except OverflowError:
            return None
        return int(number) if -(2**31) <= number <= 2**31 - 1 else None
    if isinstance(raw, str):
        parsed = _atoi(raw.strip(_SPACE))
        return None if parsed is None else min(max(parsed, -(2**31)), 2**31 - 1)
    return None


def _drs_spec(value: str) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The annotation as Go decodes it into HAMi's ``drsCapacitySpec``: devices and profiles."""
    where = f"annotation {DRS_ANNOTATION}"
    spec = _go_json(value)
    devices: list[dict[str, Any]] = []
    profiles: dict[str, str] = {}
    if spec is None:
        return devices, profiles
    if not isinstance(spec, _Pairs):
        raise DecodeError(f"{where}: cannot unmarshal {_kind(spec)} into Go value of type drsCapacitySpec")
    for key, field in spec:
        name = _fold(key)
        if name == "devices":
            if (field is not None and not isinstance(field, list)) or isinstance(field, _Pairs):
                raise DecodeError(f"{where}: {key}: cannot unmarshal {_kind(field)} into Go value of type []")
            devices = [_drs_device(item, f"{where}: {key}[{i}]") for i, item in enumerate(field or ())]
        elif name == "profiles":
            if field is None:  # null makes the map nil; a second object adds to the first (Go reuses the map)
                profiles = {}
            elif not isinstance(field, _Pairs):
                raise DecodeError(f"{where}: {key}: cannot unmarshal {_kind(field)} into Go map")
            else:
                profiles.update((k, "" if v is None else _string(v, f"{where}: {key}.{k}")) for k, v in field)
    return devices, profiles


def _drs_device(item: Any, where: str) -> dict[str, Any]:
    device: dict[str, Any] = {"index": "", "minor": "", "capacity": None}
    if item is None:  # a null element is a zero device (Go), refused below for its capacity
        return device
    if not isinstance(item, _Pairs):
        raise DecodeError(f"{where}: cannot unmarshal {_kind(item)} into Go value of type drsDeviceSpec")
    for key, field in item:
        name = _fold(key)
        if name == "capacity":
            device["capacity"] = field
        elif name in ("index", "minor") and field is not None:
            device[name] = _string(field, f"{where}.{key}")
    return device


def drs_gcus(node: NodeView) -> list[DeviceInfo]:
    """HAMi's GetNodeDevices for ``Enflame``: one shared GCU per DRS device, devmem the largest profile's
    memory (else its slice count) in GiB, custominfo ``{minor, index, profiles, maxSlice}``."""
    value = node.annotations.get(DRS_ANNOTATION)
    if value is None:
        return []
    where = f"annotation {DRS_ANNOTATION}"
    listed, profiles = _drs_spec(value)
    sizes = [_profile(name) for name in profiles]
    max_slice = max([0, *(s for s, _ in sizes)])
    max_memory = max([0, *(m for _, m in sizes)]) or max_slice
    if max_slice <= 0:
        raise DecodeError(f"{where}: no valid DRS profile (like 4g.16gb) among {sorted(profiles)!r:.80}")
    if max_memory * 1024 not in _INT32:
        raise DecodeError(f"{where}: a profile of {max_memory} GB is beyond int32 MiB (HAMi wraps it)")
    devices = []
    for position, item in enumerate(listed):
        index = _atoi(item["index"])
        index = position if index is None else index
        capacity = _capacity(item["capacity"])
        if capacity is None or capacity <= 0:
            raise DecodeError(
                f"{where}: devices[{position}]: invalid capacity {json.dumps(item['capacity'])}"
            )
        if index < 0:
            raise DecodeError(f"{where}: devices[{position}]: negative index {index} (HAMi wraps it)")
        minor = item["minor"].strip(_SPACE) or str(index)
        info = {"minor": minor, "index": str(index), "profiles": dict(profiles), "maxSlice": max_slice}
        devices.append(
            DeviceInfo(id=f"{node.name}-enflame-drs-{index}", index=index, count=capacity,
                       devmem=max_memory * 1024, devcore=100, type="Enflame", health=True, custominfo=info)
        )  # fmt: skip
    if not devices:
        raise DecodeError(f"{where}: no DRS devices listed")
    return devices


@hookimpl
def hami_vendor_drivers(device_config: DeviceConfig) -> list[VendorSpec]:
    """Whole GCUs from the capacity, shared GCUs from Enflame's DRS capacity annotation."""
    names = device_config.section(
        "enflame",
        resourceNameGCU="enflame.com/gcu",
        resourceNameDRSGCU="enflame.com/drs-gcu",
        resourceNameGCUMemory="enflame.com/gcu-memory",
        resourceNameGCUCore="enflame.com/gcu-core",
        resourceNameVGCU="",
        resourceNameVGCUPercentage="",
    )
    gcu = names["resourceNameGCU"]
    # InitEnflameDevice: the DRS resource, else the legacy shared-GCU one, else its default
    drs = names["resourceNameDRSGCU"] or names["resourceNameVGCU"] or "enflame.com/drs-gcu"
    return [
        VendorSpec(
            name="enflame-gcu",
            vendor_key="GCU",
            count_resource=gcu,
            from_node=FromNode(lambda node: whole_gcus(node, gcu), capacity=gcu, liveness="capacity"),
        ),
        VendorSpec(
            name="enflame-drs",
            vendor_key="Enflame",
            count_resource=drs,
            from_node=FromNode(drs_gcus, annotations=DRS_ANNOTATION),
        ),
    ]
