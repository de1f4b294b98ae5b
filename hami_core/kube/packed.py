"""A read-only ``Mapping[str, str]`` that keeps its long values zlib-compressed, for the store's annotations
(docs/architecture.md, "One node event, end to end", step 1): a reader sees each ``str`` byte for byte as
put in (lone surrogates included), decompressed on each read. A value is packed by its length alone, so two
mappings of the same items hold the same representations (zlib is deterministic): equality compares the
compressed bytes, and :meth:`PackedStrings.sharing` holds an older one's objects for unchanged values.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Mapping

__all__ = ["PACK_OVER", "PackedStrings", "kept_form"]

#: Values longer than this (in characters) are kept compressed; shorter ones as they are.
PACK_OVER = 64
#: zlib's fastest level: about a seventh of a register value's size, a few microseconds each way.
_LEVEL = 1

_Stored = str | bytes


def _pack(value: str) -> _Stored:
    if len(value) <= PACK_OVER:
        return value
    return zlib.compress(value.encode("utf-8", "surrogatepass"), _LEVEL)


class PackedStrings(Mapping[str, str]):
    """``PackedStrings(values)``: the items of ``values``, read-only, the long values kept compressed."""

    __slots__ = ("_items",)
    _items: dict[str, _Stored]

    def __init__(self, values: Mapping[str, str]) -> None:
        self._items = {key: _pack(value) for key, value in values.items()}

    def __getitem__(self, key: str) -> str:
        stored = self._items[key]
        return stored if isinstance(stored, str) else zlib.decompress(stored).decode("utf-8", "surrogatepass")

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PackedStrings):
            return self._items == other._items  # the same items have the same representations
        return super().__eq__(other)

    def __repr__(self) -> str:
        return f"PackedStrings({dict(self.items())!r})"

    def sharing(self, before: Mapping[str, str]) -> PackedStrings:
        """This mapping, holding ``before``'s very objects for the values that did not change (``before``
        a ``PackedStrings``; anything else shares nothing)."""
        if not isinstance(before, PackedStrings):
            return self
        old, shared = before._items, PackedStrings.__new__(PackedStrings)
        shared._items = {
            key: kept if (kept := old.get(key)) == value else value for key, value in self._items.items()
        }
        return shared


def kept_form(values: Mapping[str, str], key: str) -> object:
    """``values[key]`` (``None``: absent) as kept, for equality only: a ``PackedStrings``' compressed
    bytes, not decompressed (equal values of two of them are equal bytes); any other mapping's value."""
    if isinstance(values, PackedStrings):
        return values._items.get(key)
    return values.get(key)
