"""Vendor drivers: hook specifications, discovery through entry points, validation, selection, test kit.

The daemons call ``load_drivers``; driver authors use ``hookimpl`` and ``VendorSpec`` from ``hami_core``.
"""

from __future__ import annotations

from hami_core.plugins.driver import VendorDriver
from hami_core.plugins.errors import (
    DriverConflictError,
    DriverError,
    DriverSelectionError,
    NoDriversError,
    PluginError,
)
from hami_core.plugins.fakesource import FAKE_DEVICES_ENV, fake_devices
from hami_core.plugins.hookspecs import ENTRY_POINT_GROUP, VendorSpec, hookimpl
from hami_core.plugins.manager import (
    DriverManager,
    LoadFailure,
    LoadReport,
    load_drivers,
    parse_count_resources,
    parse_vendor_names,
    require_drivers,
)
from hami_core.plugins.settings import DeviceConfig, DeviceConfigError

__all__ = [
    "ENTRY_POINT_GROUP",
    "FAKE_DEVICES_ENV",
    "DeviceConfig",
    "DeviceConfigError",
    "DriverConflictError",
    "DriverError",
    "DriverManager",
    "DriverSelectionError",
    "LoadFailure",
    "LoadReport",
    "NoDriversError",
    "PluginError",
    "VendorDriver",
    "VendorSpec",
    "fake_devices",
    "hookimpl",
    "load_drivers",
    "parse_count_resources",
    "parse_vendor_names",
    "require_drivers",
]
