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


def plain_str(value: str) -> str:
    """``value``'s characters as an exact ``str`` (``value`` itself when it is one)."""
    return str.__str__(value)


@attrs.frozen
class IntRange:
    """The range of one Go integer type."""

    go_type: str
    low: int
    high: int

    def __contains__(self, value: object) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and self.low <= value <= self.high


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


def _items(name: str, value: tuple[Any, ...] | None, record: type) -> tuple[Any, ...] | None:
    """``value`` (a list field's, converted), once every item is a ``record``."""
    for position, item in enumerate(value or ()):
        if not isinstance(item, record):
            raise TypeError(f"{name}[{position}]: expected {record.__name__}, got {type(item).__name__}")
    return value


def _tuple(value: Iterable[Any] | None) -> tuple[Any, ...]:
    return () if value is None else tuple(value)


def _tuple_or_none(value: Iterable[Any] | None) -> tuple[Any, ...] | None:
    """A nil slice (``None``) kept apart from an empty one."""
    return None if value is None else tuple(value)


def _row(
    key: str, kind: Kind, *, legacy: int | None = None, omitempty: bool = True, written: bool = True
) -> dict[str, Any]:
    """A field's row of the table, as attrs metadata."""
    return {"wire": {"key": key, "kind": kind, "legacy": legacy, "omitempty": omitempty, "written": written}}


def _wire(key: str, kind: Kind, **row: Any) -> Any:
    """A scalar or map field declared with its row of the table (list fields are declared with
    ``attrs.field`` in the class, so that type checkers see their converters)."""
    if isinstance(kind, IntRange) or kind is str or kind is bool:
        return attrs.field(default=kind() if isinstance(kind, type) else 0, metadata=_row(key, kind, **row))
    return attrs.field(default=None, hash=False, metadata=_row(key, kind, **row))


def _plain(scalars: list[tuple[str, Kind]], values: tuple[Any, ...]) -> list[Any]:
    """A new record's scalar values checked one by one (what its constructor falls back to when its check
    in one expression fails): raise ``TypeError`` or ``ValueError`` naming the first field whose value is
    not of its kind or outside its Go range. A subclass of ``str`` or ``int`` is taken as its own exact
    characters or digits (``plain_str``, ``operator.index``), so a record holds what the codecs write and what
    no ``__str__``, ``__format__`` or ``__eq__`` of a subclass can change: formatted as it stands, an
    ``int`` whose ``__format__`` says ``1,2:3`` would add fields and records to a legacy value, a ``str``
    whose ``__str__`` holds a quote would add keys to a JSON one."""
    plain: list[Any] = []
    for (name, kind), value in zip(scalars, values, strict=True):
        if isinstance(kind, IntRange):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{name} must be an int ({kind.go_type}), got {type(value).__name__}")
            if value not in kind:
                raise ValueError(
                    f"{name}={value} is out of range for {kind.go_type} ({kind.low}..{kind.high})"
                )
            value = index(value)  # an exact int, copied without calling a method of a subclass
        elif not isinstance(value, kind):
            raise TypeError(f"{name}: expected {kind.__name__}, got {type(value).__name__}")
        elif isinstance(value, str):  # the kind is str
            value = plain_str(value)
        plain.append(value)
    return plain


def _checked_init(cls: type) -> None:
    """Replace attrs' ``__init__`` of a record class (whose signature type checkers see) by one written from
    its table: the same arguments and defaults; a list field converted and each item checked; every scalar
    checked in one expression (exact type; an integer's Go range), by ``_plain`` only when that fails;
    each value set through its slot's descriptor. 0.7 µs per ``DeviceInfo`` against 1.8 µs for attrs' own
    and a check after it (docs/performance.md)."""
    fields = attrs.fields(cls)
    kinds = {f.name: f.metadata["wire"]["kind"] for f in fields}
    scalars = [(name, k) for name, k in kinds.items() if k in (str, bool) or isinstance(k, IntRange)]
    scope: dict[str, Any] = {"_type": type, "_plain": _plain, "_items": _items, "_scalars": scalars}
    lines = [f"def __init__(self, {', '.join(f'{f.name}=_default_{f.name}' for f in fields)}):"]
    for f in fields:
        n = f.name
        scope.update({f"_default_{n}": f.default, f"_set_{n}": cls.__dict__[n].__set__})
        if f.converter is not None:  # a list field
            scope.update({f"_convert_{n}": f.converter, f"_record_{n}": kinds[n]})
            lines.append(f"    if _type({n}) is not tuple or {n}:")
            lines.append(f"        {n} = _items({n!r}, _convert_{n}({n}), _record_{n})")
    test = []
    for name, kind in scalars:
        test.append(f"_type({name}) is {'int' if isinstance(kind, IntRange) else kind.__name__}")
        if isinstance(kind, IntRange):
            test.append(f"{kind.low} <= {name} <= {kind.high}")
    names = "".join(f"{name}, " for name, _ in scalars)
    lines += [f"    if not ({' and '.join(test)}):", f"        {names}= _plain(_scalars, ({names}))"]
    exec("\n".join(lines + [f"    _set_{f.name}(self, {f.name})" for f in fields]), scope)
    init, typed = scope["__init__"], cls.__dict__["__init__"]
    init.__qualname__, init.__annotations__ = f"{cls.__qualname__}.__init__", typed.__annotations__
    cls.__init__ = init  # type: ignore[misc]


@attrs.frozen
class MigPlacement:
    """Where a MIG instance of a profile may start, and how many slices it spans."""

    start: int = _wire("start", UINT32, omitempty=False)
    size: int = _wire("size", UINT32, omitempty=False)


@attrs.frozen
class MigProfile:
    """One MIG capability of a GPU. On the wire every key is written; ``placements=None`` is ``null``."""

    name: str = _wire("name", str, omitempty=False)
    memory_mb: int = _wire("memoryMB", INT32, omitempty=False)
    core: int = _wire("core", INT32, omitempty=False)
    slice_count: int = _wire("sliceCount", UINT32, omitempty=False)
    placements: tuple[MigPlacement, ...] | None = attrs.field(
        default=None, converter=_tuple_or_none, metadata=_row("placements", MigPlacement, omitempty=False)
    )


@attrs.frozen
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
        default=(), converter=_tuple, metadata=_row("migProfiles", MigProfile)
    )
    health: bool = _wire("health", bool, legacy=6)
    #: Never trusted from the wire: the scheduler sets it to the vendor key.
    devicevendor: str = _wire("devicevendor", str, written=False)
    #: Free-form; read from JSON, never written by the scheduler-side encoder.
    custominfo: Mapping[str, Any] | None = _wire("custominfo", dict, written=False)


_TABLES: dict[type, tuple[WireField, ...]] = {
    cls: tuple(WireField(name=f.name, **f.metadata["wire"]) for f in attrs.fields(cls))
    for cls in (MigPlacement, MigProfile, DeviceInfo)
}


def fields_of(cls: type) -> tuple[WireField, ...]:
    """The field table of a record class, in declaration order (HAMi's JSON key order)."""
    return _TABLES[cls]


for _cls in _TABLES:
    _checked_init(_cls)
