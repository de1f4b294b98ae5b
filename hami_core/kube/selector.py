"""Label selectors for the in-memory cluster: equality terms only, ``k=v`` (or ``k==v``) joined by commas.

That is all anything sends it: the scheduler lists and watches every Node and applies its
``--node-selector`` itself (``scheduler/selector.py``), and the tests select their own Nodes by a label
(``hami-test=<id>``). Any other term of the API server's grammar (``!=``, ``in``, ``notin``, ``k``, ``!k``,
``>``, ``<``) is refused with ``Invalid`` saying it is not modelled: its semantics are the real server's.
"""

from __future__ import annotations

from collections.abc import Mapping

from hami_core.k8snames import is_label_value, is_qualified_name
from hami_core.kube.port import Invalid
from hami_core.protocol.errors import shorten

__all__ = ["LabelSelector", "parse_label_selector"]


class LabelSelector:
    """A parsed selector; call :meth:`matches` with an object's labels."""

    def __init__(self, required: list[tuple[str, str]]) -> None:
        self._required = required

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(labels.get(key) == value for key, value in self._required)


def parse_label_selector(selector: str) -> LabelSelector:
    """Parse ``selector``; ``Invalid`` (as the API server's 400) when it is malformed or uses a term the
    in-memory cluster does not model. Empty matches all."""
    required: list[tuple[str, str]] = []
    for term in selector.split(",") if selector.strip() else ():
        key, equals, value = term.replace("==", "=", 1).partition("=")
        key, value = key.strip(), value.strip()
        if not equals or key.endswith("!") or any(c in term for c in "()<>"):
            raise Invalid(
                f"label selector {shorten(selector)}: {shorten(term.strip())} is not a k=v term (the "
                "in-memory cluster models only those; the rest of the grammar is the real API server's)"
            )
        if not is_qualified_name(key):
            raise Invalid(f"label selector {shorten(selector)}: {shorten(key)} is not a valid label key")
        if not is_label_value(value):
            raise Invalid(f"label selector {shorten(selector)}: {shorten(value)} is not a valid label value")
        required.append((key, value))
    return LabelSelector(required)
