"""The states of a vendor on a node, as an operator sees them: one vocabulary for ``/cache``, ``hami
doctor``, the metrics, the Events and the logs.

The decision core says *why* (``Reason``, the verdict); the operator asks *where it stands*. ``state_of``
is the one mapping from the one to the other; ``scheduler/explain.py`` words both.
"""

from __future__ import annotations

import enum

from hami_core.protocol.decide import Reason

__all__ = ["IN_CACHE", "KEPT_STATES", "VendorState", "parse_states", "state_of"]


class VendorState(enum.StrEnum):
    """Where a vendor stands on a node once the scheduler has judged the node as it is now (a ``str``:
    it is its own JSON and label value)."""

    #: In the device cache with its devices.
    REGISTERED = "registered"
    #: The register value does not decode (the cache keeps the last good list), or the driver's liveness
    #: rule failed (nothing is judged).
    DEGRADED = "degraded"
    #: Cleaned up (or found dead before it ever registered): kept out until the plugin reports, the
    #: allocatable count is above 0, or the register value changes (spec 4.2).
    AWAITING_SIGN_OF_LIFE = "awaiting-sign-of-life"
    #: The register annotation decodes to no devices.
    NO_DEVICES = "no-devices"
    #: The node carries no register annotation of the vendor (perhaps a handshake alone).
    NOT_PRESENT = "not-present"
    #: The node does not match the scheduler's node selector: nothing of it is kept.
    NOT_SELECTED = "not-selected"
    #: The Node is gone.
    NODE_DELETED = "node-deleted"


#: The states in which the vendor is in the device cache.
IN_CACHE = frozenset({VendorState.REGISTERED, VendorState.DEGRADED})
#: The states a scheduler keeps a vendor in (and counts): the last two forget everything of it.
KEPT_STATES = tuple(s for s in VendorState if s not in (VendorState.NOT_SELECTED, VendorState.NODE_DELETED))

_OF_REASON = {
    Reason.REGISTERED: VendorState.REGISTERED,
    Reason.UPDATED: VendorState.REGISTERED,
    Reason.UNCHANGED: VendorState.REGISTERED,
    Reason.DEGRADED: VendorState.DEGRADED,
    Reason.CLEANED_UP: VendorState.AWAITING_SIGN_OF_LIFE,
    #: Found dead on a view not known current: nothing changed, so a registered vendor stays registered
    #: (the registrar keeps the state it had; ``/cache/<node>`` explains on a current view).
    Reason.CLEANUP_WITHHELD: VendorState.REGISTERED,
    Reason.AWAITING_SIGN_OF_LIFE: VendorState.AWAITING_SIGN_OF_LIFE,
    Reason.UNREGISTERED_EMPTY: VendorState.NO_DEVICES,
    Reason.NO_VENDOR: VendorState.NOT_PRESENT,
    Reason.UNREGISTERED_ABSENT: VendorState.NOT_PRESENT,
    Reason.NOT_SELECTED: VendorState.NOT_SELECTED,
    Reason.NODE_DELETED: VendorState.NODE_DELETED,
}


def state_of(reason: Reason) -> VendorState:
    """The state a decision with ``reason`` leaves the vendor in: the one mapping of ``Reason``."""
    return _OF_REASON[reason]


def parse_states(text: str) -> frozenset[VendorState]:
    """``registered,awaiting-sign-of-life`` -> the states; ``ValueError`` naming the unknown one and the
    known ones, in one line."""
    states = set()
    for word in (part.strip() for part in text.split(",")):
        if not word:
            continue
        try:
            states.add(VendorState(word))
        except ValueError:
            known = ", ".join(s.value for s in VendorState)
            raise ValueError(f"{word!r} is not a vendor state (one of {known})") from None
    if not states:
        raise ValueError(f"{text!r} names no vendor state")
    return frozenset(states)
