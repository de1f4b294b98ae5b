"""Vendor drivers: hook specifications, discovery through entry points, validation, selection.
The daemons call ``load_drivers``; driver authors use ``hookimpl`` and ``VendorSpec`` from ``hami_core``."""

from __future__ import annotations

from hami_core.plugins.driver import VendorDriver
from hami_core.plugins.errors import (
    DriverConflictError,
    DriverError,
    DriverSelectionError,
    NoDriversError,
    PluginError,
)
from hami_core.plugins.manager import (
    DriverManager,
    LoadFailure,
    LoadReport,
    load_drivers,
    parse_count_resources,
    parse_vendor_names,
)
from hami_core.plugins.settings import DeviceConfig, DeviceConfigError

__all__ = [
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
    "load_drivers",
    "parse_count_resources",
    "parse_vendor_names",
]
