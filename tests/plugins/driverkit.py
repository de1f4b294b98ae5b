"""Helpers for the driver framework's tests: valid specs, plugin objects, driver module sources."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import attrs

from hami_core import VendorSpec, hookimpl

IN_TREE = ("dcu", "kunlun", "mlu", "nvidia")

#: ``fake_dist(package, source, *, entry_name=None, group="hami.vendors", version="1.2.3") -> module``
FakeDist = Callable[..., str]


def make_spec(**changes: Any) -> VendorSpec:
    """A valid spec for a made-up vendor, with ``changes`` applied (no validation on the way)."""
    base = VendorSpec(
        name="acme",
        vendor_key="ACME",
        register_annotation="hami.io/node-acme-register",
        handshake_annotation="hami.io/node-handshake-acme",
        encoding="json",
        count_resource="acme.example/gpu",
        liveness="handshake",
        writes_reported=True,
    )
    return attrs.evolve(base, **changes)


def vendor_spec_for(name: str, **changes: Any) -> VendorSpec:
    """A valid spec whose name, vendor key and keys all derive from ``name``."""
    fields: dict[str, Any] = {
        "name": name,
        "vendor_key": name.upper(),
        "register_annotation": f"hami.io/node-{name}-register",
        "handshake_annotation": f"hami.io/node-handshake-{name}",
        "count_resource": f"{name}.example/gpu",
    }
    fields.update(changes)
    return make_spec(**fields)


class Describes:
    """A plugin object that describes the given specs and records the hook calls it receives."""

    def __init__(self, *specs: object) -> None:
        self.specs = specs
        self.calls: list[tuple[str, str, str]] = []

    @hookimpl
    def hami_vendor_drivers(self) -> list[object]:
        return list(self.specs)

    @hookimpl
    def hami_node_deleted(self, driver_name: str, node_name: str) -> None:
        self.calls.append(("node_deleted", driver_name, node_name))


#: Source of a well-behaved driver module; format with name=...
GOOD_DRIVER = """
from hami_core import VendorSpec, hookimpl

@hookimpl
def hami_vendor_drivers():
    return [VendorSpec(
        name="{name}", vendor_key="{key}", register_annotation="hami.io/node-{name}-register",
        handshake_annotation={handshake}, encoding="legacy", count_resource="{name}.example/gpu",
    )]
"""


def good_driver(name: str, *, key: str | None = None, handshake: str | None = None) -> str:
    """Source of a driver module describing one valid driver."""
    return GOOD_DRIVER.format(
        name=name, key=key or name.upper(), handshake=repr(handshake or f"hami.io/node-handshake-{name}")
    )
