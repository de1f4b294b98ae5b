"""Moore Threads GPUs for hami-core: the `mthreads` vendor driver, devices from the Node's capacity.

HAMi v2.10 (``pkg/device/mthreads/device.go``) computes the GPUs from ``status.capacity``: one per 16
``mthreads.com/sgpu-core``, each with the ``sgpu-memory`` (512 MiB units) shared out by cores; always
healthy, no handshake, nothing written. HAMi wraps the memory per GPU to int32; here a value out of range is
an error (spec 1b). The resource names are HAMi's device config section ``mthreads``.
"""

import hami_core as hami

__all__ = ["__version__", "hami_vendor_drivers", "sgpus"]

__version__ = "0.1.0"


def sgpus(node: hami.NodeView, cores: str, memory: str) -> list[hami.DeviceInfo]:
    """HAMi's GetNodeDevices: GPUs while i*16 < cores, devmem = memory*512*16/cores (Go's division)."""
    gpus = hami.capacity_count(node, cores, per_device=16, noun="GPUs")
    devmem = hami.memory_per_device(node, memory, cores, factor=512, per_device=16)
    return hami.numbered_devices(
        node, "mthreads", gpus, count=100, devmem=devmem, devcore=16, type="Mthreads"
    )


@hami.hookimpl
def hami_vendor_drivers(device_config: hami.DeviceConfig) -> list[hami.VendorSpec]:
    """The one vendor this package provides, its resource names from HAMi's device config."""
    count, memory, cores = device_config.section(
        "mthreads",
        resourceCountName="mthreads.com/vgpu",
        resourceMemoryName="mthreads.com/sgpu-memory",
        resourceCoreName="mthreads.com/sgpu-core",
    ).values()
    source = hami.FromNode(lambda node: sgpus(node, cores, memory), capacity=[cores, memory])
    return [hami.VendorSpec(name="mthreads", vendor_key="Mthreads", count_resource=count, from_node=source)]
