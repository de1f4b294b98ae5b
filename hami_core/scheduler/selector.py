"""The node label selector of ``--node-selector k=v,...``: an AND of label equalities (HAMi's flag)."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from hami_core.k8snames import is_label_value, is_qualified_name

__all__ = ["NodeSelector", "parse_node_selector"]


@attrs.frozen
class NodeSelector:
    """Matches nodes whose labels include every ``key=value`` pair; the empty selector matches all."""

    required: Mapping[str, str] = attrs.field(factory=dict, hash=False)

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(labels.get(key) == value for key, value in self.required.items())

    def __str__(self) -> str:
        return ",".join(f"{k}={v}" for k, v in sorted(self.required.items()))


def parse_node_selector(text: str) -> NodeSelector:
    """Parse ``k1=v1,k2=v2``; raise ``ValueError`` naming the bad item."""
    required: dict[str, str] = {}
    for position, item in enumerate(text.split(","), start=1):
        item = item.strip()
        if not item:
            continue
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key:
            raise ValueError(f"node selector item {position} {item!r} is not key=value")
        if not is_qualified_name(key):
            raise ValueError(f"node selector item {position}: {key!r} is not a valid label key")
        if not is_label_value(value):
            raise ValueError(
                f"node selector item {position}: {value!r} is not a valid label value "
                "(at most 63 of A-Z a-z 0-9 - _ ., alphanumeric at both ends)"
            )
        if key in required and required[key] != value:
            raise ValueError(f"node selector: label {key!r} required twice with different values")
        required[key] = value
    return NodeSelector(required)
