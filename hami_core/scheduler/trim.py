"""What the scheduler keeps of a Node: only the parts its vendors and its node selector read.

Per Node: the loaded vendors' register, pair-score, handshake and "cleaned" marker annotations, their
count resources (allocatable, and capacity where a liveness rule reads it), what their node sources
declare (spec 1b), and the labels the node selector names: all that the decisions, ``/cache/<node>``,
``hami doctor`` and read-only mode read. The key strings are the vendors' own (one object for every Node),
and short values that repeat across Nodes (a count, a label value, a stamp) are interned. The kept
annotations are a ``PackedStrings`` (``kube/packed.py``): a long value (a register value, about 1.4 KiB
for 8 NVIDIA GPUs) is held zlib-compressed, a seventh of its size, and every reader still gets the
``str`` it was, byte for byte.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping
from types import MappingProxyType

import attrs

from hami_core.kube.packed import PACK_OVER, PackedStrings
from hami_core.kube.port import NodeSnapshot
from hami_core.protocol.decide import VendorRules
from hami_core.protocol.liveness import reads_capacity
from hami_core.scheduler.selector import NodeSelector

__all__ = ["NodeTrim", "shared_short"]

#: Every Node without any of the kept keys shares this one (read-only) empty mapping.
_EMPTY: Mapping[str, str] = MappingProxyType({})
#: Values at most this long are interned (counts and label values repeat across Nodes); a longer
#: annotation value is the one kept compressed.
_INTERN_UP_TO = PACK_OVER


def shared_short(value: str) -> str:
    """``value`` as the one interned string of its text when it is short (a count, a label value, a
    stamp: they repeat across Nodes), else as it is (a register value differs per Node)."""
    return sys.intern(value) if len(value) <= _INTERN_UP_TO else value


def _keys(names: Iterable[str]) -> tuple[str, ...]:
    """The names once each, in order, as interned strings (the one object every kept dict uses)."""
    return tuple(sys.intern(name) for name in dict.fromkeys(names))


def _kept(source: Mapping[str, str], keys: tuple[str, ...]) -> Mapping[str, str]:
    """The values of ``keys`` in ``source``, the short ones interned."""
    kept: dict[str, str] | None = None
    for key in keys:
        value = source.get(key)
        if value is None:
            continue
        if kept is None:
            kept = {}
        kept[key] = shared_short(value)
    return _EMPTY if kept is None else kept


@attrs.frozen
class NodeTrim:
    """``trim(node)``: ``node`` with only what the scheduler reads (see the module's note)."""

    register_keys: tuple[str, ...]
    handshake_keys: tuple[str, ...]
    allocatable_keys: tuple[str, ...]
    label_keys: tuple[str, ...]
    marker_keys: tuple[str, ...] = ()
    #: The capacity a node source reads, and a count resource's capacity for a rule that reads it.
    capacity_keys: tuple[str, ...] = ()

    @classmethod
    def of(cls, vendors: Iterable[VendorRules], selector: NodeSelector) -> NodeTrim:
        vendors = tuple(vendors)
        paths = [p for p in (v.node_path() for v in vendors) if p is not None]
        sources = [p.node_source for p in paths if p.node_source is not None]
        judged = [*vendors, *paths]
        return cls(
            register_keys=_keys(
                [v.register_annotation for v in vendors if v.register_annotation is not None]
                + [v.pair_scores_annotation for v in vendors if v.pair_scores_annotation is not None]
                + [key for s in sources for key in s.annotations]
            ),
            handshake_keys=_keys(
                v.handshake_annotation for v in vendors if v.handshake_annotation is not None
            ),
            marker_keys=_keys(v.marker_annotation for v in vendors),
            allocatable_keys=_keys(
                [v.count_resource for v in vendors] + [name for s in sources for name in s.allocatable]
            ),
            label_keys=_keys([*selector.required, *(label for s in sources for label in s.labels)]),
            capacity_keys=_keys(
                [name for s in sources for name in s.capacity]
                + [v.count_resource for v in judged if reads_capacity(v.liveness)]
            ),
        )

    def __call__(self, node: NodeSnapshot) -> NodeSnapshot:
        # A register value is long and differs per node: kept compressed (``kube/packed.py``), read back
        # as it was. A handshake value is a stamp, and the scheduler stamps thousands of nodes within the
        # same second: interned. A marker is rare (a cleaned-up vendor) and differs per node.
        source, kept = node.annotations, {}
        for keys, intern in (
            (self.register_keys, False),
            (self.handshake_keys, True),
            (self.marker_keys, False),
        ):
            for key in keys:
                value = source.get(key)
                if value is not None:
                    kept[key] = shared_short(value) if intern else value
        return NodeSnapshot(
            name=node.name,
            uid=node.uid,
            resource_version=node.resource_version,
            labels=_kept(node.labels, self.label_keys),
            annotations=PackedStrings(kept) if kept else _EMPTY,
            allocatable=_kept(node.allocatable, self.allocatable_keys),
            capacity=_kept(node.capacity, self.capacity_keys),
        )
