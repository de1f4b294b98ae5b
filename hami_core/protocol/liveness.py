"""Liveness rules (spec 1b, 4.1): is one vendor alive on one node? A driver may supply its own."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol, runtime_checkable

import attrs


@attrs.frozen(kw_only=True)
class LivenessFacts:
    """What a liveness rule may look at, as ``decide.Observation`` holds it (``capacity`` only for a rule
    that ``reads_capacity``); ``allocatable_seen``: above zero at an earlier observation."""

    stamp_expired: bool
    allocatable: int
    allocatable_seen: bool
    capacity: int = 0


@runtime_checkable
class LivenessRule(Protocol):
    """A named rule. ``alive`` must be pure: same facts, same answer."""

    @property
    def name(self) -> str: ...

    def alive(self, facts: LivenessFacts) -> bool: ...


def reads_capacity(rule: object) -> bool:
    """Whether ``rule`` says ``reads_capacity = True``: only then is the capacity kept and parsed."""
    return getattr(rule, "reads_capacity", False) is True


@attrs.frozen
class _Rule:
    name: str
    alive: Callable[[LivenessFacts], bool] = attrs.field(eq=False, repr=False)
    reads_capacity: bool = False


#: Alive while the stamp is fresh, or while the node still advertises devices to kubelet.
HANDSHAKE: LivenessRule = _Rule("handshake", lambda f: not f.stamp_expired or f.allocatable > 0)
#: NVIDIA's rule: once the count has been seen above zero, liveness *is* the count.
ALLOCATABLE: LivenessRule = _Rule(
    "allocatable", lambda f: f.allocatable > 0 if f.allocatable_seen else HANDSHAKE.alive(f)
)
#: HAMi's "always healthy" (MLU, Kunlun, Moore Threads, AWS Neuron, Enflame): registered while it has devices.
DEVICES: LivenessRule = _Rule("devices", lambda f: True)
#: HAMi's GCU, MetaX GPU and AMD rule: alive while ``status.capacity`` of the count resource is > 0.
CAPACITY: LivenessRule = _Rule("capacity", lambda f: f.capacity > 0, reads_capacity=True)
BUILTIN_RULES: dict[str, LivenessRule] = {r.name: r for r in (HANDSHAKE, ALLOCATABLE, DEVICES, CAPACITY)}
