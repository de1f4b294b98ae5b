"""The hooks a vendor driver implements and its ``VendorSpec``; ``docs/vendor-guide.md`` sections 2 and 5
(checked against this module by a test) say what each means."""

from __future__ import annotations

from collections.abc import Iterable

import attrs
import pluggy

from hami_core.plugins.settings import DeviceConfig
from hami_core.protocol.codecs import Codec
from hami_core.protocol.liveness import LivenessRule
from hami_core.protocol.model import DeviceInfo
from hami_core.protocol.nodesource import FromNode

__all__ = [
    "ENTRY_POINT_GROUP",
    "PROJECT_NAME",
    "VendorSpec",
    "hookimpl",
    "hookspec",
]

#: The pluggy project name; hook implementations must use the marker made for it (``hookimpl``).
PROJECT_NAME = "hami"
#: The entry-point group the core discovers drivers in.
ENTRY_POINT_GROUP = "hami.vendors"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


@attrs.frozen(kw_only=True)
class VendorSpec:
    """How a driver describes one vendor, checked once when it loads (the guide's section 2 table)."""

    name: str
    vendor_key: str
    count_resource: str
    register_annotation: str | None = None
    handshake_annotation: str | None = None
    #: ``"json"``, ``"legacy"``, or a codec object of the driver's own.
    encoding: str | Codec = "json"
    #: ``"handshake"``, ``"allocatable"``, ``"capacity"``, ``"devices"``, or a rule object of its own.
    liveness: str | LivenessRule = "handshake"
    writes_reported: bool = False
    from_node: FromNode | None = None
    pair_scores_annotation: str | None = None


# The core calls each driver's implementation on its own; pluggy checks their arguments against these.


@hookspec
def hami_vendor_drivers(device_config: DeviceConfig) -> Iterable[VendorSpec]:
    """Describe the vendors this plugin provides."""
    raise NotImplementedError


@hookspec
def hami_discover_devices(driver_name: str, node_name: str) -> list[DeviceInfo] | None:
    """List the devices of ``driver_name`` on this node, for the reporter."""
    raise NotImplementedError


@hookspec
def hami_node_deleted(driver_name: str, node_name: str) -> None:
    """Forget anything the driver keeps about ``node_name``."""
    raise NotImplementedError
