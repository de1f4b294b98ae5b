"""What several vendor drivers need and no vendor owns: the device cap, numbered devices, the memory
shared out per device, fixed fields (the guide's sections 2 and 2b say each in full)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

import attrs

from hami_core.protocol.codecs import Codec
from hami_core.protocol.errors import DecodeError
from hami_core.protocol.evaluate import reader
from hami_core.protocol.model import INT32, INT64, DeviceInfo
from hami_core.protocol.nodesource import NodeView

__all__ = [
    "MAX_DEVICES",
    "FixedFields",
    "capacity_count",
    "fixed_fields",
    "memory_per_device",
    "numbered_devices",
]

#: More devices than any Node holds: a capacity that makes more is refused, not built.
MAX_DEVICES = 1024


def capacity_count(node: NodeView, resource: str, *, per_device: int = 1, noun: str = "devices") -> int:
    """How many devices ``status.capacity`` of ``resource`` makes, ``per_device`` units each (a part
    counts as one); ``DecodeError`` above ``MAX_DEVICES``."""
    if per_device < 1:
        raise ValueError(f"per_device must be at least 1, got {per_device}")
    value = node.capacity.get(resource, 0)
    count = -(-value // per_device) if value > 0 else 0
    if count > MAX_DEVICES:
        raise DecodeError(f"capacity {resource} = {value} gives more than {MAX_DEVICES} {noun}")
    return count


def numbered_devices(node: NodeView, name: str, number: int, /, **fields: Any) -> list[DeviceInfo]:
    """``number`` devices ``<node>-<name>-<i>`` with index ``i`` and ``fields`` (healthy unless given), as
    HAMi builds them from a Node."""
    fields.setdefault("health", True)
    return [DeviceInfo(id=f"{node.name}-{name}-{i}", index=i, **fields) for i in range(number)]


def memory_per_device(node: NodeView, memory: str, cores: str, *, factor: int, per_device: int) -> int:
    """HAMi's ``int32(memoryTotal * factor * per_device / cores)`` in Go's int64 arithmetic (truncating
    toward zero), 0 without cores; ``DecodeError`` where HAMi wraps."""
    total, units = node.capacity.get(cores, 0), node.capacity.get(memory, 0)
    if total <= 0:
        return 0
    scale = factor * per_device
    product = units * scale
    if product not in INT64:
        raise DecodeError(f"capacity {memory} = {units} times {scale} is beyond int64 (HAMi wraps it)")
    share = abs(product) // total * (1 if product >= 0 else -1)
    if share not in INT32:
        raise DecodeError(f"capacity {memory} gives {share} MiB per device, beyond int32 (HAMi wraps it)")
    return share


@attrs.frozen
class FixedFields:
    """A codec: reads as ``codec`` reads (a built-in encoding reads both, spec 3.4), then sets ``fields`` on
    every device; writes as ``codec`` writes."""

    codec: Codec
    fields: tuple[tuple[str, Any], ...]

    @property
    def name(self) -> str:
        return self.codec.name

    @property
    def fixed_values(self) -> Mapping[str, Any]:
        """The fields set on every device read (the driver test kit's round trip expects them)."""
        return MappingProxyType(dict(self.fields))

    def decode(self, value: str) -> list[DeviceInfo]:
        fields = dict(self.fields)
        return [attrs.evolve(device, **fields) for device in reader(self.codec)(value)]

    def encode(self, devices: Sequence[DeviceInfo]) -> str:
        return self.codec.encode(devices)


def fixed_fields(codec: Codec, **fields: Any) -> FixedFields:
    """``codec`` with ``fields`` set on every device it decodes: ``fixed_fields(JSON_CODEC, devcore=100)``.
    A field ``DeviceInfo`` does not have, or a value it refuses, raises here, when the driver loads."""
    attrs.evolve(DeviceInfo(), **fields)
    return FixedFields(codec, tuple(fields.items()))
