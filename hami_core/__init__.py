"""hami-core: HAMi's device registration protocol as a small core plus pip-installable vendor drivers.

Vendor drivers import only the names exported here, never inner modules.

Each name is loaded from its module when it is first used (PEP 562), so importing one layer, the
protocol for instance, does not load the others (the plugin manager and pluggy).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the same names, for type checkers; at run time __getattr__ loads them
    from hami_core.plugins.fakesource import FAKE_DEVICES_ENV, fake_devices
    from hami_core.plugins.hookspecs import VendorSpec, hookimpl
    from hami_core.plugins.settings import DeviceConfig
    from hami_core.protocol.codecs import JSON_CODEC, LEGACY_CODEC, Codec, decode_any
    from hami_core.protocol.convert import device_from_dict, device_to_dict
    from hami_core.protocol.decide import VendorRules
    from hami_core.protocol.errors import DecodeError, EncodeError
    from hami_core.protocol.gojson import decode_json, encode_json
    from hami_core.protocol.legacy import decode_legacy, encode_legacy
    from hami_core.protocol.liveness import (
        ALLOCATABLE,
        CAPACITY,
        DEVICES,
        HANDSHAKE,
        LivenessFacts,
        LivenessRule,
    )
    from hami_core.protocol.model import DeviceInfo, MigPlacement, MigProfile
    from hami_core.protocol.nodesource import FromNode, NodeView
    from hami_core.protocol.size import MAX_ANNOTATION_BYTES

__version__ = "0.1.0"

#: The module each public name comes from.
_HOMES: dict[str, str] = {
    "FAKE_DEVICES_ENV": "hami_core.plugins.fakesource",
    "fake_devices": "hami_core.plugins.fakesource",
    "VendorSpec": "hami_core.plugins.hookspecs",
    "hookimpl": "hami_core.plugins.hookspecs",
    "DeviceConfig": "hami_core.plugins.settings",
    "JSON_CODEC": "hami_core.protocol.codecs",
    "LEGACY_CODEC": "hami_core.protocol.codecs",
    "Codec": "hami_core.protocol.codecs",
    "decode_any": "hami_core.protocol.codecs",
    "device_from_dict": "hami_core.protocol.convert",
    "device_to_dict": "hami_core.protocol.convert",
    "VendorRules": "hami_core.protocol.decide",
    "DecodeError": "hami_core.protocol.errors",
    "EncodeError": "hami_core.protocol.errors",
    "decode_json": "hami_core.protocol.gojson",
    "encode_json": "hami_core.protocol.gojson",
    "decode_legacy": "hami_core.protocol.legacy",
    "encode_legacy": "hami_core.protocol.legacy",
    "ALLOCATABLE": "hami_core.protocol.liveness",
    "CAPACITY": "hami_core.protocol.liveness",
    "DEVICES": "hami_core.protocol.liveness",
    "HANDSHAKE": "hami_core.protocol.liveness",
    "LivenessFacts": "hami_core.protocol.liveness",
    "LivenessRule": "hami_core.protocol.liveness",
    "DeviceInfo": "hami_core.protocol.model",
    "MigPlacement": "hami_core.protocol.model",
    "MigProfile": "hami_core.protocol.model",
    "FromNode": "hami_core.protocol.nodesource",
    "NodeView": "hami_core.protocol.nodesource",
    "MAX_ANNOTATION_BYTES": "hami_core.protocol.size",
}

__all__ = [
    "ALLOCATABLE",
    "CAPACITY",
    "DEVICES",
    "FAKE_DEVICES_ENV",
    "HANDSHAKE",
    "JSON_CODEC",
    "LEGACY_CODEC",
    "MAX_ANNOTATION_BYTES",
    "Codec",
    "DecodeError",
    "DeviceConfig",
    "DeviceInfo",
    "EncodeError",
    "FromNode",
    "LivenessFacts",
    "LivenessRule",
    "MigPlacement",
    "MigProfile",
    "NodeView",
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


def __getattr__(name: str) -> Any:
    """Load a public name from its module on first use, and keep it here for the next one."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
