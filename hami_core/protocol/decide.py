"""The pure decision core of the scheduler (spec sections 4, 4.1, 4.2 and 5).

``decide`` looks at one node for one vendor, together with what the scheduler remembers about it, and
says what to write to the handshake annotation, how the device cache changes, and why. It does no I/O and
reads no clock: the caller passes ``now``.
"""

from __future__ import annotations

import attrs

from hami_core.protocol.codecs import Codec
from hami_core.protocol.liveness import LivenessRule

__all__ = ["VendorRules"]


def _non_empty(instance: object, attribute: attrs.Attribute[str], value: str) -> None:
    if not isinstance(value, str) or not value:
        raise ValueError(f"VendorRules.{attribute.name} must be a non-empty string, got {value!r}")


def _optional_non_empty(instance: object, attribute: attrs.Attribute[str | None], value: str | None) -> None:
    if value is not None and (not isinstance(value, str) or not value):
        raise ValueError(f"VendorRules.{attribute.name} must be None or a non-empty string, got {value!r}")


def _is_liveness_rule(instance: object, attribute: attrs.Attribute[LivenessRule], value: object) -> None:
    if not isinstance(value, LivenessRule):
        raise TypeError(f"VendorRules.liveness must have a name and alive(facts), got {value!r}")


def _is_codec(instance: object, attribute: attrs.Attribute[Codec], value: object) -> None:
    if not isinstance(value, Codec):
        raise TypeError(f"VendorRules.codec must have a name, decode() and encode(), got {value!r}")


@attrs.frozen(kw_only=True)
class VendorRules:
    """What the decision core needs to know of one vendor; built from a driver's description.

    ``handshake_annotation`` is ``None`` for a vendor without a handshake: then liveness rests on the
    register annotation and the allocatable count alone (see ``decide``).
    """

    #: HAMi's CommonWord, e.g. ``NVIDIA``; stamped into every cached device's ``devicevendor``.
    vendor_key: str = attrs.field(validator=_non_empty)
    #: The node annotation carrying the encoded device list, e.g. ``hami.io/node-nvidia-register``.
    register_annotation: str = attrs.field(validator=_non_empty)
    #: The node annotation of the handshake, e.g. ``hami.io/node-handshake``; ``None`` for no handshake.
    handshake_annotation: str | None = attrs.field(validator=_optional_non_empty)
    #: The ``status.allocatable`` resource counting the vendor's devices, e.g. ``nvidia.com/gpu``.
    count_resource: str = attrs.field(validator=_non_empty)
    #: Whether the vendor is alive, given the stamp's age and the allocatable count (spec 4.1).
    liveness: LivenessRule = attrs.field(validator=_is_liveness_rule)
    #: The vendor's encoding of the register annotation.
    codec: Codec = attrs.field(validator=_is_codec)
