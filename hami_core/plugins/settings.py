"""Per-vendor settings, read from HAMi's own device config (the chart's ``device-config.yaml``).

HAMi's scheduler reads one YAML file (``--device-config-file``; ``LoadConfig`` in
``pkg/scheduler/config/config.go``) with a section per vendor family: ``nvidia``, ``cambricon``,
``hygon``, ``kunlun``, ... (a mapping each), ``iluvatars`` and ``vnpus.configs`` (lists, one entry per
chip). A driver asks for its section in ``hami_vendor_drivers(device_config)``, naming each setting it
knows with its default: the default is written once, there, and the operator's file overrides it. So a
cluster moving from HAMi keeps its resource names.

A value of the wrong type is a ``DeviceConfigError`` (one line naming the file, section and key; the
daemons exit 2). A key no driver asked for, or a section no installed driver reads, is reported by
``DeviceConfig.unknown`` (the daemons log it as a warning: HAMi's file carries every family's section).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any, overload

import yaml  # type: ignore[import-untyped]  # the kubernetes client's own YAML parser; no stubs installed

from hami_core.plugins.errors import PluginError

__all__ = ["DeviceConfig", "DeviceConfigError", "Setting"]

#: The types a setting may have; the default's type is the setting's (a tuple: a YAML list, as it is).
Setting = str | int | float | bool | tuple[object, ...]


class DeviceConfigError(PluginError):
    """The device config cannot be read, or a value in it has the wrong type."""


def _kind(value: object) -> str:
    kinds = {bool: "true or false", int: "an integer", float: "a number", str: "a string", tuple: "a list"}
    return kinds[type(value)]


def _checked(value: object, default: Setting, where: str) -> Setting:
    """``value`` if it has the default's type (an integer is a number too), else ``DeviceConfigError``."""
    if isinstance(default, tuple):
        ok = isinstance(value, list)
        value = tuple(value) if ok else value  # type: ignore[arg-type]
    elif isinstance(default, bool):
        ok = isinstance(value, bool)
    elif isinstance(default, int):
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif isinstance(default, float):
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        value = float(value) if ok else value  # type: ignore[arg-type]
    else:
        ok = isinstance(value, str)
    if not ok:
        raise DeviceConfigError(f"{where}: expected {_kind(default)}, got {value!r:.60}")
    return value  # type: ignore[return-value]


def _values(found: Mapping[str, Any], defaults: Mapping[str, Setting], where: str) -> dict[str, Setting]:
    """``defaults``, each overridden by the value ``found`` holds, checked against the default's type."""
    return {
        key: _checked(found[key], default, f"{where}.{key}") if key in found else default
        for key, default in defaults.items()
    }


class DeviceConfig:
    """HAMi's device config as drivers read it. ``DeviceConfig()`` is the empty one: every default."""

    def __init__(self, data: Mapping[str, Any] | None = None, *, source: str = "") -> None:
        self._data: Mapping[str, Any] = data or {}
        self.source = source or "device config"
        #: section -> the keys drivers asked for (a list section: the keys of its entries).
        self._claimed: dict[str, set[str]] = {}
        #: Every setting read, in order, as ``(section, key, value, set by the file)`` (``hami vendors``).
        self.reads: list[tuple[str, str, Setting, bool]] = []

    @classmethod
    def load(cls, path: str | Path) -> DeviceConfig:
        """Read HAMi's ``device-config.yaml``; ``DeviceConfigError`` (one line) when it does not read."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as error:
            raise DeviceConfigError(f"device config {path}: {error.strerror or error}") from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as error:
            mark = getattr(error, "problem_mark", None)
            at = f" (line {mark.line + 1})" if mark is not None else ""
            problem = getattr(error, "problem", None) or type(error).__name__
            raise DeviceConfigError(f"device config {path}: not YAML{at}: {problem}") from None
        if data is None:
            data = {}
        if not isinstance(data, Mapping):
            raise DeviceConfigError(f"device config {path}: expected a mapping of sections, got {data!r:.60}")
        return cls(data, source=str(path))

    def _part(self, path: str) -> object:
        node: object = self._data
        for part in path.split("."):
            node = node.get(part) if isinstance(node, Mapping) else None
        return node

    @overload
    def section(self, name: str, **defaults: str) -> Mapping[str, str]: ...
    @overload
    def section(self, name: str, **defaults: Setting) -> Mapping[str, Setting]: ...
    def section(self, name: str, **defaults: Setting) -> Mapping[str, Setting]:
        """The settings of section ``name`` (a dotted path for a nested one), each the file's value or
        the default given here, in the order given; ``DeviceConfigError`` for a value of another type
        than its default's. So a section of strings (resource names) is strings."""
        self._claimed.setdefault(name, set()).update(defaults)
        found = self._part(name)
        if found is None:
            found = {}
        if not isinstance(found, Mapping):
            raise DeviceConfigError(f"{self.source}: {name}: expected a mapping, got {found!r:.60}")
        values = _values(found, defaults, f"{self.source}: {name}")
        self.reads.extend((name, key, values[key], key in found) for key in defaults)
        return MappingProxyType(values)

    def entries(
        self, name: str, default: Sequence[Mapping[str, Setting]], **fields: Setting
    ) -> list[Mapping[str, Setting]]:
        """The entries of the list section ``name`` (``iluvatars``, ``vnpus.configs``): the file's list,
        or ``default`` when the file has none; each entry's ``fields`` with their defaults checked as in
        ``section``."""
        self._claimed.setdefault(name, set()).update(fields)
        found = self._part(name)
        from_file = found is not None
        items: object = found if from_file else default
        if not isinstance(items, Sequence) or isinstance(items, str):
            raise DeviceConfigError(f"{self.source}: {name}: expected a list, got {items!r:.60}")
        result: list[Mapping[str, Setting]] = []
        for i, item in enumerate(items):
            if not isinstance(item, Mapping):
                raise DeviceConfigError(f"{self.source}: {name}[{i}]: expected a mapping, got {item!r:.60}")
            values = _values(item, fields, f"{self.source}: {name}[{i}]")
            result.append(MappingProxyType(values))
            self.reads.extend((f"{name}[{i}]", k, values[k], from_file and k in item) for k in fields)
        return result

    def unknown(self) -> list[str]:
        """What the file holds that no driver asked for: ``section.key`` and whole ``section`` names."""
        out: list[str] = []
        claimed_tops = {name.split(".")[0] for name in self._claimed}
        for top in self._data:
            if str(top) not in claimed_tops:
                out.append(f"{top} (no installed driver reads this section)")
        for name, keys in sorted(self._claimed.items()):
            found = self._part(name)
            items = found if isinstance(found, list) else [found] if isinstance(found, Mapping) else []
            extra = sorted({str(k) for item in items if isinstance(item, Mapping) for k in item} - keys)
            out.extend(f"{name}.{key}" for key in extra)
        return out
