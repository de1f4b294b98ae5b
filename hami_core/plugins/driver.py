"""The validated description of one vendor driver, as the rest of the core uses it."""

from __future__ import annotations

import attrs

from hami_core.protocol.codecs import Codec
from hami_core.protocol.decide import VendorRules
from hami_core.protocol.liveness import LivenessRule

__all__ = ["VendorDriver", "origin_of"]


def origin_of(plugin: str, package: str, version: str) -> str:
    """``package version`` for messages, or ``<registered plugin NAME>`` for a directly registered plugin."""
    if not package:
        return f"<registered plugin {plugin}>"
    return f"{package} {version}".rstrip()


@attrs.frozen(kw_only=True)
class VendorDriver:
    """One loaded, checked driver. Built only by the manager, from a driver's ``VendorSpec``."""

    #: Driver name (``--vendors`` selects by it).
    name: str
    #: HAMi's CommonWord, the key of the scheduler's device cache.
    vendor_key: str
    register_annotation: str
    #: ``None`` for a vendor without a handshake.
    handshake_annotation: str | None
    #: The name of the encoding, ``codec.name``.
    encoding: str
    codec: Codec
    #: Possibly overridden by the operator (``--count-resource``).
    count_resource: str
    liveness: LivenessRule
    writes_reported: bool
    #: The hook specification version the driver was written against.
    hookspec_version: str
    #: The pluggy plugin (entry-point) name that provided this driver.
    plugin: str
    #: Distribution name and version of the package the driver came from (``""`` when registered directly).
    package: str
    version: str

    @property
    def annotation_keys(self) -> tuple[str, ...]:
        """The node annotations this driver owns: register, then handshake when it has one."""
        if self.handshake_annotation is None:
            return (self.register_annotation,)
        return (self.register_annotation, self.handshake_annotation)

    @property
    def origin(self) -> str:
        """Where the driver came from, for messages."""
        return origin_of(self.plugin, self.package, self.version)

    def rules(self) -> VendorRules:
        """What the decision core needs of this vendor."""
        return VendorRules(
            vendor_key=self.vendor_key,
            register_annotation=self.register_annotation,
            handshake_annotation=self.handshake_annotation,
            count_resource=self.count_resource,
            liveness=self.liveness,
            codec=self.codec,
        )
