"""One loaded driver: the vendor as the core uses it (checked once), and where it came from."""

from __future__ import annotations

import attrs

from hami_core.protocol.codecs import Codec
from hami_core.protocol.decide import VendorRules
from hami_core.protocol.liveness import LivenessRule
from hami_core.protocol.nodesource import FromNode

__all__ = ["VendorDriver", "origin_of"]


def origin_of(plugin: str, package: str, version: str) -> str:
    """``package version`` for messages, or ``<registered plugin NAME>`` for a directly registered plugin."""
    if not package:
        return f"<registered plugin {plugin}>"
    return f"{package} {version}".rstrip()


@attrs.frozen(kw_only=True)
class VendorDriver:
    """One loaded, checked driver, built by the manager; the vendor's values live once, in ``rules()``."""

    #: Driver name (``--vendors`` selects by it).
    name: str
    #: The vendor as the core uses it, with the operator's count resource override applied.
    vendor: VendorRules
    writes_reported: bool
    #: The pluggy plugin (entry-point) name that provided this driver.
    plugin: str
    #: Distribution name and version of the package the driver came from (``""`` when registered directly).
    package: str
    version: str
    #: The device config settings its plugin read, as ``(section, key, value, set by the file)``.
    settings: tuple[tuple[str, str, object, bool], ...] = ()

    def rules(self) -> VendorRules:
        return self.vendor

    @property
    def vendor_key(self) -> str:
        return self.vendor.vendor_key

    @property
    def register_annotation(self) -> str | None:
        return self.vendor.register_annotation

    @property
    def handshake_annotation(self) -> str | None:
        return self.vendor.handshake_annotation

    @property
    def count_resource(self) -> str:
        return self.vendor.count_resource

    @property
    def codec(self) -> Codec | None:
        return self.vendor.codec

    @property
    def encoding(self) -> str | None:
        return None if self.vendor.codec is None else self.vendor.codec.name

    @property
    def liveness(self) -> LivenessRule:
        """The liveness rule of the vendor's main source (the register annotation's, if it has one)."""
        return self.vendor.liveness

    @property
    def node_source(self) -> FromNode | None:
        return self.vendor.node_source

    @property
    def sources(self) -> tuple[str, ...]:
        """Where the devices come from, in the order they are looked for: ``"node"``, ``"annotation"``."""
        kinds = ("node",) if self.vendor.node_source is not None else ()
        return kinds + (("annotation",) if self.vendor.register_annotation is not None else ())

    @property
    def annotation_keys(self) -> tuple[str, ...]:
        """The register and handshake annotations (a node source's annotations are read, never written)."""
        keys = (self.register_annotation, self.handshake_annotation)
        return tuple(key for key in keys if key is not None)

    @property
    def origin(self) -> str:
        return origin_of(self.plugin, self.package, self.version)
