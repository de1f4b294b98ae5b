"""The protocol's exception types: one per direction, both ``ValueError`` subclasses."""

from __future__ import annotations

__all__ = ["DecodeError", "EncodeError", "shorten"]

_MAX_SHOWN = 80


def shorten(text: str, limit: int = _MAX_SHOWN) -> str:
    """Quote ``text`` for an error message, cut in the middle when it is longer than ``limit``."""
    if len(text) > limit:
        half = (limit - 5) // 2
        text = f"{text[:half]} ... {text[-half:]}"
    return repr(text)


class DecodeError(ValueError):
    """An annotation value that does not decode. The message names the position and the bad text."""


class EncodeError(ValueError):
    """A device list that cannot be written in the requested encoding."""
