"""The device record of HAMi's registration protocol (spec section 2), as attrs classes.

Integer fields carry the range of the Go type HAMi uses for them; constructing a record with a value out
of that range raises ``ValueError``. Names follow HAMi's JSON keys, in snake case.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
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
    "trusted_device",
    "trusted_plain_device",
    "trusted_plain_devices",
]


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

_str = attrs.validators.instance_of(str)
_bool = attrs.validators.instance_of(bool)


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


@attrs.frozen(kw_only=True)
class MigPlacement:
    """Where a MIG instance of a profile may start, and how many slices it spans."""

    start: int = attrs.field(default=0, validator=UINT32)
    size: int = attrs.field(default=0, validator=UINT32)


def _placements(value: Any) -> tuple[MigPlacement, ...] | None:
    return None if value is None else tuple(value)


@attrs.frozen(kw_only=True)
class MigProfile:
    """One MIG capability of a GPU. On the wire every key is written; ``placements=None`` is ``null``."""

    name: str = attrs.field(default="", validator=_str)
    memory_mb: int = attrs.field(default=0, validator=INT32)
    core: int = attrs.field(default=0, validator=INT32)
    slice_count: int = attrs.field(default=0, validator=UINT32)
    placements: tuple[MigPlacement, ...] | None = attrs.field(
        default=None, converter=_placements, validator=_ItemsOf(MigPlacement)
    )


def _profiles(value: Any) -> tuple[MigProfile, ...]:
    return () if value is None else tuple(value)


@attrs.frozen(kw_only=True)
class DeviceInfo:
    """One accelerator as a node reports it. Zero values match a missing JSON key."""

    id: str = attrs.field(default="", validator=_str)
    index: int = attrs.field(default=0, validator=UINT64)
    count: int = attrs.field(default=0, validator=INT32)
    devmem: int = attrs.field(default=0, validator=INT32)
    devcore: int = attrs.field(default=0, validator=INT32)
    type: str = attrs.field(default="", validator=_str)
    numa: int = attrs.field(default=0, validator=INT64)
    mode: str = attrs.field(default="", validator=_str)
    mig_profiles: tuple[MigProfile, ...] = attrs.field(
        default=(), converter=_profiles, validator=_ItemsOf(MigProfile)
    )
    health: bool = attrs.field(default=False, validator=_bool)
    #: Never trusted from the wire: the scheduler sets it to the vendor key.
    devicevendor: str = attrs.field(default="", validator=_str)
    #: Free-form; read from JSON, never written by the scheduler-side encoder.
    custominfo: Mapping[str, Any] | None = attrs.field(default=None, hash=False)


_TrustedDevice = Callable[
    [str, int, int, int, int, str, int, str, tuple[MigProfile, ...], bool, str, Mapping[str, Any] | None],
    DeviceInfo,
]
_TrustedPlainDevice = Callable[[str, int, int, int, int, str, int, str, bool], DeviceInfo]
_TrustedPlainDevices = Callable[
    [
        Iterable[str],
        Iterable[int],
        Iterable[int],
        Iterable[int],
        Iterable[int],
        Iterable[str],
        Iterable[int],
        Iterable[str],
        Iterable[bool],
    ],
    list[DeviceInfo],
]


class _DeviceDraft(DeviceInfo):
    """A ``DeviceInfo`` while a trusted constructor fills it in, then turned into one by assigning its
    ``__class__``. It adds no slots, so it has DeviceInfo's exact memory layout (CPython allows the
    assignment only between layout-compatible classes and raises ``TypeError`` otherwise), and it
    takes object's own ``__setattr__`` and ``__delattr__`` (both, or CPython keeps calling through
    attrs' frozen ones) so that ``draft.id = ...`` stores the slot directly: a plain attribute store,
    about a tenth of the cost of calling a slot descriptor's ``__set__``. Never seen outside this
    module: the constructors return the object only once it is a DeviceInfo. Its ``__init__`` is
    object's too, so that ``_DeviceDraft()`` makes an empty one (a little cheaper than
    ``object.__new__(_DeviceDraft)``) without running attrs' validating one. CPython reports each
    ``__class__`` assignment as the audit event ``object.__setattr__``: a process that installed an
    audit hook (``sys.addaudithook``) sees one per device a fast path builds."""

    __slots__ = ()
    __setattr__ = object.__setattr__
    __delattr__ = object.__delattr__
    __init__ = object.__init__


def _trusted_factory(
    params: list[str], constants: dict[str, Any], *, draft: bool = True, columns: bool = False
) -> Any:
    """A generated function that sets the slots of a new DeviceInfo directly: ``params`` from its
    arguments, the other fields from ``constants``. One function, no per-field loop or keyword parsing.
    With ``draft`` it fills in a ``_DeviceDraft`` with plain attribute stores and makes it a DeviceInfo
    at the end; without, it calls each slot descriptor's ``__set__`` on a new DeviceInfo (slower, the
    fallback should an interpreter refuse the class assignment). With ``columns`` each argument is an
    iterable of one field's values, and the function returns the list of the devices they make (one
    call, one loop, for a whole decoded value)."""
    names = [field.name for field in attrs.fields(DeviceInfo)]
    assert sorted(params + list(constants)) == sorted(names)
    namespace: dict[str, Any] = {"_new": object.__new__, "_DeviceInfo": DeviceInfo, "_Draft": _DeviceDraft}
    body = ["self = _Draft()" if draft else "self = _new(_DeviceInfo)"]
    for name in names:
        value = name
        if name in constants:
            value = f"_value_{name}"
            namespace[value] = constants[name]
        if draft:
            body.append(f"self.{name} = {value}")
        else:
            namespace[f"_set_{name}"] = getattr(DeviceInfo, name).__set__
            body.append(f"_set_{name}(self, {value})")
    if draft:
        body.append("self.__class__ = _DeviceInfo")
    arguments = ", ".join(params)
    if columns:
        lines = [
            f"def trusted({arguments}):",
            "    devices = []",
            "    append = devices.append",
            f"    for {arguments} in zip({arguments}):",
            *(f"        {line}" for line in body),
            "        append(self)",
            "    return devices",
        ]
    else:
        lines = [f"def trusted({arguments}):", *(f"    {line}" for line in body), "    return self"]
    exec("\n".join(lines), namespace)
    return namespace["trusted"]


def _draft_works() -> bool:
    """Whether this interpreter lets a ``_DeviceDraft`` become a DeviceInfo equal to one built by
    ``DeviceInfo(...)`` (checked once, at import)."""
    values: dict[str, Any] = {
        "id": "a",
        "index": 1,
        "count": 2,
        "devmem": 3,
        "devcore": 4,
        "type": "t",
        "numa": 5,
        "mode": "m",
        "mig_profiles": (),
        "health": True,
        "devicevendor": "v",
        "custominfo": None,
    }
    try:
        built = _trusted_factory(list(values), {})(*values.values())
    except TypeError:
        return False
    return type(built) is DeviceInfo and built == DeviceInfo(**values)


_DRAFT = _draft_works()

#: ``trusted_device(id, index, count, devmem, devcore, type, numa, mode, mig_profiles, health,
#: devicevendor, custominfo)``: a ``DeviceInfo`` built without its validators and converters, equal to
#: ``DeviceInfo(...)`` with the same values. Only for callers that already guarantee what the validators
#: check (every value of its field's type and Go range, ``mig_profiles`` a tuple of ``MigProfile``): the
#: codecs' fast paths, which decode into range-checked types first. Everyone else calls ``DeviceInfo``.
trusted_device: _TrustedDevice = _trusted_factory(
    [
        "id",
        "index",
        "count",
        "devmem",
        "devcore",
        "type",
        "numa",
        "mode",
        "mig_profiles",
        "health",
        "devicevendor",
        "custominfo",
    ],
    {},
    draft=_DRAFT,
)
#: ``trusted_plain_device(id, index, count, devmem, devcore, type, numa, mode, health)``: the same for a
#: device without MIG profiles, vendor or custom info (what the legacy encoding carries).
trusted_plain_device: _TrustedPlainDevice = _trusted_factory(
    ["id", "index", "count", "devmem", "devcore", "type", "numa", "mode", "health"],
    {"mig_profiles": (), "devicevendor": "", "custominfo": None},
    draft=_DRAFT,
)
#: ``trusted_plain_devices(ids, indexes, counts, devmems, devcores, types, numas, modes, healths)``:
#: ``trusted_plain_device`` over columns (iterables of one field each, read in step as ``zip`` does),
#: as a list: what the legacy decoder's fast path builds a whole value with.
trusted_plain_devices: _TrustedPlainDevices = _trusted_factory(
    ["id", "index", "count", "devmem", "devcore", "type", "numa", "mode", "health"],
    {"mig_profiles": (), "devicevendor": "", "custominfo": None},
    draft=_DRAFT,
    columns=True,
)
