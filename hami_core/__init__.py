"""hami-core: HAMi's device registration protocol as a small core plus pip-installable vendor drivers.

Vendor drivers import only the names exported here, never inner modules.
"""

from __future__ import annotations

from hami_core.plugins.fakesource import FAKE_DEVICES_ENV, fake_devices
from hami_core.plugins.hookspecs import HOOKSPEC_VERSION, VendorSpec, hookimpl
from hami_core.protocol.codecs import JSON_CODEC, LEGACY_CODEC, MAX_ANNOTATION_BYTES, Codec, decode_any
from hami_core.protocol.convert import device_from_dict, device_to_dict
from hami_core.protocol.decide import VendorRules
from hami_core.protocol.errors import DecodeError, EncodeError
from hami_core.protocol.gojson import decode_json, encode_json
from hami_core.protocol.legacy import decode_legacy, encode_legacy
from hami_core.protocol.liveness import ALLOCATABLE, HANDSHAKE, LivenessFacts, LivenessRule
from hami_core.protocol.model import DeviceInfo, MigPlacement, MigProfile

__version__ = "0.1.0"

__all__ = [
    "ALLOCATABLE",
    "FAKE_DEVICES_ENV",
    "HANDSHAKE",
    "HOOKSPEC_VERSION",
    "JSON_CODEC",
    "LEGACY_CODEC",
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
    "VendorSpec",
    "__version__",
    "decode_any",
    "decode_json",
    "decode_legacy",
    "device_from_dict",
    "device_to_dict",
    "encode_json",
    "encode_legacy",
    "fake_devices",
    "hookimpl",
]
