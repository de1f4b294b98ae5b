"""Strings and integers as exact ``str`` and ``int``: what a record keeps of a subclass (so the
encoders write a value's own characters and digits), the registrar shares across devices, and
VendorRules keeps as a driver's keys.

A subclass of ``str`` or ``int`` can say anything of itself through ``__str__``, ``__format__``,
``__bool__``, ``__contains__`` or ``__eq__``: formatted as it stands, an ``int`` whose ``__format__``
says ``1,2:3`` would add fields and records to a legacy value, a ``str`` whose ``__str__`` holds a quote
would add keys to a JSON one. DeviceInfo takes such a value and keeps its exact characters or digits,
which are also what a decoder gives back.
"""

from __future__ import annotations

from operator import index

__all__ = ["plain_int", "plain_str"]


def plain_str(value: str) -> str:
    """``value``'s characters as an exact ``str`` (``value`` itself when it is one)."""
    return str.__str__(value)


def plain_int(value: int) -> int:
    """``value`` as an exact ``int`` (``operator.index`` copies an ``int`` subclass without calling
    any of its methods)."""
    return index(value)
