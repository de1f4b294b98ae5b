"""One vendor on one Node snapshot as the decision core reads it: the ``Observation``.

The registrar and the explanation (``scheduler/explain.py``, behind ``/cache/<node>`` and ``hami doctor``)
both build their observations here, so what they show the decision core cannot differ.
"""

from __future__ import annotations

import functools

import attrs

from hami_core.kube.port import NodeSnapshot
from hami_core.kube.quantity import QuantityError, quantity_count
from hami_core.protocol.decide import Observation, VendorRules

__all__ = ["Observed", "observe"]

#: Allocatable strings repeat across nodes and resyncs: parse each distinct one once.
_allocatable_count = functools.lru_cache(maxsize=4096)(quantity_count)


@attrs.frozen(kw_only=True)
class Observed:
    """An observation, with what it made of the allocatable value."""

    observation: Observation
    #: ``status.allocatable[<count resource>]`` as the Node holds it (``None``: absent).
    allocatable_raw: str | None = None
    #: The raw allocatable value is not a quantity: it was counted as 0.
    allocatable_invalid: bool = False


def observe(name: str, node: NodeSnapshot | None, rules: VendorRules, *, selected: bool) -> Observed:
    """What the decision core reads of ``node`` for one vendor (``node=None``: the Node was deleted)."""
    if node is None:
        return Observed(observation=Observation(node=name, present=False, selected=False))
    handshake = node.annotations.get(rules.handshake_annotation) if rules.handshake_annotation else None
    raw = node.allocatable.get(rules.count_resource)
    invalid = False
    try:
        allocatable = max(0, _allocatable_count(raw))
    except QuantityError:
        allocatable, invalid = 0, True
    observation = Observation(
        node=name,
        present=True,
        selected=selected,
        register=node.annotations.get(rules.register_annotation),
        handshake=handshake,
        allocatable=allocatable,
        cleaned=node.annotations.get(rules.marker_annotation),
    )
    return Observed(observation=observation, allocatable_raw=raw, allocatable_invalid=invalid)
