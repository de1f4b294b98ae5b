"""One vendor on one Node snapshot as the decision core reads it: the ``Observation``, built here for the
registrar and the explanation (``scheduler/explain.py``) alike, so what they show it cannot differ. A
vendor with a node source (spec 1b) is judged on it where the Node shows its inputs (docs/architecture.md,
"Vendor drivers"), elsewhere on its register annotation, if it has one.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

import attrs

from hami_core.kube.port import NodeSnapshot
from hami_core.kube.quantity import QuantityError, quantity_count, quantity_int64
from hami_core.protocol.decide import Observation, VendorRules
from hami_core.protocol.liveness import reads_capacity
from hami_core.protocol.nodesource import FromNode, NodeView

__all__ = ["Observed", "observe", "source_key"]


@attrs.frozen(kw_only=True)
class Observed:
    """An observation, with what it made of the allocatable value and how the vendor is judged."""

    observation: Observation
    #: The vendor as judged on this observation: ``rules`` itself, or ``rules.node_path()``.
    rules: VendorRules
    #: What the vendor's ``FromNode`` function is shown (``None`` on the register annotation's path).
    view: NodeView | None = None
    #: ``status.allocatable[<count resource>]`` as the Node holds it (``None``: absent).
    allocatable_raw: str | None = None
    #: The raw allocatable value is not a quantity: it was counted as 0.
    allocatable_invalid: bool = False

    @property
    def source(self) -> str:
        """Where the vendor's devices come from on this Node: ``"node"`` or ``"annotation"``."""
        return "node" if self.rules.register_annotation is None else "annotation"


def source_key(node: NodeSnapshot, source: FromNode) -> str | None:
    """The node source's key on ``node`` (``None``: the Node shows none of its inputs)."""
    return source.key(node.capacity, node.allocatable, node.annotations, node.labels)


@functools.lru_cache(maxsize=4096)  # quantities repeat across nodes and resyncs: each read once
def _count(raw: str | None) -> tuple[int, bool]:
    """A quantity as a count (absent: 0) and whether it was not a quantity (then 0)."""
    try:
        return max(0, quantity_count(raw)), False
    except QuantityError:
        return 0, True


@functools.lru_cache(maxsize=4096)
def _int64(raw: str | None) -> int | None:
    """A quantity as Go's ``AsInt64`` reads it (``None``: absent, not an int64 integer, not a quantity)."""
    if raw is None:
        return None
    try:
        return quantity_int64(raw)
    except QuantityError:
        return None  # the API server stores only quantities


def _counts(names: tuple[str, ...], source: Mapping[str, str]) -> dict[str, int]:
    """The declared quantities as HAMi reads them (``AsInt64``): one that is not an integer fitting
    int64 is absent from the view, as HAMi finds no such count."""
    return {name: value for name in names if (value := _int64(source.get(name))) is not None}


def observe(name: str, node: NodeSnapshot | None, rules: VendorRules, *, selected: bool) -> Observed:
    """What the decision core reads of ``node`` for one vendor (``node=None``: the Node was deleted)."""
    if node is None:
        return Observed(observation=Observation(node=name, present=False, selected=False), rules=rules)
    judged, register, view = rules, None, None
    path = rules.node_path()
    if path is not None and path.node_source is not None:
        source = path.node_source
        key = source_key(node, source)
        if key is not None or rules.register_annotation is None:
            judged, register = path, key
            if key is not None:
                view = source.view(
                    name,
                    _counts(source.capacity, node.capacity),
                    _counts(source.allocatable, node.allocatable),
                    node.annotations,
                    node.labels,
                )
    handshake = None
    if judged.register_annotation is not None:
        register = node.annotations.get(judged.register_annotation)
        if judged.handshake_annotation:
            handshake = node.annotations.get(judged.handshake_annotation)
    raw = node.allocatable.get(rules.count_resource)
    allocatable, invalid = _count(raw)
    capacity = 0
    if reads_capacity(judged.liveness):  # HAMi's AsInt64: a capacity that is not an int64 integer is 0
        capacity = max(0, _int64(node.capacity.get(rules.count_resource)) or 0)
    observation = Observation(
        node=name,
        present=True,
        selected=selected,
        register=register,
        handshake=handshake,
        allocatable=allocatable,
        cleaned=node.annotations.get(rules.marker_annotation),
        capacity=capacity,
    )
    return Observed(
        observation=observation, rules=judged, view=view, allocatable_raw=raw, allocatable_invalid=invalid
    )
