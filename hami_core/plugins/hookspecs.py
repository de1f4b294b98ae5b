"""The hook specifications a vendor driver implements, and the record it describes itself with.

A driver package exposes a module (or object) under the ``hami.vendors`` entry-point group. That module
marks its functions with ``hookimpl`` and names them after the hooks below. Only
``hami_vendor_drivers`` is required; the other hooks are optional.

The vendor guide's hook reference (``docs/vendor-guide.md``) is checked against this module by a test:
a hook added here without a section there fails the suite.
"""

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
    """How a driver describes one vendor. Every value is checked once, when the driver loads, and what
    passes is what the core uses (``VendorDriver.rules()``).

    Devices come from one of two sources, or from both (spec 1b):

    * the **register annotation** the vendor's node-side plugin writes (``register_annotation``, read
      with ``encoding``), usually with a handshake (``handshake_annotation``, judged by ``liveness``);
    * the **Node itself** (``from_node``): a pure function of the Node's capacity, allocatable,
      annotations and labels, for a vendor whose plugin only advertises resource quantities. No
      handshake, and nothing is ever written for it.

    With both, the Node's inputs are used where the Node shows the source's main input (its first
    declared one) and the annotation elsewhere.
    One driver package may return several of these (one per chip, for instance).
    """

    #: Driver name, as operators type it in ``--vendors``: lower case letters, digits and ``-``.
    name: str
    #: HAMi's CommonWord for the vendor, e.g. ``NVIDIA``; the key of the scheduler's device cache.
    vendor_key: str
    #: The resource counting the vendor's devices, e.g. ``nvidia.com/gpu`` (HAMi's resourceCountName):
    #: the allocatable count of the liveness rules, the capacity of the ``capacity`` rule.
    count_resource: str
    #: Node annotation carrying the encoded device list, e.g. ``hami.io/node-nvidia-register``.
    register_annotation: str | None = None
    #: Node annotation of the handshake, e.g. ``hami.io/node-handshake-dcu``; ``None`` for no handshake.
    handshake_annotation: str | None = None
    #: ``"json"``, ``"legacy"``, or a codec object of the driver's own (``name``, ``encode``, ``decode``).
    encoding: str | Codec = "json"
    #: The register annotation's liveness rule: ``"handshake"``, ``"allocatable"``, ``"capacity"``,
    #: ``"devices"``, or a rule object of the driver's own (``name``, ``alive``).
    liveness: str | LivenessRule = "handshake"
    #: Whether the vendor's node-side plugin writes ``Reported_<time>`` into the handshake annotation.
    writes_reported: bool = False
    #: Devices computed from the Node (with the source's own liveness rule, ``"devices"`` by default).
    from_node: FromNode | None = None
    #: Node annotation of HAMi's device pair scores (JSON ``[{"uuid", "score": {id: int}}]``), kept with
    #: the register annotation's devices (each takes the first entry whose ``uuid`` is its id).
    pair_scores_annotation: str | None = None


# The hooks. The core calls each driver's implementation on its own, so one driver's failure never
# reaches another's. pluggy checks every implementation's arguments against these (``_verify_hook``).


@hookspec
def hami_vendor_drivers(device_config: DeviceConfig) -> Iterable[VendorSpec]:
    """Describe the vendors this plugin provides.

    Called once per process, when drivers are loaded (daemon start-up, ``hami vendors``). Return one
    ``VendorSpec`` per vendor, at least one. It must be cheap and must not touch hardware or the
    network: it only describes. ``device_config`` is HAMi's device config (``--device-config``):
    ask it for your section with each setting's default, ``device_config.section("cambricon",
    resourceCountName="cambricon.com/vmlu")``, and build the specs from what it returns. Required.
    """
    raise NotImplementedError


@hookspec
def hami_discover_devices(driver_name: str, node_name: str) -> list[DeviceInfo] | None:
    """List the devices of ``driver_name`` on this node, for the reporter.

    Called by the reporter on every pass (every 30 s, 5 s after a failure), only for drivers this
    plugin provides. Return the devices in index order (an empty list means the node has none), or
    ``None`` when the driver has no way to look (no hardware library, no simulation source). Raise
    on a failed probe: the reporter logs it and retries. Optional: without it the reporter cannot
    publish this vendor.
    """
    raise NotImplementedError


@hookspec
def hami_node_deleted(driver_name: str, node_name: str) -> None:
    """Forget anything the driver keeps about ``node_name``.

    Called by the scheduler when a Node object is deleted, once for every selected driver of this
    plugin, after the core has dropped the node from its cache. The return value is ignored, and an
    exception is logged without stopping the other drivers. Optional.
    """
    raise NotImplementedError
