"""Node manifests as device plugins leave them: register annotations, and the allocatable counts."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["NVIDIA_REGISTER", "VENDORS", "Vendor", "node_manifest", "nvidia_register"]

_GPU = (
    '{{"id":"GPU-{node}-{k:02d}-8a3f6c1e-5b2d-4c7a-9e10","index":{k},"count":10,"devmem":{mem},'
    '"devcore":100,"type":"NVIDIA-Tesla V100-PCIE-32GB","numa":0,"mode":"hami-core","health":true}}'
)

NVIDIA_REGISTER = "hami.io/node-nvidia-register"


def nvidia_register(node: str, gpus: int = 8, first_devmem: int = 32768) -> str:
    """The JSON register value of ``gpus`` V100s; ``first_devmem`` varies the first one (a changed value)."""
    return (
        "["
        + ",".join(_GPU.format(node=node, k=k, mem=first_devmem if k == 0 else 32768) for k in range(gpus))
        + "]"
    )


def _dcu(node: str, count: int = 4) -> str:
    return "".join(f"DCU-{node}-{k},4,16384,100,DCU-Z100,0,true,{k},hami:" for k in range(count))


def _mlu(node: str) -> str:
    return f"MLU-{node}-0,10,23308,0,MLU-MLU370-X4,0,true,0,hami-core:"


def _xpu(node: str) -> str:
    return (
        f'[{{"id":"XPU-{node}-0","index":0,"count":4,"devmem":98304,"devcore":100,"type":"P800",'
        f'"numa":0,"mode":"hami-core","health":true}}]'
    )


@dataclass(frozen=True)
class Vendor:
    """One in-tree vendor as a node carries it: keys, a register value maker, the count resource."""

    name: str
    register: str
    handshake: str
    resource: str
    count: str
    devices: int
    value: Callable[[str], str] = field(repr=False)  # node name -> register value


VENDORS: Mapping[str, Vendor] = {
    "nvidia": Vendor(
        "nvidia", NVIDIA_REGISTER, "hami.io/node-handshake", "nvidia.com/gpu", "80", 8, nvidia_register
    ),
    "dcu": Vendor(
        "dcu", "hami.io/node-dcu-register", "hami.io/node-handshake-dcu", "hygon.com/dcunum", "16", 4, _dcu
    ),
    "mlu": Vendor(
        "mlu", "hami.io/node-mlu-register", "hami.io/node-handshake-mlu", "cambricon.com/mlu", "10", 1, _mlu
    ),
    "kunlun": Vendor(
        "kunlun",
        "hami.io/node-register-xpu",
        "hami.io/node-handshake-xpu",
        "kunlunxin.com/vxpu",
        "4",
        1,
        _xpu,
    ),
}


def node_manifest(
    name: str,
    vendors: Mapping[str, bool],
    labels: Mapping[str, str] | None = None,
    extra_annotations: Mapping[str, str] | None = None,
    extra_allocatable: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A Node carrying each named vendor's register value; ``vendors[name]`` says whether its plugin
    also left an allocatable count (``False``: a plugin that registered and then went silent)."""
    annotations: dict[str, str] = {}
    allocatable: dict[str, str] = {"cpu": "64", "memory": "512Gi", "pods": "110"}
    for vendor_name, counted in vendors.items():
        vendor = VENDORS[vendor_name]
        annotations[vendor.register] = vendor.value(name)
        if counted:
            allocatable[vendor.resource] = vendor.count
    annotations.update(extra_annotations or {})
    allocatable.update(extra_allocatable or {})
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, **(labels or {})},
            "annotations": annotations,
        },
        "status": {"capacity": dict(allocatable), "allocatable": allocatable},
    }
