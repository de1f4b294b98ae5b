"""Where a vendor stands on a node, one vocabulary for ``/cache``, ``hami doctor``, metrics, Events and
logs: ``state_of`` maps the decision's ``Reason`` to it; ``scheduler/explain.py`` words both."""

from __future__ import annotations

import enum

from hami_core.protocol.decide import Reason


class VendorState(enum.StrEnum):
    """A vendor's state on a node (a ``str``: its own JSON and label value)."""

    REGISTERED = "registered"
    #: The register value does not decode (the last good list kept), or the liveness rule failed.
    DEGRADED = "degraded"
    #: Cleaned up, or found dead before it registered: kept out until a sign of life (spec 4.2).
    AWAITING_SIGN_OF_LIFE = "awaiting-sign-of-life"
    NO_DEVICES = "no-devices"
    #: No register annotation of the vendor (perhaps a handshake alone).
    NOT_PRESENT = "not-present"
    NOT_SELECTED = "not-selected"
    NODE_DELETED = "node-deleted"


#: The states in which the vendor is in the device cache.
IN_CACHE = frozenset({VendorState.REGISTERED, VendorState.DEGRADED})
#: The states a scheduler keeps a vendor in (and counts): the last two forget everything of it.
KEPT_STATES = tuple(s for s in VendorState if s not in (VendorState.NOT_SELECTED, VendorState.NODE_DELETED))

#: The reasons that leave a vendor in each state (``CLEANUP_WITHHELD`` changed nothing: registered stays).
_REASONS = {
    VendorState.REGISTERED: (Reason.REGISTERED, Reason.UPDATED, Reason.UNCHANGED, Reason.CLEANUP_WITHHELD),
    VendorState.DEGRADED: (Reason.DEGRADED,),
    VendorState.AWAITING_SIGN_OF_LIFE: (Reason.CLEANED_UP, Reason.AWAITING_SIGN_OF_LIFE),
    VendorState.NO_DEVICES: (Reason.UNREGISTERED_EMPTY,),
    VendorState.NOT_PRESENT: (Reason.NO_VENDOR, Reason.UNREGISTERED_ABSENT),
    VendorState.NOT_SELECTED: (Reason.NOT_SELECTED,),
    VendorState.NODE_DELETED: (Reason.NODE_DELETED,),
}
_OF_REASON = {reason: state for state, reasons in _REASONS.items() for reason in reasons}
_BY_VALUE = {state.value: state for state in VendorState}


def state_of(reason: Reason) -> VendorState:
    """The state a decision with ``reason`` leaves the vendor in."""
    return _OF_REASON[reason]


def parse_states(text: str) -> frozenset[VendorState]:
    """``registered,no-devices`` -> the states; ``ValueError`` naming the unknown one and the known ones."""
    states = set()
    for word in filter(None, (part.strip() for part in text.split(","))):
        if word not in _BY_VALUE:
            raise ValueError(f"{word!r} is not a vendor state (one of {', '.join(_BY_VALUE)})")
        states.add(_BY_VALUE[word])
    if not states:
        raise ValueError(f"{text!r} names no vendor state")
    return frozenset(states)
