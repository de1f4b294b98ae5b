"""The device cache: node name -> vendor key -> what that vendor registered on that node (spec section 5).

Written by the scheduler's single worker, read from any thread (the HTTP view, an extender).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import attrs

from hami_core.protocol.convert import device_to_dict
from hami_core.protocol.model import DeviceInfo
from hami_core.protocol.states import VendorState

__all__ = ["DeviceCache", "VendorEntry"]


@attrs.frozen(kw_only=True)
class VendorEntry:
    """One vendor on one node: its devices (the last good list) and its state."""

    vendor_key: str
    devices: tuple[DeviceInfo, ...]
    #: ``registered``, or ``degraded`` when the current register value does not decode (or the driver's
    #: liveness rule fails): the two states in which a vendor is in the cache.
    state: VendorState
    #: The decision core's reason code for the last change.
    reason: str
    #: The decode error while degraded.
    error: str | None = None
    updated_at: datetime | None = None
    #: Where the devices came from: ``"annotation"`` (the register annotation) or ``"node"`` (spec 1b).
    source: str = "annotation"
    #: Each device's pair scores (``protocol/pairscores.py``), beside ``devices``; ``()``: none.
    pair_scores: tuple[Mapping[str, int] | None, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "vendor": self.vendor_key,
            "state": self.state,
            "reason": self.reason,
            "error": self.error,
            "updated_at": self.updated_at.isoformat() if self.updated_at else None,
            "source": self.source,
            "devices": [device_to_dict(d) for d in self.devices],
            "pair_scores": {
                d.id: dict(scores)
                for d, scores in zip(self.devices, self.pair_scores, strict=False)
                if scores is not None
            },
        }


class DeviceCache:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._nodes: dict[str, dict[str, VendorEntry]] = {}

    def put(self, node: str, entry: VendorEntry) -> None:
        with self._lock:
            self._nodes.setdefault(node, {})[entry.vendor_key] = entry

    def remove(self, node: str, vendor_key: str) -> None:
        with self._lock:
            vendors = self._nodes.get(node, {})
            vendors.pop(vendor_key, None)
            if not vendors:
                self._nodes.pop(node, None)

    def remove_node(self, node: str) -> None:
        with self._lock:
            self._nodes.pop(node, None)

    def node(self, node: str) -> Mapping[str, VendorEntry]:
        """The vendors registered on ``node`` (a copy; empty when none)."""
        with self._lock:
            return dict(self._nodes.get(node, {}))

    def vendor(self, node: str, vendor_key: str) -> VendorEntry | None:
        with self._lock:
            return self._nodes.get(node, {}).get(vendor_key)

    def nodes(self) -> list[str]:
        with self._lock:
            return sorted(self._nodes)

    def device_count(self) -> int:
        with self._lock:
            return sum(len(e.devices) for vendors in self._nodes.values() for e in vendors.values())

    def to_json(self) -> dict[str, Any]:
        """Everything, as the HTTP view serves it: ``{node: {vendor: entry}}``."""
        with self._lock:
            nodes = {name: dict(vendors) for name, vendors in self._nodes.items()}
        return {
            name: {key: entry.to_json() for key, entry in sorted(vendors.items())}
            for name, vendors in sorted(nodes.items())
        }
