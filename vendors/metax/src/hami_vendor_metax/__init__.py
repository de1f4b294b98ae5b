"""MetaX GPUs for hami-core: the `metax-gpu` (whole GPUs) and `metax-sgpu` (shared GPUs) vendor drivers.

HAMi v2.10 registers two vendor keys for MetaX (spec 1b), both computed from the Node, neither with a
handshake, nothing written:

* ``Metax-GPU`` (``pkg/device/metax/device.go``): N whole GPUs from ``status.capacity`` of
  ``metax-tech.com/gpu``, alive while that capacity is above 0;
* ``Metax-SGPU`` (``metax/sdevice.go``, ``metax/protocol.go``): the devices MetaX's own device plugin lists
  in ``metax-tech.com/node-gpu-devices`` (its own JSON schema, read with the core's Go ``encoding/json``),
  registered while that list has devices.

The resource names are HAMi's device config section ``metax``.
"""

from __future__ import annotations

from typing import Any

from hami_core import (
    INT32,
    DecodeError,
    DeviceConfig,
    DeviceInfo,
    FromNode,
    IntRange,
    JsonObject,
    NodeView,
    VendorSpec,
    capacity_count,
    fold_key,
    hookimpl,
    numbered_devices,
    parse_json,
    read_int,
    type_error,
)

__all__ = ["SGPU_ANNOTATION", "__version__", "hami_vendor_drivers", "sgpus", "whole_gpus"]

__version__ = "0.1.0"

#: MetaX's device plugin lists the node's sGPU-capable devices here (``protocol.go`` MetaxSDeviceAnno).
SGPU_ANNOTATION = "metax-tech.com/node-gpu-devices"


def whole_gpus(node: NodeView, count: str) -> list[DeviceInfo]:
    """HAMi's GetNodeDevices for ``Metax-GPU``: N GPUs ``<node>-metax-<i>`` of 64 GiB."""
    gpus = capacity_count(node, count, noun="GPUs")
    return numbered_devices(node, "metax", gpus, count=1, devmem=65536, devcore=100, type="Metax-GPU")


#: ``MetaxSDeviceInfo`` (protocol.go): each field's JSON key, Go type and zero value.
_SDEVICE: dict[str, tuple[type | IntRange, Any]] = {
    "uuid": (str, ""),
    "bdf": (str, ""),
    "model": (str, ""),
    "totalDevCount": (INT32, 0),
    "totalCompute": (INT32, 0),
    "totalVRam": (INT32, 0),
    "availableDevCount": (INT32, 0),
    "availableCompute": (INT32, 0),
    "availableVRam": (INT32, 0),
    "numa": (INT32, 0),
    "healthy": (bool, False),
    "qosPolicy": (str, ""),
    "linkZone": (INT32, 0),
}
#: The fields by the key Go matches them with (``fold_key``).
_FIELDS = {fold_key(key): (key, kind) for key, (kind, _) in _SDEVICE.items()}


def _sdevice(item: Any, where: str) -> dict[str, Any]:
    """One entry as Go decodes it into a ``MetaxSDeviceInfo``: fields by JSON key."""
    if item is None:  # HAMi dereferences it and panics
        raise DecodeError(f"{where}: a null device")
    if type(item) is not JsonObject:
        raise type_error(where, item, "MetaxSDeviceInfo")
    fields = {key: zero for key, (_, zero) in _SDEVICE.items()}
    for key, value in item:
        name, kind = _FIELDS.get(fold_key(key), ("", None))
        if kind is None or value is None:  # unknown keys are skipped, null leaves the field as it is
            continue
        if isinstance(kind, IntRange):
            fields[name] = read_int(value, kind, where, name)
        elif type(value) is not kind:
            raise type_error(f"{where}.{name}", value, "string" if kind is str else "bool")
        else:
            fields[name] = value
    return fields


def sgpus(node: NodeView) -> list[DeviceInfo]:
    """HAMi's GetNodeDevices for ``Metax-SGPU`` (``convertMetaxSDeviceToHAMIDevice``): one device per
    entry of the annotation, in order; an empty list or ``null`` is no devices."""
    value = node.annotations.get(SGPU_ANNOTATION)
    if value is None:
        return []
    where = f"annotation {SGPU_ANNOTATION}"
    listed = parse_json(value, where)
    if listed is None:
        return []
    if type(listed) is not list:
        raise type_error(where, listed, "[]*MetaxSDeviceInfo")
    devices = []
    for i, item in enumerate(listed):
        f = _sdevice(item, f"{where}: [{i}]")
        info = {"QosPolicy": f["qosPolicy"], "Model": f["model"], "LinkZone": f["linkZone"]}
        devices.append(
            DeviceInfo(id=f["uuid"], index=i, count=f["totalDevCount"], devmem=f["totalVRam"],
                       devcore=f["totalCompute"], type="Metax-SGPU", numa=f["numa"], mode="",
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
