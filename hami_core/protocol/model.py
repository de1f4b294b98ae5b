"""The device record of HAMi's registration protocol (spec sections 2 and 3.3), and its field table.

Each field of ``DeviceInfo``, ``MigProfile`` and ``MigPlacement`` is declared once, here, with how it
travels: its JSON key, its Go type (for integers the Go range: a value outside it raises ``ValueError``
at construction), its column in a legacy record and whether the JSON encoder omits its zero value.
The model, both codecs (``gojson``, ``legacy``) and the dict conversion (``convert``) read that table
(``fields_of``); none of them lists the fields again. Names follow HAMi's JSON keys, in snake case.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from operator import index
from typing import Any

import attrs

__all__ = [
    "INT32",
    "INT64",
    "UINT32",
    "UINT64",
    "DeviceInfo",
    "IntRange",
    "MigPlacement",
    "MigProfile",
    "WireField",
    "fields_of",
]


def plain_str(value: str) -> str:
    """``value``'s characters as an exact ``str`` (``value`` itself when it is one)."""
    return str.__str__(value)


def plain_int(value: int) -> int:
    """``value`` as an exact ``int`` (``operator.index`` copies an ``int`` subclass without calling
    any of its methods)."""
    return index(value)


@attrs.frozen
class IntRange:
    """The range of one Go integer type, used as an attrs validator."""

    go_type: str
    low: int
    high: int

    def __contains__(self, value: object) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and self.low <= value <= self.high

    def __call__(self, instance: object, attribute: attrs.Attribute[int], value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{attribute.name} must be an int ({self.go_type}), got {type(value).__name__}")
        if not self.low <= value <= self.high:
            raise ValueError(
                f"{attribute.name}={value} is out of range for {self.go_type} ({self.low}..{self.high})"
            )


INT32 = IntRange("int32", -(2**31), 2**31 - 1)
INT64 = IntRange("int64", -(2**63), 2**63 - 1)
UINT32 = IntRange("uint32", 0, 2**32 - 1)
UINT64 = IntRange("uint64", 0, 2**64 - 1)

#: A field's kind: ``str``, ``bool``, an ``IntRange``, ``dict`` (Go's ``map[string]any``) or a record
#: class (a Go slice of that struct, held as a tuple; ``MigProfile.placements`` keeps a nil one as ``None``).
Kind = type | IntRange


@attrs.frozen
class WireField:
    """One row of the field table: a model attribute and how it travels."""

    name: str  #: the attribute
    key: str  #: the JSON key (and the key of the dict conversion)
    kind: Kind
    legacy: int | None  #: the column in a legacy record, if the legacy encoding carries the field
    omitempty: bool  #: JSON: a zero value is not written (Go's ``omitempty``)
    written: bool  #: JSON: the encoder writes the field at all

    @property
    def record(self) -> type | None:
        """The record class of a list field (a Go slice of that struct), else ``None``."""
        kind = self.kind
        return kind if isinstance(kind, type) and kind not in (str, bool, dict) else None

    @property
    def go_type(self) -> str:
        kind = self.kind
        if isinstance(kind, IntRange):
            return kind.go_type
        if kind is str or kind is bool:
            return "string" if kind is str else "bool"
        return "map[string]any" if kind is dict else f"[]{kind.__name__}"


@attrs.frozen
class _ItemsOf:
    """attrs validator: every item of a tuple field (``None`` allowed) is an ``item_type``."""

    item_type: type

    def __call__(self, instance: object, attribute: attrs.Attribute[Any], value: Any) -> None:
        for position, item in enumerate(value or ()):
            if not isinstance(item, self.item_type):
                raise TypeError(
                    f"{attribute.name}[{position}]: expected {self.item_type.__name__}, "
                    f"got {type(item).__name__}"
                )


def _tuple(value: Iterable[Any] | None) -> tuple[Any, ...]:
    return () if value is None else tuple(value)


def _tuple_or_none(value: Iterable[Any] | None) -> tuple[Any, ...] | None:
    """A nil slice (``None``) kept apart from an empty one."""
    return None if value is None else tuple(value)


def _row(
    key: str, kind: Kind, *, legacy: int | None = None, omitempty: bool = True, written: bool = True
) -> dict[str, Any]:
    """A field's row of the table, as attrs metadata."""
    row = {"key": key, "kind": kind, "legacy": legacy, "omitempty": omitempty, "written": written}
    return {"wire": row}


def _wire(key: str, kind: Kind, **row: Any) -> Any:
    """A scalar or map field declared with its row of the table (list fields are declared with
    ``attrs.field`` in the class, so that type checkers see their converters)."""
    metadata = _row(key, kind, **row)
    if isinstance(kind, IntRange):  # scalars are checked by _validate, all at once
        return attrs.field(default=0, metadata={**metadata, "check": kind})
    if kind is str or kind is bool:
        return attrs.field(default=kind(), metadata={**metadata, "check": kind})
    return attrs.field(default=None, hash=False, metadata=metadata)


def _validate(record: Any) -> None:
    """Check every scalar field of a new record against its kind (attrs' ``__attrs_post_init__``).

    A value of the exact type inside its Go range passes at once; any other takes the check that names
    what is wrong. A subclass of ``str`` or ``int`` is taken and kept as its own characters or digits
    (``plain_str``, ``plain_int``), so a record holds exact values only: what the codecs write, what a
    decoder gives back, and what no ``__str__``, ``__format__`` or ``__eq__`` of a subclass can change
    (formatted as it stands, an ``int`` whose ``__format__`` says ``1,2:3`` would add fields and records
    to a legacy value, a ``str`` whose ``__str__`` holds a quote would add keys to a JSON one)."""
    for attribute, kind, exact, go_range in _SCALARS[type(record)]:
        value = getattr(record, attribute.name)
        if type(value) is exact and (go_range is None or value in go_range):
            continue
        if isinstance(kind, IntRange):
            kind(record, attribute, value)
        elif not isinstance(value, kind):
            raise TypeError(f"{attribute.name}: expected {kind.__name__}, got {type(value).__name__}")
        if type(value) is not bool:  # a subclass: keep its own value
            object.__setattr__(record, attribute.name, plain_str(value) if kind is str else plain_int(value))


@attrs.frozen(kw_only=True)
class MigPlacement:
    """Where a MIG instance of a profile may start, and how many slices it spans."""

    start: int = _wire("start", UINT32, omitempty=False)
    size: int = _wire("size", UINT32, omitempty=False)
    __attrs_post_init__ = _validate


@attrs.frozen(kw_only=True)
class MigProfile:
    """One MIG capability of a GPU. On the wire every key is written; ``placements=None`` is ``null``."""

    name: str = _wire("name", str, omitempty=False)
    memory_mb: int = _wire("memoryMB", INT32, omitempty=False)
    core: int = _wire("core", INT32, omitempty=False)
    slice_count: int = _wire("sliceCount", UINT32, omitempty=False)
    placements: tuple[MigPlacement, ...] | None = attrs.field(
        default=None,
        converter=_tuple_or_none,
        validator=_ItemsOf(MigPlacement),
        metadata=_row("placements", MigPlacement, omitempty=False),
    )
    __attrs_post_init__ = _validate


@attrs.frozen(kw_only=True)
class DeviceInfo:
    """One accelerator as a node reports it. Zero values match a missing JSON key. The declaration
    order is HAMi's JSON key order; ``legacy`` is the column in a legacy record (spec 3.1)."""

    id: str = _wire("id", str, legacy=0)
    index: int = _wire("index", UINT64, legacy=7)
    count: int = _wire("count", INT32, legacy=1)
    devmem: int = _wire("devmem", INT32, legacy=2)
    devcore: int = _wire("devcore", INT32, legacy=3)
    type: str = _wire("type", str, legacy=4)
    numa: int = _wire("numa", INT64, legacy=5)
    mode: str = _wire("mode", str, legacy=8)
    mig_profiles: tuple[MigProfile, ...] = attrs.field(
        default=(), converter=_tuple, validator=_ItemsOf(MigProfile), metadata=_row("migProfiles", MigProfile)
    )
    health: bool = _wire("health", bool, legacy=6)
    #: Never trusted from the wire: the scheduler sets it to the vendor key.
    devicevendor: str = _wire("devicevendor", str, written=False)
    #: Free-form; read from JSON, never written by the scheduler-side encoder.
    custominfo: Mapping[str, Any] | None = _wire("custominfo", dict, written=False)
    __attrs_post_init__ = _validate


def _table(cls: type) -> tuple[WireField, ...]:
    return tuple(WireField(name=f.name, **f.metadata["wire"]) for f in attrs.fields(cls))


_TABLES: dict[type, tuple[WireField, ...]] = {
    cls: _table(cls) for cls in (MigPlacement, MigProfile, DeviceInfo)
}


def fields_of(cls: type) -> tuple[WireField, ...]:
    """The field table of a record class, in declaration order (HAMi's JSON key order)."""
    return _TABLES[cls]


#: Per record class, each scalar field: its attribute, its kind, the exact type of its values, and for an
#: integer the range of its Go type (a ``range``: ``in`` is one C call).
_SCALARS: dict[type, list[tuple[attrs.Attribute[Any], Kind, type, range | None]]] = {
    cls: [
        (f, kind, int, range(kind.low, kind.high + 1))
        if isinstance(kind, IntRange)
        else (f, kind, kind, None)
        for f in attrs.fields(cls)
        if (kind := f.metadata.get("check")) is not None
    ]
    for cls in _TABLES
}
