"""Label selectors as the API server reads them, for the in-memory cluster.

Supported: ``k=v``, ``k==v``, ``k!=v``, ``k`` (exists), ``!k`` (does not exist), ``k in (a,b)``,
``k notin (a,b)``, ``k>n`` and ``k<n``, joined by commas (AND). Keys and values must be valid label keys
and values; ``n`` must also be an integer, and a label whose value is not one never matches ``>``/``<``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from hami_core.k8snames import is_label_value, is_qualified_name
from hami_core.kube.port import Invalid
from hami_core.protocol.errors import shorten

__all__ = ["LabelSelector", "parse_label_selector"]

_SET = re.compile(r"\s*(\S+)\s+(in|notin)\s*\(([^()]*)\)\s*", re.ASCII)
_INT64 = re.compile(r"[+-]?[0-9]+", re.ASCII)

Requirement = Callable[[Mapping[str, str]], bool]


def _key(text: str, selector: str) -> str:
    key = text.strip()
    if not is_qualified_name(key):
        raise Invalid(f"label selector {shorten(selector)}: {shorten(key)} is not a valid label key")
    return key


def _value(text: str, selector: str) -> str:
    value = text.strip()
    if not is_label_value(value):
        raise Invalid(f"label selector {shorten(selector)}: {shorten(value)} is not a valid label value")
    return value


def _int64(text: str | None) -> int | None:
    """``text`` as Go's ``strconv.ParseInt(text, 10, 64)`` reads it, or ``None``."""
    if text is None or not _INT64.fullmatch(text):
        return None
    number = int(text)
    return number if -(2**63) <= number < 2**63 else None


def _compare(key: str, bound: int, *, greater: bool) -> Requirement:
    """``key>bound`` or ``key<bound``: the label must be there and be an integer on the right side."""

    def requirement(labels: Mapping[str, str]) -> bool:
        number = _int64(labels.get(key))
        return number is not None and (number > bound if greater else number < bound)

    return requirement


def _split_terms(selector: str) -> list[str]:
    """Split on commas that are not inside a ``( )`` value set."""
    terms, depth, start = [], 0, 0
    for i, char in enumerate(selector):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "," and depth == 0:
            terms.append(selector[start:i])
            start = i + 1
    terms.append(selector[start:])
    return terms


def _requirement(term: str, selector: str) -> Requirement:
    set_match = _SET.fullmatch(term)
    if set_match is not None:
        key = _key(set_match.group(1), selector)
        values = frozenset(_value(v, selector) for v in set_match.group(3).split(","))
        if set_match.group(2) == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    for operator in ("!=", "==", "="):
        if operator in term:
            left, _, right = term.partition(operator)
            key, value = _key(left, selector), _value(right, selector)
            if operator == "!=":
                return lambda labels: labels.get(key) != value
            return lambda labels: labels.get(key) == value
    for operator in (">", "<"):
        if operator in term:
            left, _, right = term.partition(operator)
            key, value = _key(left, selector), _value(right, selector)
            bound = _int64(value)
            if bound is None:
                raise Invalid(f"label selector {shorten(selector)}: {shorten(value)} is not an integer")
            return _compare(key, bound, greater=operator == ">")
    stripped = term.strip()
    if stripped.startswith("!"):
        key = _key(stripped[1:], selector)
        return lambda labels: key not in labels
    key = _key(stripped, selector)
    return lambda labels: key in labels


class LabelSelector:
    """A parsed selector; call :meth:`matches` with an object's labels."""

    def __init__(self, requirements: list[Requirement]) -> None:
        self._requirements = requirements

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(requirement(labels) for requirement in self._requirements)


def parse_label_selector(selector: str) -> LabelSelector:
    """Parse ``selector``; ``Invalid`` (as the API server's 400) when it is malformed. Empty matches all."""
    if not selector.strip():
        return LabelSelector([])
    return LabelSelector([_requirement(term, selector) for term in _split_terms(selector)])
