"""Kubernetes' size limit for a Node's annotations, and the check every decoder runs first.

A module of its own so that the codecs (``codecs``, ``gojson``, ``legacy``) and ``evaluate`` can all
use it without importing each other: it imports nothing of the protocol but its errors.
"""

from __future__ import annotations

import re

from hami_core.protocol.errors import DecodeError

__all__ = ["MAX_ANNOTATION_BYTES", "check_size", "go_size"]

#: Kubernetes' limit for all annotations of one object together; a longer value is refused unparsed.
MAX_ANNOTATION_BYTES = 256 * 1024

#: The lone surrogates that ``surrogateescape`` makes of invalid UTF-8 bytes: one raw byte each.
_RAW_BYTE = re.compile("[\udc80-\udcff]")


def go_size(value: str) -> int:
    """How many bytes Go holds for ``value``: its UTF-8, where U+DC80..U+DCFF stand for the single raw
    bytes they were decoded from (``surrogateescape``) and any other lone surrogate takes 3 bytes.

    The same count as ``len(gojson.go_bytes(value))``, without building the bytes of a long value."""
    try:
        return len(value.encode("utf-8", "surrogateescape"))
    except UnicodeEncodeError:  # another lone surrogate: 3 bytes each, as are the raw-byte ones here
        return len(value.encode("utf-8", "surrogatepass")) - 2 * len(_RAW_BYTE.findall(value))


def check_size(value: str, encoding: str) -> None:
    """Raise ``DecodeError`` when ``value`` is over ``MAX_ANNOTATION_BYTES`` in UTF-8 (checked unparsed)."""
    if len(value) * 4 <= MAX_ANNOTATION_BYTES:  # no str of this length can be over, whatever it holds
        return
    size = go_size(value)
    if size > MAX_ANNOTATION_BYTES:
        raise DecodeError(
            f"{encoding} value is {size} bytes, over the {MAX_ANNOTATION_BYTES}-byte annotation limit"
        )
