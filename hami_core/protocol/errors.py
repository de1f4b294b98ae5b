"""The protocol's exception types: one per direction, both ``ValueError`` subclasses."""

from __future__ import annotations

import json
import re

_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,39}")


def shorten(text: str, limit: int = 80) -> str:
    """``text`` quoted for a message, cut in the middle past ``limit``."""
    if len(text) > limit:
        half = (limit - 5) // 2
        text = f"{text[:half]} ... {text[-half:]}"
    return repr(text)


def member_path(path: str, key: object) -> str:
    """``path.key`` for a plain key, else ``path["..."]`` with JSON escapes, cut in the middle."""
    text = key if isinstance(key, str) else repr(key)
    if _PLAIN_KEY.fullmatch(text):
        return f"{path}.{text}" if path else text
    if len(text) > 40:
        text = f"{text[:17]} ... {text[-17:]}"
    return f"{path}[{json.dumps(text)}]"


class DecodeError(ValueError):
    """An annotation value that does not decode. The message names the position and the bad text."""


class EncodeError(ValueError):
    """A device list that cannot be written in the requested encoding."""
