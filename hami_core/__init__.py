"""hami-core: HAMi's device registration protocol as a small core plus pip-installable vendor drivers.

Vendor drivers import only the names exported here, never inner modules.
"""

from __future__ import annotations

from hami_core.protocol.codecs import MAX_ANNOTATION_BYTES, Codec
from hami_core.protocol.decide import VendorRules
from hami_core.protocol.errors import DecodeError, EncodeError
from hami_core.protocol.liveness import ALLOCATABLE, HANDSHAKE, LivenessFacts, LivenessRule
from hami_core.protocol.model import DeviceInfo, MigPlacement, MigProfile

__version__ = "0.1.0"

__all__ = [
    "ALLOCATABLE",
    "HANDSHAKE",
    "MAX_ANNOTATION_BYTES",
    "Codec",
    "DecodeError",
    "DeviceInfo",
    "EncodeError",
    "LivenessFacts",
    "LivenessRule",
    "MigPlacement",
    "MigProfile",
    "VendorRules",
    "__version__",
]
