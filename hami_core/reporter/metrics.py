"""The reporter's metrics (the table is docs/observability.md's), each ``vendor`` series at 0 at start."""

from __future__ import annotations

from collections.abc import Sequence

from prometheus_client import Counter, Gauge

from hami_core.plugins.driver import VendorDriver
from hami_core.serve.metrics import new_registry

__all__ = ["ReporterMetrics"]


class ReporterMetrics:
    def __init__(self, drivers: Sequence[VendorDriver]) -> None:
        self.registry = r = new_registry("reporter")
        self.passes = Counter("hami_reporter_passes", "Passes the reporter ran.", registry=r)
        self.failed_passes = Counter(
            "hami_reporter_failed_passes",
            "Passes with any failure (API server, a probe, an encoding); the next one comes sooner.",
            registry=r,
        )
        self.patches = Counter("hami_reporter_patches", "Merge patches sent to the Node.", registry=r)
        self.published_devices = Gauge(
            "hami_reporter_published_devices",
            "Devices of the vendor on the Node as this reporter last published them (0: none published).",
            ["vendor"],
            registry=r,
        )
        self.device_source = Gauge(
            "hami_reporter_device_source",
            "1 when the vendor's driver had a device source on this node in the last pass, else 0.",
            ["vendor"],
            registry=r,
        )
        self.last_success = Gauge(
            "hami_reporter_last_success_timestamp_seconds",
            "Unix time of the last pass without any failure (0 until the first).",
            registry=r,
        )
        for driver in drivers:
            self.published_devices.labels(vendor=driver.vendor_key).set(0)
            self.device_source.labels(vendor=driver.vendor_key).set(0)
