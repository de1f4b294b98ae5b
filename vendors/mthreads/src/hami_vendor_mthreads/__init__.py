"""Moore Threads GPUs for hami-core: the `mthreads` vendor driver, devices from the Node's capacity.

HAMi v2.10 (``pkg/device/mthreads/device.go``) computes the GPUs from ``status.capacity``: one per 16
``mthreads.com/sgpu-core``, each with the ``sgpu-memory`` (512 MiB units) shared out by cores; always
healthy, no handshake, nothing written. HAMi wraps the memory per GPU to int32; here a value out of range is
an error (spec 1b). The resource names are HAMi's device config section ``mthreads``.
"""

from __future__ import annotations

from hami_core import (
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

__all__ = ["__version__", "hami_vendor_drivers", "sgpus"]

__version__ = "0.1.0"


def sgpus(node: NodeView, cores: str, memory: str) -> list[DeviceInfo]:
    """HAMi's GetNodeDevices: GPUs while i*16 < cores, devmem = memory*512*16/cores (Go's division)."""
    gpus = capacity_count(node, cores, per_device=16, noun="GPUs")
    total, mem = node.capacity.get(cores, 0), node.capacity.get(memory, 0)
    devmem = (abs(mem) * 8192 // total) * (1 if mem >= 0 else -1) if total > 0 else 0
    if not -(2**31) <= devmem < 2**31:
        raise DecodeError(f"capacity {memory} gives {devmem} MiB per GPU, beyond int32 (HAMi wraps it)")
    return numbered_devices(
        node, "mthreads", gpus, count=100, devmem=devmem, devcore=16, type="Mthreads", health=True
    )


@hookimpl
def hami_vendor_drivers(device_config: DeviceConfig) -> list[VendorSpec]:
    names = device_config.section(
        "mthreads",
        resourceCountName="mthreads.com/vgpu",
        resourceMemoryName="mthreads.com/sgpu-memory",
        resourceCoreName="mthreads.com/sgpu-core",
    )
    cores, memory = str(names["resourceCoreName"]), str(names["resourceMemoryName"])
    source = FromNode(lambda node: sgpus(node, cores, memory), capacity=[cores, memory])
    return [VendorSpec(name="mthreads", vendor_key="Mthreads", count_resource=str(names["resourceCountName"]),
                       from_node=source)]  # fmt: skip
