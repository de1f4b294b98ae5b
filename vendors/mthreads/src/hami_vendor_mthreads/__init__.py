"""Moore Threads GPUs for hami-core: the `mthreads` vendor driver, devices from the Node's capacity.

HAMi v2.10 (``pkg/device/mthreads/device.go``) computes the GPUs from ``status.capacity``: one per 16
``mthreads.com/sgpu-core``, each with the ``sgpu-memory`` (512 MiB units) shared out by cores; always
healthy, no handshake, nothing written. HAMi wraps the memory per GPU to int32; here a value out of range is
an error (spec 1b). The resource names are HAMi's device config section ``mthreads``.
"""

from __future__ import annotations

from hami_core import DecodeError, DeviceConfig, DeviceInfo, FromNode, NodeView, VendorSpec, hookimpl

__all__ = ["MAX_DEVICES", "__version__", "hami_vendor_drivers", "sgpus"]

__version__ = "0.1.0"

#: A Node advertising more devices than this is refused: HAMi would build every one (a capacity of 8Ei
#: would exhaust the scheduler's memory), and no Node has that many.
MAX_DEVICES = 1024


def sgpus(node: NodeView, cores: str, memory: str) -> list[DeviceInfo]:
    """HAMi's GetNodeDevices: GPUs while i*16 < cores, devmem = memory*512*16/cores (Go's division)."""
    total, mem = node.capacity.get(cores, 0), node.capacity.get(memory, 0)
    devmem = (abs(mem) * 8192 // total) * (1 if mem >= 0 else -1) if total > 0 else 0
    if total > MAX_DEVICES * 16:
        raise DecodeError(f"capacity {cores} = {total} gives more than {MAX_DEVICES} GPUs")
    if not -(2**31) <= devmem < 2**31:
        raise DecodeError(f"capacity {memory} gives {devmem} MiB per GPU, beyond int32 (HAMi wraps it)")
    return [
        DeviceInfo(id=f"{node.name}-mthreads-{i}", index=i, count=100, devmem=devmem, devcore=16,
                   type="Mthreads", health=True)
        for i in range(-(-total // 16) if total > 0 else 0)
    ]  # fmt: skip


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
