"""The reporter's pure core (spec section 7): the one merge patch of a pass: each register value that
differs from the Node's now (beyond HAMi: so a failed patch or a hand deletion is repaired), and the
``Reported_`` heartbeat of each vendor whose plugin writes one and whose probe worked."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

import attrs

from hami_core.plugins.driver import VendorDriver
from hami_core.protocol.codecs import LEGACY_CODEC
from hami_core.protocol.errors import EncodeError
from hami_core.protocol.handshake import format_report
from hami_core.protocol.model import DeviceInfo

__all__ = ["EMPTY_LEGACY", "Discovery", "PassPlan", "plan_pass", "register_value"]

#: The legacy value of a node without devices. The legacy encoder writes ``""`` for no devices, which
#: neither HAMi nor this project can read back (no ``:``); ``":"`` reads as an empty list in both.
EMPTY_LEGACY = ":"


@attrs.frozen(kw_only=True)
class Discovery:
    """What one driver's probe found on the node in this pass."""

    driver: VendorDriver
    #: The devices, in index order; ``None`` when the driver has no way to look (nothing to publish).
    devices: Sequence[DeviceInfo] | None = None
    #: Why the probe failed (one line); the driver is then left out of this pass.
    error: str | None = None


@attrs.frozen(kw_only=True)
class PassPlan:
    """The outcome of one pass: the patch to send and what it means."""

    #: Annotation -> value, one merge patch; empty when nothing is to be written.
    patch: Mapping[str, str]
    #: Drivers whose register value changes with the patch.
    published: tuple[str, ...] = ()
    #: Drivers whose register value is on the Node once the patch is applied: what this pass publishes.
    current: tuple[str, ...] = ()
    #: Drivers without a device source on this node (their probe had no way to look): nothing to publish.
    unsourced: tuple[str, ...] = ()
    #: ``(driver, why)`` for each driver that failed this pass (probe or encoding), why on one line.
    failures: tuple[tuple[str, str], ...] = ()

    @property
    def problems(self) -> tuple[str, ...]:
        return tuple(f"{driver}: {why}" for driver, why in self.failures)


def register_value(driver: VendorDriver, devices: Sequence[DeviceInfo]) -> str:
    """The register annotation value of ``devices`` in the driver's encoding; raises ``EncodeError``."""
    codec = driver.codec
    if codec is None:
        raise EncodeError(
            f"driver {driver.name!r} has no register annotation: its devices come from the Node"
        )
    value = codec.encode(devices)
    if not isinstance(value, str):
        raise EncodeError(f"codec {codec.name!r} returned {type(value).__name__}, not a str")
    if not devices and value == "" and codec is LEGACY_CODEC:
        return EMPTY_LEGACY
    return value


def plan_pass(annotations: Mapping[str, str], found: Sequence[Discovery], now: datetime) -> PassPlan:
    """The merge patch for one pass over the Node's ``annotations`` now, at the node's aware clock ``now``."""
    patch: dict[str, str] = {}
    published: list[str] = []
    current: list[str] = []
    unsourced: list[str] = []
    failures: list[tuple[str, str]] = []
    for discovery in found:
        driver = discovery.driver
        if discovery.error is not None:
            failures.append((driver.name, discovery.error))
            continue
        register = driver.register_annotation
        if register is None:  # its devices come from the Node (spec 1b): nothing for a reporter to publish
            continue
        if discovery.devices is None:
            unsourced.append(driver.name)
            continue
        try:
            value = register_value(driver, discovery.devices)
        except Exception as exc:  # a driver's own codec must not stop the other drivers
            failures.append((driver.name, f"cannot encode its devices: {type(exc).__name__}: {exc}"))
            continue
        if annotations.get(register) != value:
            patch[register] = value
            published.append(driver.name)
        current.append(driver.name)
        if driver.writes_reported and driver.handshake_annotation is not None:
            patch[driver.handshake_annotation] = format_report(now)
    return PassPlan(
        patch=patch,
        published=tuple(published),
        current=tuple(current),
        unsourced=tuple(unsourced),
        failures=tuple(failures),
    )
