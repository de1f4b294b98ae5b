"""What the scheduler keeps of a Node: only the parts its vendors and its node selector read, short values
interned and the annotations a ``PackedStrings`` (what and why: docs/architecture.md, "One node event,
end to end", step 1).
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


def shared_short(value: str) -> str:
    """``value`` as the one interned string of its text when it is short (a count, a label value, a
    stamp: they repeat across Nodes), else as it is (a register value differs per Node, and is the one
    kept compressed)."""
    return sys.intern(value) if len(value) <= PACK_OVER else value


def _keys(names: Iterable[str | None]) -> tuple[str, ...]:
    """The names once each, in order, as interned strings (the one object every kept dict uses)."""
    return tuple(sys.intern(name) for name in dict.fromkeys(names) if name is not None)


def _kept(source: Mapping[str, str], keys: tuple[str, ...]) -> Mapping[str, str]:
    """The values of ``keys`` in ``source``, the short ones interned."""
    kept = {key: shared_short(value) for key in keys if (value := source.get(key)) is not None}
    return kept or _EMPTY


@attrs.frozen
class NodeTrim:
    """``trim(node)``: ``node`` with only what the scheduler reads (see the module's note)."""

    #: The vendors' register, pair-score, handshake and marker annotations, and those a node source reads.
    annotation_keys: tuple[str, ...]
    allocatable_keys: tuple[str, ...]
    label_keys: tuple[str, ...]
    #: The capacity a node source reads, and a count resource's capacity for a rule that reads it.
    capacity_keys: tuple[str, ...]

    @classmethod
    def of(cls, vendors: Iterable[VendorRules], selector: NodeSelector) -> NodeTrim:
        vendors = tuple(vendors)
        paths = [p for p in (v.node_path() for v in vendors) if p is not None]
        sources = [p.node_source for p in paths if p.node_source is not None]
        return cls(
            annotation_keys=_keys(
                [key for v in vendors for key in (v.register_annotation, v.pair_scores_annotation)]
                + [key for s in sources for key in s.annotations]
                + [v.handshake_annotation for v in vendors]
                + [v.marker_annotation for v in vendors]
            ),
            allocatable_keys=_keys(
                [v.count_resource for v in vendors] + [name for s in sources for name in s.allocatable]
            ),
            label_keys=_keys([*selector.required, *(label for s in sources for label in s.labels)]),
            capacity_keys=_keys(
                [name for s in sources for name in s.capacity]
                + [v.count_resource for v in (*vendors, *paths) if reads_capacity(v.liveness)]
            ),
        )

    def __call__(self, node: NodeSnapshot) -> NodeSnapshot:
        annotations = _kept(node.annotations, self.annotation_keys)
        return NodeSnapshot(
            name=node.name,
            uid=node.uid,
            resource_version=node.resource_version,
            labels=_kept(node.labels, self.label_keys),
            annotations=PackedStrings(annotations) if annotations else _EMPTY,
            allocatable=_kept(node.allocatable, self.allocatable_keys),
            capacity=_kept(node.capacity, self.capacity_keys),
        )
