"""The defaults the options show, read from the config classes that own them: each is written once, in
its class (``SchedulerConfig``, ``ReporterConfig``, the elector's ``ElectionConfig``)."""

from __future__ import annotations

from typing import Any

import attrs

from hami_core.durations import format_duration

__all__ = ["default_of", "duration_default_of"]


def default_of(cls: type, name: str) -> Any:
    """The default of attrs class ``cls``'s field ``name`` (not a factory's: those are computed per use)."""
    default = attrs.fields_dict(cls)[name].default
    if isinstance(default, attrs.Factory):  # type: ignore[arg-type]
        raise TypeError(f"{cls.__name__}.{name} has a factory, not one default value")
    return default


def duration_default_of(cls: type, name: str) -> str:
    """The default of a timing field as a flag takes it: ``15s``, ``1m``."""
    return format_duration(default_of(cls, name))
