"""The codec interface: how a device list becomes an annotation value and back.

The two encodings of the protocol (legacy colon and Go-compatible JSON) are instances of ``Codec``; a
vendor driver may supply its own object of the same shape.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from hami_core.protocol.model import DeviceInfo

__all__ = ["MAX_ANNOTATION_BYTES", "Codec"]

#: Kubernetes' limit for all annotations of one object together; a longer value is refused unparsed.
MAX_ANNOTATION_BYTES = 256 * 1024


@runtime_checkable
class Codec(Protocol):
    """Encodes and decodes one vendor's register annotation value."""

    @property
    def name(self) -> str: ...

    def decode(self, value: str) -> list[DeviceInfo]:
        """Decode an annotation value; raise ``DecodeError`` (and nothing else) when it is malformed."""
        ...

    def encode(self, devices: Sequence[DeviceInfo]) -> str:
        """Encode devices; raise ``EncodeError`` when they cannot be written in this encoding."""
        ...
