"""Devices computed from the Node itself (spec 1b): a driver's pure function of a small view of the Node.

A vendor whose device plugin advertises resource quantities instead of writing a register annotation
(HAMi v2.10's Cambricon MLU, Kunlun whole cards, MetaX GPU, Moore Threads, Enflame GCU, AWS Neuron)
declares ``FromNode``: the function, and the inputs it reads (``status.capacity`` and
``status.allocatable`` resources, annotations, labels). The core calls the function with a ``NodeView``
holding exactly those inputs, validates its result like a decoded register value, and calls it again
only when one of the inputs changed (``FromNode.key``). Nothing is ever written for such a vendor.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

import attrs

from hami_core.protocol.liveness import LivenessRule
from hami_core.protocol.model import DeviceInfo

__all__ = ["FromNode", "NodeView"]

V = TypeVar("V")


@attrs.frozen(kw_only=True)
class NodeView:
    """What a ``FromNode`` function is shown of a Node: its name and the inputs its driver declared,
    nothing else. A declared input the Node does not carry is absent from its mapping."""

    name: str
    #: ``status.capacity`` quantities as integers, as HAMi reads them (Go's ``Quantity.AsInt64()``): one
    #: that is not an integer fitting int64 (``500m``, ``8Ei``, ``1e30``) is absent.
    capacity: Mapping[str, int] = attrs.field(factory=dict)
    #: ``status.allocatable`` quantities as integers, as ``capacity``.
    allocatable: Mapping[str, int] = attrs.field(factory=dict)
    annotations: Mapping[str, str] = attrs.field(factory=dict)
    labels: Mapping[str, str] = attrs.field(factory=dict)


def _names(value: Iterable[str] | str) -> tuple[str, ...]:
    # one name given as a string is one name, not its characters
    return (value,) if isinstance(value, str) else tuple(value)


@attrs.frozen
class FromNode:
    """A source of devices: ``devices(view)`` for a Node showing the source's main input, the first it
    declares of ``capacity``, else ``allocatable``, else ``annotations`` (the others are read with it;
    labels never put a vendor on a Node: every Node has some).

    ``devices`` must be pure (same view, same devices) and return a list of ``DeviceInfo`` in index order,
    an empty list for "no devices here", or raise ``DecodeError`` with a one-line reason (the vendor is
    then shown degraded and keeps its last good list). ``liveness`` is ``"devices"`` (HAMi's "always
    healthy": registered while it yields devices) or ``"capacity"`` (alive while ``status.capacity`` of the
    count resource is above 0), or a rule object.
    """

    devices: Callable[[NodeView], list[DeviceInfo]]
    capacity: tuple[str, ...] = attrs.field(default=(), converter=_names, kw_only=True)
    allocatable: tuple[str, ...] = attrs.field(default=(), converter=_names, kw_only=True)
    annotations: tuple[str, ...] = attrs.field(default=(), converter=_names, kw_only=True)
    labels: tuple[str, ...] = attrs.field(default=(), converter=_names, kw_only=True)
    liveness: str | LivenessRule = attrs.field(default="devices", kw_only=True)

    def key(
        self,
        capacity: Mapping[str, str],
        allocatable: Mapping[str, str],
        annotations: Mapping[str, str],
        labels: Mapping[str, str],
    ) -> str | None:
        """The declared inputs a Node shows, as one string (the raw values: equal strings, equal inputs),
        or ``None`` when it does not show the source's main input: the vendor is not on the Node. The
        decision core compares it as it compares a register value."""
        sources = zip(self._inputs(), (capacity, allocatable, annotations, labels), strict=True)
        parts = [source.get(name) for names, source in sources for name in names]
        if not parts or parts[0] is None:
            return None
        return json.dumps(parts, separators=(",", ":"))

    def view(
        self,
        name: str,
        capacity: Mapping[str, int],
        allocatable: Mapping[str, int],
        annotations: Mapping[str, str],
        labels: Mapping[str, str],
    ) -> NodeView:
        """The view of a Node for ``devices``: only the declared inputs the Node has."""
        return NodeView(
            name=name,
            capacity=_kept(self.capacity, capacity),
            allocatable=_kept(self.allocatable, allocatable),
            annotations=_kept(self.annotations, annotations),
            labels=_kept(self.labels, labels),
        )

    def _inputs(self) -> tuple[tuple[str, ...], ...]:
        return self.capacity, self.allocatable, self.annotations, self.labels


def _kept(names: tuple[str, ...], source: Mapping[str, V]) -> dict[str, V]:
    return {n: source[n] for n in names if n in source}
