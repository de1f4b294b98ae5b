"""Asking a vendor's driver code with its failures isolated (``ask_driver``), then ``decide``: ``evaluate``
is the two in a row, which the scheduler and ``hami doctor`` both run, so they cannot disagree.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from datetime import datetime, timedelta

import attrs

from hami_core.protocol.codecs import JSON_CODEC, LEGACY_CODEC, Codec, decode_any
from hami_core.protocol.decide import (
    Decision,
    DriverAnswers,
    Observation,
    VendorMemory,
    VendorRules,
    decide,
    register_to_decode,
    vendor_absent,
)
from hami_core.protocol.errors import DecodeError, shorten
from hami_core.protocol.handshake import DEFAULT_WINDOW
from hami_core.protocol.liveness import LivenessFacts
from hami_core.protocol.model import DeviceInfo
from hami_core.protocol.nodesource import NodeView
from hami_core.protocol.size import check_size


def reader(codec: Codec) -> Callable[[str], list[DeviceInfo]]:
    """A built-in codec reads both encodings (spec 3.4: a plugin of another HAMi version may write the
    other one); a driver's own codec reads its own."""
    if codec is JSON_CODEC or codec is LEGACY_CODEC:
        return decode_any
    return codec.decode


def read_register(value: str, rules: VendorRules, node: str) -> tuple[DeviceInfo, ...] | str:
    """The devices of a register value with ``devicevendor`` set, or a one-line error naming the node."""
    codec = rules.codec
    if codec is None or rules.register_annotation is None:
        raise ValueError(f"read_register: vendor {rules.vendor_key} has no register annotation")
    where = f"node {node}: annotation {rules.register_annotation}"
    try:
        check_size(value, "the")  # before any codec: a driver's own may not check it
        decoded = reader(codec)(value)
    except DecodeError as exc:
        return f"{where}: {exc}"
    except Exception as exc:  # a driver's codec must not take the scheduler down
        return f"{where}: codec {codec.name!r} failed: {_failure(exc)}"
    return _devices(decoded, rules, f"{where}: codec {codec.name!r}")


def read_node(view: NodeView, rules: VendorRules) -> tuple[DeviceInfo, ...] | str:
    """The devices the vendor's ``FromNode`` computes from ``view``, checked as a decoded value is."""
    source = rules.node_source
    if source is None:
        raise ValueError(f"read_node: vendor {rules.vendor_key} has no node source")
    where = f"node {view.name}: {rules.vendor_key} devices from the Node"
    try:
        computed = source.devices(view)
    except DecodeError as exc:
        return f"{where}: {exc}"
    except Exception as exc:  # a driver's function must not take the scheduler down
        return f"{where}: the driver's function failed: {_failure(exc)}"
    return _devices(computed, rules, f"{where}: the driver's function")


def _failure(exc: Exception) -> str:
    """An exception of a driver's code, as one line."""
    return shorten(" ".join(f"{type(exc).__name__}: {exc}".split()), 160)[1:-1]


def _devices(decoded: object, rules: VendorRules, what: str) -> tuple[DeviceInfo, ...] | str:
    if not isinstance(decoded, list) or not all(isinstance(d, DeviceInfo) for d in decoded):
        return f"{what} returned {type(decoded).__name__}, not a list of DeviceInfo"
    return tuple(_kept(d, rules.vendor_key) for d in decoded)


#: One object per device memory size (an int above 256 is new per parse); bounded against odd values.
_SIZES: dict[int, int] = {}
_SIZES_MAX = 4096


def _kept(device: DeviceInfo, vendor: str) -> DeviceInfo:
    """The device as the cache keeps it: ``devicevendor`` set, model, mode and memory size shared (a record
    holds exact str and int, whatever subclasses a driver gave its constructor: ``model._plain``)."""
    kind, mode, devmem = sys.intern(device.type), sys.intern(device.mode), device.devmem
    devmem = _SIZES.setdefault(devmem, devmem) if len(_SIZES) < _SIZES_MAX else _SIZES.get(devmem, devmem)
    if (
        device.devicevendor == vendor
        and kind is device.type
        and mode is device.mode
        and devmem is device.devmem
    ):
        return device
    return attrs.evolve(device, type=kind, mode=mode, devmem=devmem, devicevendor=vendor)


def _alive(rules: VendorRules, obs: Observation, expired: bool, seen: bool) -> bool | str:
    """The vendor's liveness rule on the node's facts, or a one-line error when it raised."""
    facts = LivenessFacts(
        stamp_expired=expired, allocatable=obs.allocatable, allocatable_seen=seen, capacity=obs.capacity
    )
    try:
        return bool(rules.liveness.alive(facts))
    except Exception as exc:
        return f"node {obs.node}: liveness rule {rules.liveness.name!r} failed: {_failure(exc)}"


def ask_driver(
    obs: Observation, memory: VendorMemory, rules: VendorRules, *, view: NodeView | None = None
) -> DriverAnswers:
    """Everything ``decide`` needs from the driver, as plain values; judged on a node source,
    ``obs.register`` is its ``FromNode.key`` and ``view`` what its function is shown."""
    value = register_to_decode(obs, memory)
    decoded: tuple[DeviceInfo, ...] | str | None = None
    if value is not None:
        if rules.register_annotation is not None:
            decoded = read_register(value, rules, obs.node)
        elif view is None:
            raise ValueError(f"ask_driver: node {obs.node}: the {rules.vendor_key} node source needs a view")
        else:
            decoded = read_node(view, rules)
    seen = memory.allocatable_seen
    fresh, expired = _alive(rules, obs, False, seen), _alive(rules, obs, True, seen)
    seen_after = seen or obs.allocatable > 0
    at_expiry = expired if seen_after == seen else _alive(rules, obs, True, seen_after)
    return DriverAnswers(decoded=decoded, alive_fresh=fresh, alive_expired=expired, alive_at_expiry=at_expiry)


def evaluate(
    obs: Observation,
    memory: VendorMemory,
    *,
    now: datetime,
    rules: VendorRules,
    window: timedelta = DEFAULT_WINDOW,
    mono: float | None = None,
    wall_step_at: float | None = None,
    view: NodeView | None = None,
) -> Decision:
    """Ask the driver (unless the node has nothing of the vendor), then decide; ``rules`` is the vendor as
    judged here: ``rules.node_path()`` with ``view`` on its node source (``scheduler/observe.py``)."""
    absent = vendor_absent(obs, memory)
    answers = DriverAnswers() if absent else ask_driver(obs, memory, rules, view=view)
    return decide(
        obs, memory, answers, now=now, rules=rules, window=window, mono=mono, wall_step_at=wall_step_at
    )
