"""Per-vendor settings from HAMi's own device config (``LoadConfig`` in ``pkg/scheduler/config/config.go``;
the guide's section 2c): a wrong type is a one-line ``DeviceConfigError``, an unread key a warning."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
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


#: A setting's type (its default's) -> whether a file's value is of it, the value as taken, its name.
_KINDS: dict[type, tuple[Callable[[object], bool], Callable[[Any], Setting], str]] = {
    bool: (lambda v: isinstance(v, bool), bool, "true or false"),
    int: (lambda v: isinstance(v, int) and not isinstance(v, bool), int, "an integer"),
    float: (lambda v: isinstance(v, int | float) and not isinstance(v, bool), float, "a number"),
    str: (lambda v: isinstance(v, str), str, "a string"),
    tuple: (lambda v: isinstance(v, list), tuple, "a list"),
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
        except UnicodeDecodeError:
            raise DeviceConfigError(f"device config {path}: not UTF-8 text") from None
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as error:
            mark = getattr(error, "problem_mark", None)
            at = f" (line {mark.line + 1})" if mark is not None else ""
            problem = getattr(error, "problem", None) or type(error).__name__
            raise DeviceConfigError(f"device config {path}: not YAML{at}: {problem}") from None
        except RecursionError:
            raise DeviceConfigError(f"device config {path}: nested too deeply") from None
        except ValueError as error:  # a value YAML reads but Python will not hold (an integer too long)
            raise DeviceConfigError(f"device config {path}: not YAML: {str(error).split(';')[0]}") from None
        if not isinstance(data, Mapping | None):
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
        """Section ``name`` (dotted when nested): each setting the file's value or its default, in order;
        ``DeviceConfigError`` for a value of another type than its default's."""
        self._claimed.setdefault(name, set()).update(defaults)
        found = self._part(name)
        return self._read(name, {} if found is None else found, defaults, from_file=True)

    def entries(
        self, name: str, default: Sequence[Mapping[str, Setting]], **fields: Setting
    ) -> list[Mapping[str, Setting]]:
        """The list section ``name`` (the file's, else ``default``), each entry's ``fields`` as ``section``
        reads them."""
        self._claimed.setdefault(name, set()).update(fields)
        found = self._part(name)
        items: object = default if found is None else found
        if not isinstance(items, Sequence) or isinstance(items, str):
            raise DeviceConfigError(f"{self.source}: {name}: expected a list, got {items!r:.60}")
        return [
            self._read(f"{name}[{i}]", item, fields, from_file=found is not None)
            for i, item in enumerate(items)
        ]

    def _read(
        self, label: str, found: object, fields: Mapping[str, Setting], *, from_file: bool
    ) -> Mapping[str, Setting]:
        """The mapping ``found`` (at ``label``) as ``fields`` reads it: each the file's value if it has the
        default's type, else ``DeviceConfigError``; the default when absent. Recorded in ``reads``."""
        where = f"{self.source}: {label}"
        if not isinstance(found, Mapping):
            raise DeviceConfigError(f"{where}: expected a mapping, got {found!r:.60}")
        values = dict(fields)
        for key, default in fields.items():
            if key in found:
                accepts, take, kind = _KINDS[type(default)]
                if not accepts(found[key]):
                    raise DeviceConfigError(f"{where}.{key}: expected {kind}, got {found[key]!r:.60}")
                values[key] = take(found[key])
        self.reads.extend((label, key, values[key], from_file and key in found) for key in fields)
        return MappingProxyType(values)

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
