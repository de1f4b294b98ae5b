"""Enflame GCUs for hami-core: the `enflame-gcu` (whole GCUs) and `enflame-drs` (shared GCUs) drivers.

HAMi v2.10 registers two vendor keys for Enflame (spec 1b), both computed from the Node, neither with a
handshake, nothing written:

* ``GCU`` (``pkg/device/enflame/gcu.go``): N whole GCUs from ``status.capacity`` of ``enflame.com/gcu``,
  alive while that capacity is above 0;
* ``Enflame`` (``enflame/device.go``): one shared GCU per device of the DRS capacity annotation
  ``enflame.com/gcu-drs-capacity`` that Enflame's device plugin writes (its own JSON schema,
  ``{"devices": [{"index", "minor", "capacity"}], "profiles": {name: id}}``, read with the core's Go
  ``encoding/json``); always healthy.

The resource names are HAMi's device config section ``enflame``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from hami_core import (
    INT32,
    DecodeError,
    DeviceConfig,
    DeviceInfo,
    FromNode,
    JsonObject,
    NodeView,
    VendorSpec,
    capacity_count,
    fold_key,
    hookimpl,
    member_path,
    numbered_devices,
    parse_json,
    read_any,
    type_error,
)

__all__ = ["DRS_ANNOTATION", "__version__", "drs_gcus", "hami_vendor_drivers", "whole_gcus"]

__version__ = "0.1.0"

#: Enflame's device plugin describes the node's DRS-partitionable GCUs here (``GCUDrsCapacity``).
DRS_ANNOTATION = "enflame.com/gcu-drs-capacity"


def whole_gcus(node: NodeView, count: str) -> list[DeviceInfo]:
    """HAMi's GetNodeDevices for ``GCU``: N GCUs ``<node>-GCU-<i>``."""
    gcus = capacity_count(node, count, noun="GCUs")
    return numbered_devices(node, "GCU", gcus, count=1, devmem=100, devcore=100, type="GCU")


# --- Go's strconv and HAMi's parsing, as far as the DRS capacity needs them ------------------------------


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
    """HAMi's parseDRSCapacity of Go's ``any``: a float64 truncated to int32, a decimal string clamped."""
    if type(raw) is float:
        return int(raw) if INT32.low <= raw <= INT32.high else None
    if type(raw) is str:
        parsed = _atoi(raw.strip(_SPACE))
        return None if parsed is None else min(max(parsed, INT32.low), INT32.high)
    return None


def _string(value: Any, where: str) -> str:
    if type(value) is not str:
        raise type_error(where, value, "string")
    return value


def _drs_spec(value: str) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """The annotation as Go decodes it into HAMi's ``drsCapacitySpec``: devices and profiles. As Go does,
    a repeated ``devices`` decodes into the elements already there (a ``null`` element leaves one as it
    is), ``null`` makes it empty; a repeated ``profiles`` adds to the map, ``null`` empties it."""
    where = f"annotation {DRS_ANNOTATION}"
    spec = parse_json(value, where)
    devices: list[dict[str, Any]] = []  # Go's backing array: the slice is its first ``length`` elements
    length = 0
    profiles: dict[str, str] = {}
    if spec is not None and type(spec) is not JsonObject:
        raise type_error(where, spec, "drsCapacitySpec")
    for key, field in spec or ():
        name = fold_key(key)
        if name == "DEVICES" and field is None:
            devices, length = [], 0
        elif name == "DEVICES":
            if type(field) is not list:
                raise type_error(f"{where}: devices", field, "[]drsDeviceSpec")
            devices = devices if field else []
            devices += [{"index": "", "minor": "", "capacity": None}] * (len(field) - len(devices))
            for i, item in enumerate(field):
                devices[i] = _drs_device(item, devices[i], f"{where}: devices[{i}]")
            length = len(field)
        elif name == "PROFILES" and field is None:
            profiles = {}
        elif name == "PROFILES":
            if type(field) is not JsonObject:
                raise type_error(f"{where}: profiles", field, "map[string]string")
            for k, v in field:
                profiles[k] = "" if v is None else _string(v, member_path(f"{where}: profiles", k))
    return devices[:length], profiles


def _drs_device(item: Any, device: dict[str, Any], where: str) -> dict[str, Any]:
    """``device`` with the entry ``item`` decoded into it as Go decodes into a ``drsDeviceSpec``."""
    if item is None:
        return device
    if type(item) is not JsonObject:
        raise type_error(where, item, "drsDeviceSpec")
    device = dict(device)
    for key, field in item:
        name = fold_key(key).lower()
        if name == "capacity":  # Go's any: replaced, null included
            device["capacity"] = read_any(field, f"{where}.capacity")
        elif name in ("index", "minor") and field is not None:
            device[name] = _string(field, f"{where}.{name}")
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
    if not INT32.low <= max_memory * 1024 <= INT32.high:
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
