"""AWS Neuron devices for hami-core: the `awsneuron` vendor driver, devices from the Node's capacity.

HAMi v2.10 (``pkg/device/awsneuron/device.go``) computes the devices from ``status.capacity``: N
``aws.amazon.com/neuron`` devices sharing the ``aws.amazon.com/neuroncore`` cores, each with a core
bitmask, and the Node's instance type; always healthy, no handshake, nothing written. HAMi takes the cores
per device from the first Neuron node it sees; here each Node's own capacity counts (spec 1b), and a
count or mask that does not fit int32 is an error, not a wrap. Resource names: device config ``awsneuron``.
"""

import hami_core as hami

__all__ = ["INSTANCE_TYPE", "__version__", "hami_vendor_drivers", "neurons"]

__version__ = "0.1.0"

INSTANCE_TYPE = "node.kubernetes.io/instance-type"


def neurons(node: hami.NodeView, count: str, cores: str) -> list[hami.DeviceInfo]:
    """HAMi's GetNodeDevices: ``<node>-AWSNeuron-<i>``, count = cores per device, devcore its bitmask."""
    devices = hami.capacity_count(node, count)
    per = node.capacity.get(cores, 0) // devices if devices > 0 else 0
    if not 0 <= per <= 31:
        raise hami.DecodeError(f"capacity {cores} gives {per} cores per device: its mask is beyond int32")
    info = {"AWSNodeType": node.labels.get(INSTANCE_TYPE, "")}
    return hami.numbered_devices(
        node, "AWSNeuron", devices, count=per, devcore=2**per - 1, type="AWSNeuron", custominfo=info
    )


@hami.hookimpl
def hami_vendor_drivers(device_config: hami.DeviceConfig) -> list[hami.VendorSpec]:
    """The one vendor this package provides, its resource names from HAMi's device config."""
    count, cores = device_config.section(
        "awsneuron", resourceCountName="aws.amazon.com/neuron", resourceCoreName="aws.amazon.com/neuroncore"
    ).values()
    source = hami.FromNode(lambda n: neurons(n, count, cores), capacity=[count, cores], labels=INSTANCE_TYPE)
    return [hami.VendorSpec(name="awsneuron", vendor_key="AWSNeuron", count_resource=count, from_node=source)]
