"""Liveness rules: given what is known of one vendor on one node, is the vendor alive?

A rule only answers the question; the decision core (``decide``) turns the answer into writes and cache
changes. The core ships two rules (spec 4.1); a vendor driver may supply its own object with the same shape.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import attrs

__all__ = ["ALLOCATABLE", "BUILTIN_RULES", "HANDSHAKE", "LivenessFacts", "LivenessRule"]


@attrs.frozen(kw_only=True)
class LivenessFacts:
    """What a liveness rule may look at. All of it is observed or remembered; nothing is fetched."""

    #: The scheduler's ``Requesting_`` stamp on the node is at least one handshake window old.
    stamp_expired: bool
    #: ``status.allocatable[<count resource>]`` of the node, 0 when absent or unparsable.
    allocatable: int
    #: The allocatable count was above zero at an earlier observation of this node and vendor.
    allocatable_seen: bool


@runtime_checkable
class LivenessRule(Protocol):
    """A named rule. ``alive`` must be pure: same facts, same answer."""

    @property
    def name(self) -> str: ...

    def alive(self, facts: LivenessFacts) -> bool: ...


@attrs.frozen
class _HandshakeRule:
    """Alive while the stamp is fresh, or while the node still advertises devices to kubelet."""

    name: str = "handshake"

    def alive(self, facts: LivenessFacts) -> bool:
        return not facts.stamp_expired or facts.allocatable > 0


@attrs.frozen
class _AllocatableRule:
    """NVIDIA's rule: once the count has been seen above zero, liveness *is* the count."""

    name: str = "allocatable"

    def alive(self, facts: LivenessFacts) -> bool:
        if facts.allocatable_seen:
            return facts.allocatable > 0
        return HANDSHAKE.alive(facts)


HANDSHAKE: LivenessRule = _HandshakeRule()
ALLOCATABLE: LivenessRule = _AllocatableRule()
BUILTIN_RULES: dict[str, LivenessRule] = {HANDSHAKE.name: HANDSHAKE, ALLOCATABLE.name: ALLOCATABLE}
