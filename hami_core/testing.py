"""The test kit for vendor driver authors: ``DriverContract``. Importing it needs pytest."""

from __future__ import annotations

from hami_core.plugins.testkit import SAMPLE_DEVICE_LISTS, DriverContract

__all__ = ["SAMPLE_DEVICE_LISTS", "DriverContract"]
