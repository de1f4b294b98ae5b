"""hami-core: HAMi's device registration protocol as a small core plus pip-installable vendor drivers.
Vendor drivers import only the names of ``__all__``, each loaded from its module (``_MODULES``) on first
use (PEP 562), so importing one layer, the protocol for instance, does not load the others."""

# ruff: noqa: F405  (the names of __all__ come from the star imports type checkers read)
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for type checkers; ``__all__`` says which of these names are public
    from hami_core.driverkit import *  # noqa: F403
    from hami_core.plugins.fakesource import *  # noqa: F403
    from hami_core.plugins.hookspecs import *  # noqa: F403
    from hami_core.plugins.settings import *  # noqa: F403
    from hami_core.protocol.codecs import *  # noqa: F403
    from hami_core.protocol.convert import *  # noqa: F403
    from hami_core.protocol.decide import *  # noqa: F403
    from hami_core.protocol.errors import *  # noqa: F403
    from hami_core.protocol.gojson import *  # noqa: F403
    from hami_core.protocol.legacy import *  # noqa: F403
    from hami_core.protocol.liveness import *  # noqa: F403
    from hami_core.protocol.model import *  # noqa: F403
    from hami_core.protocol.nodesource import *  # noqa: F403
    from hami_core.protocol.size import *  # noqa: F403

__version__ = "0.1.0"

__all__ = [
    "ALLOCATABLE",
    "CAPACITY",
    "DEVICES",
    "FAKE_DEVICES_ENV",
    "HANDSHAKE",
    "INT32",
    "INT64",
    "JSON_CODEC",
    "LEGACY_CODEC",
    "MAX_ANNOTATION_BYTES",
    "MAX_DEVICES",
    "UINT32",
    "UINT64",
    "Codec",
    "DecodeError",
    "DeviceConfig",
    "DeviceInfo",
    "EncodeError",
    "FixedFields",
    "FromNode",
    "IntRange",
    "JsonNumber",
    "JsonObject",
    "LivenessFacts",
    "LivenessRule",
    "MigPlacement",
    "MigProfile",
    "NodeView",
    "VendorRules",
    "VendorSpec",
    "__version__",
    "capacity_count",
    "decode_any",
    "decode_json",
    "decode_legacy",
    "device_from_dict",
    "device_to_dict",
    "encode_json",
    "encode_legacy",
    "fake_devices",
    "fixed_fields",
    "fold_key",
    "hookimpl",
    "member_path",
    "memory_per_device",
    "numbered_devices",
    "parse_json",
    "read_any",
    "read_int",
    "type_error",
]

#: Where the public names live, the protocol's modules first (a name is taken from the first that has it).
_MODULES = (
    "hami_core.protocol.errors",
    "hami_core.protocol.size",
    "hami_core.protocol.model",
    "hami_core.protocol.convert",
    "hami_core.protocol.gojson",
    "hami_core.protocol.legacy",
    "hami_core.protocol.codecs",
    "hami_core.protocol.liveness",
    "hami_core.protocol.nodesource",
    "hami_core.protocol.decide",
    "hami_core.driverkit",
    "hami_core.plugins.fakesource",
    "hami_core.plugins.settings",
    "hami_core.plugins.hookspecs",
)


def home_of(name: str) -> str:
    """The module a public name is loaded from: the first (lowest) of ``_MODULES`` that has it."""
    for module in _MODULES:
        if hasattr(importlib.import_module(module), name):
            return module
    raise AttributeError(f"module {__name__!r} lists {name!r} but no module of it exports it")


def __getattr__(name: str) -> Any:
    if name not in __all__:  # ``__version__`` is a global: never looked up here
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home_of(name)), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
