"""Devices computed from the Node itself (spec 1b): a driver's pure function of the inputs it declares,
called again only when one of them changed (``FromNode.key``)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

import attrs

from hami_core.protocol.liveness import LivenessRule
from hami_core.protocol.model import DeviceInfo

V = TypeVar("V")


@attrs.frozen(kw_only=True)
class NodeView:
    """What a ``FromNode`` function is shown of a Node: its name and the declared inputs it carries, the
    quantities as Go's ``Quantity.AsInt64()`` reads them (one that is not an int64, ``500m``, is absent)."""

    name: str
    capacity: Mapping[str, int] = attrs.field(factory=dict)
    allocatable: Mapping[str, int] = attrs.field(factory=dict)
    annotations: Mapping[str, str] = attrs.field(factory=dict)
    labels: Mapping[str, str] = attrs.field(factory=dict)


def _names(value: Iterable[str] | str) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


@attrs.frozen
class FromNode:
    """``devices(view)``, pure, for a Node showing the main input (the first declared capacity, else
    allocatable, else annotation; never a label): ``DeviceInfo`` in index order, or ``DecodeError``.
    ``liveness``: ``"devices"``, ``"capacity"`` or a rule object (``protocol/liveness.py``)."""

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
        """The declared inputs' raw values as one string, compared as a register value is; ``None`` when the
        Node does not show the main input (the vendor is not on it)."""
        declared = (self.capacity, self.allocatable, self.annotations, self.labels)
        sources = zip(declared, (capacity, allocatable, annotations, labels), strict=True)
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


def _kept(names: tuple[str, ...], source: Mapping[str, V]) -> dict[str, V]:
    return {n: source[n] for n in names if n in source}
