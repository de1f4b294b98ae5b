"""Label selectors for the in-memory cluster: equality terms only, ``k=v`` (or ``k==v``) joined by commas.

That is all anything sends it (the scheduler applies its ``--node-selector`` itself; the tests select
their own Nodes by ``hami-test=<id>``). Any other term of the API server's grammar is refused with
``Invalid`` saying it is not modelled: its semantics are the real server's.
"""

from __future__ import annotations

from collections.abc import Mapping

from hami_core.k8snames import is_label_value, is_qualified_name
from hami_core.kube.port import Invalid
from hami_core.protocol.errors import shorten

__all__ = ["LabelSelector", "matches", "parse_label_selector"]

#: The ``(key, value)`` pairs a Node's labels must all have; empty matches all.
LabelSelector = tuple[tuple[str, str], ...]


def matches(selector: LabelSelector, labels: Mapping[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in selector)


def parse_label_selector(selector: str) -> LabelSelector:
    """Parse ``selector``; ``Invalid`` (the API server's 400) when it is malformed or uses a term the
    in-memory cluster does not model."""
    required: list[tuple[str, str]] = []
    for term in selector.split(",") if selector.strip() else ():
        key, equals, value = term.replace("==", "=", 1).partition("=")
        key, value = key.strip(), value.strip()
        where = f"label selector {shorten(selector)}"
        if not equals or key.endswith("!") or any(c in term for c in "()<>"):
            raise Invalid(
                f"{where}: {shorten(term.strip())} is not a k=v term (the in-memory cluster models only "
                "those; the rest of the grammar is the real API server's)"
            )
        if not is_qualified_name(key):
            raise Invalid(f"{where}: {shorten(key)} is not a valid label key")
        if not is_label_value(value):
            raise Invalid(f"{where}: {shorten(value)} is not a valid label value")
        required.append((key, value))
    return tuple(required)
