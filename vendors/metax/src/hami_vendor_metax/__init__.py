"""MetaX GPUs for hami-core: the `metax-gpu` (whole GPUs) and `metax-sgpu` (shared GPUs) vendor drivers.

HAMi v2.10 registers two vendor keys for MetaX (spec 1b), both computed from the Node, neither with a
handshake, nothing written:

* ``Metax-GPU`` (``pkg/device/metax/device.go``): N whole GPUs from ``status.capacity`` of
  ``metax-tech.com/gpu``, alive while that capacity is above 0;
* ``Metax-SGPU`` (``metax/sdevice.go``, ``metax/protocol.go``): the devices MetaX's own device plugin lists
  in ``metax-tech.com/node-gpu-devices`` (its own JSON schema, read here with Go ``encoding/json`` rules),
  registered while that list has devices.

The resource names are HAMi's device config section ``metax``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
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

__all__ = ["SGPU_ANNOTATION", "__version__", "hami_vendor_drivers", "sgpus", "whole_gpus"]

__version__ = "0.1.0"

#: MetaX's device plugin lists the node's sGPU-capable devices here (``protocol.go`` MetaxSDeviceAnno).
SGPU_ANNOTATION = "metax-tech.com/node-gpu-devices"


def whole_gpus(node: NodeView, count: str) -> list[DeviceInfo]:
    """HAMi's GetNodeDevices for ``Metax-GPU``: N GPUs ``<node>-metax-<i>`` of 64 GiB."""
    gpus = capacity_count(node, count, noun="GPUs")
    return numbered_devices(node, "metax", gpus, count=1, devmem=65536, devcore=100, type="Metax-GPU")


class _Pairs(list[tuple[str, Any]]):
    """A JSON object as its key/value pairs in document order (Go assigns fields in that order)."""


class _Float(float):
    """A JSON number written with a fraction or an exponent (Go refuses it for an integer field)."""


def _refuse(constant: str) -> Any:
    raise ValueError(f"invalid character {constant[0]!r} looking for beginning of value")


def _go_json(value: str) -> Any:
    """``value`` parsed as Go's encoding/json parses it (strict JSON), objects as ``_Pairs``."""
    if len(value.encode("utf-8", "surrogatepass")) > MAX_ANNOTATION_BYTES:
        raise DecodeError(f"value is larger than {MAX_ANNOTATION_BYTES} bytes")
    try:
        return json.loads(value, object_pairs_hook=_Pairs, parse_float=_Float, parse_constant=_refuse)
    except ValueError as error:
        raise DecodeError(f"not JSON: {error}") from None


def _fold(key: str) -> str:
    """Go's case-insensitive key match for ASCII field names (the Kelvin sign and long s fold too)."""
    return "".join({"\u212a": "k", "\u017f": "s"}.get(c, c.lower() if c.isascii() else c) for c in key)


def _int32(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or isinstance(value, _Float):
        raise DecodeError(f"{where}: cannot unmarshal {json.dumps(value)[:40]} into Go value of type int32")
    if not -(2**31) <= value < 2**31:
        raise DecodeError(f"{where}: number {value} overflows int32")
    return value


def _typed(kind: type) -> Callable[[Any, str], Any]:
    def check(value: Any, where: str) -> Any:
        if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
            name = {str: "string", bool: "bool"}[kind]
            raise DecodeError(
                f"{where}: cannot unmarshal {json.dumps(value)[:40]} into Go value of type {name}"
            )
        return value

    return check


#: ``MetaxSDeviceInfo`` (protocol.go): JSON key -> (Go type check, zero value).
_SDEVICE: dict[str, tuple[Callable[[Any, str], Any], Any]] = {
    "uuid": (_typed(str), ""),
    "bdf": (_typed(str), ""),
    "model": (_typed(str), ""),
    "totaldevcount": (_int32, 0),
    "totalcompute": (_int32, 0),
    "totalvram": (_int32, 0),
    "availabledevcount": (_int32, 0),
    "availablecompute": (_int32, 0),
    "availablevram": (_int32, 0),
    "numa": (_int32, 0),
    "healthy": (_typed(bool), False),
    "qospolicy": (_typed(str), ""),
    "linkzone": (_int32, 0),
}


def _sdevice(item: Any, where: str) -> dict[str, Any]:
    if item is None:  # HAMi dereferences it and panics
        raise DecodeError(f"{where}: a null device")
    if not isinstance(item, _Pairs):
        raise DecodeError(
            f"{where}: cannot unmarshal {json.dumps(item)[:40]} into Go struct MetaxSDeviceInfo"
        )
    fields = {key: zero for key, (_, zero) in _SDEVICE.items()}
    for key, value in item:
        name = _fold(key)
        if name in _SDEVICE and value is not None:  # unknown keys are ignored, null leaves the field as it is
            fields[name] = _SDEVICE[name][0](value, f"{where}.{key}")
    return fields


def sgpus(node: NodeView) -> list[DeviceInfo]:
    """HAMi's GetNodeDevices for ``Metax-SGPU`` (``convertMetaxSDeviceToHAMIDevice``): one device per
    entry of the annotation, in order; an empty list or ``null`` is no devices."""
    value = node.annotations.get(SGPU_ANNOTATION)
    if value is None:
        return []
    listed = _go_json(value)
    if listed is None:
        return []
    if not isinstance(listed, list) or isinstance(listed, _Pairs):
        raise DecodeError(f"annotation {SGPU_ANNOTATION}: expected a JSON array of MetaxSDeviceInfo")
    devices = []
    for i, item in enumerate(listed):
        f = _sdevice(item, f"annotation {SGPU_ANNOTATION}: [{i}]")
        info = {"QosPolicy": f["qospolicy"], "Model": f["model"], "LinkZone": f["linkzone"]}
        devices.append(
            DeviceInfo(id=f["uuid"], index=i, count=f["totaldevcount"], devmem=f["totalvram"],
                       devcore=f["totalcompute"], type="Metax-SGPU", numa=f["numa"], mode="",
                       health=f["healthy"], custominfo=info)
        )  # fmt: skip
    return devices


@hookimpl
def hami_vendor_drivers(device_config: DeviceConfig) -> list[VendorSpec]:
    """Whole GPUs from the capacity, sGPUs from MetaX's annotation."""
    names = device_config.section(
        "metax",
        resourceCountName="metax-tech.com/gpu",
        resourceVCountName="metax-tech.com/sgpu",
        resourceVMemoryName="metax-tech.com/vmemory",
        resourceVCoreName="metax-tech.com/vcore",
        sgpuTopologyAware=False,
    )
    count = str(names["resourceCountName"])
    return [
        VendorSpec(
            name="metax-gpu",
            vendor_key="Metax-GPU",
            count_resource=count,
            from_node=FromNode(lambda node: whole_gpus(node, count), capacity=count, liveness="capacity"),
        ),
        VendorSpec(
            name="metax-sgpu",
            vendor_key="Metax-SGPU",
            count_resource=str(names["resourceVCountName"]),
            from_node=FromNode(sgpus, annotations=SGPU_ANNOTATION),
        ),
    ]
