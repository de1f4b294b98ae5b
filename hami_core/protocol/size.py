"""Kubernetes' annotation size limit, checked by every reader before it parses (``codecs`` re-exports)."""

from __future__ import annotations

import re

from hami_core.protocol.errors import DecodeError

#: Kubernetes' limit for all annotations of one object together.
MAX_ANNOTATION_BYTES = 256 * 1024

_ESCAPED_BYTE = re.compile("[\udc80-\udcff]")


def go_size(value: str) -> int:
    """``len(gojson.go_bytes(value))``, without building them."""
    try:
        return len(value.encode("utf-8", "surrogateescape"))
    except UnicodeEncodeError:
        escaped = len(_ESCAPED_BYTE.findall(value))
        return len(value.encode("utf-8", "surrogatepass")) - 2 * escaped


def check_size(value: str, encoding: str) -> None:
    """Raise ``DecodeError`` when ``value`` is over ``MAX_ANNOTATION_BYTES`` in UTF-8 (checked unparsed)."""
    if len(value) * 4 <= MAX_ANNOTATION_BYTES:  # no str of this length can be over, whatever it holds
        return
    size = go_size(value)
    if size > MAX_ANNOTATION_BYTES:
        raise DecodeError(
            f"{encoding} value is {size} bytes, over the {MAX_ANNOTATION_BYTES}-byte annotation limit"
        )


def check_value(value: object, encoding: str) -> None:
    """What every decoder checks first: ``value`` is a str and within ``MAX_ANNOTATION_BYTES``."""
    if not isinstance(value, str):
        raise DecodeError(f"{encoding} value must be a str, got {type(value).__name__}")
    if len(value) * 4 > MAX_ANNOTATION_BYTES:  # check_size's own first test, without the call
        check_size(value, encoding)
