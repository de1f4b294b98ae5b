"""AWS Neuron devices for hami-core: the `awsneuron` vendor driver, devices from the Node's capacity.

HAMi v2.10 (``pkg/device/awsneuron/device.go``) computes the devices from ``status.capacity``: N
``aws.amazon.com/neuron`` devices sharing the ``aws.amazon.com/neuroncore`` cores, each with a core
bitmask, and the Node's instance type; always healthy, no handshake, nothing written. HAMi takes the cores
per device from the first Neuron node it sees; here each Node's own capacity counts (spec 1b), and a
count or mask that does not fit int32 is an error, not a wrap. Resource names: device config ``awsneuron``.
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

__all__ = ["INSTANCE_TYPE", "__version__", "hami_vendor_drivers", "neuron_devices"]

__version__ = "0.1.0"

INSTANCE_TYPE = "node.kubernetes.io/instance-type"


def neuron_devices(node: NodeView, count: str, cores: str) -> list[DeviceInfo]:
    """HAMi's GetNodeDevices: ``<node>-AWSNeuron-<i>``, count = cores per device, devcore its bitmask."""
    devices = capacity_count(node, count)
    per = node.capacity.get(cores, 0) // devices if devices > 0 else 0
    if not 0 <= per <= 31:
        raise DecodeError(f"capacity {cores} gives {per} cores per device: its mask is beyond int32")
    info = {"AWSNodeType": node.labels.get(INSTANCE_TYPE, "")}
    return numbered_devices(node, "AWSNeuron", devices, count=per, devcore=2**per - 1, type="AWSNeuron",
                            health=True, custominfo=info)  # fmt: skip


@hookimpl
def hami_vendor_drivers(device_config: DeviceConfig) -> list[VendorSpec]:
    names = device_config.section(
        "awsneuron", resourceCountName="aws.amazon.com/neuron", resourceCoreName="aws.amazon.com/neuroncore"
    )
    count, cores = str(names["resourceCountName"]), str(names["resourceCoreName"])
    source = FromNode(
        lambda n: neuron_devices(n, count, cores), capacity=[count, cores], labels=INSTANCE_TYPE
    )
    return [VendorSpec(name="awsneuron", vendor_key="AWSNeuron", count_resource=count, from_node=source)]
