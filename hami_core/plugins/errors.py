"""Errors of the driver framework. Each message is one line naming the driver, its package and the fault."""

from __future__ import annotations

__all__ = ["DriverConflictError", "DriverError", "DriverSelectionError", "NoDriversError", "PluginError"]


class PluginError(Exception):
    """Base class of the driver framework's errors."""


class DriverError(PluginError):
    """One driver was refused at load: it failed to import, to describe itself, or described itself badly.
    ``name`` is the driver's name when known, else its plugin (entry-point) name; ``origin`` is
    ``"<package> <version>"``; ``detail`` says what was wrong, naming the field."""

    def __init__(self, name: str, origin: str, detail: str, *, kind: str = "driver") -> None:
        self.name = name
        self.origin = origin
        self.detail = detail
        super().__init__(f"{kind} {name!r} ({origin}): {detail}")


class DriverConflictError(PluginError):
    """Two drivers claim the same driver name, vendor key or annotation key: a start-up error."""


class DriverSelectionError(PluginError):
    """The operator's selection (``--vendors``, ``--count-resource``) is malformed or names no driver."""


class NoDriversError(PluginError):
    """No driver is selected: the daemons refuse to run idle."""
