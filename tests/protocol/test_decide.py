"""The pure decision core: VendorRules and decide() against every row of spec sections 4, 4.1, 4.2, 5."""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import pytest

from hami_core import ALLOCATABLE, HANDSHAKE, DecodeError, DeviceInfo, VendorRules


@attrs.frozen
class TinyCodec:
    """A test codec: ``id1;id2`` <-> devices with those ids; ``!`` anywhere is a decode error."""

    name: str = "tiny"

    def decode(self, value: str) -> list[DeviceInfo]:
        if "!" in value:
            raise DecodeError(f"tiny: bad value {value!r}")
        return [DeviceInfo(id=part, count=10, health=True) for part in value.split(";") if part]

    def encode(self, devices: Sequence[DeviceInfo]) -> str:
        return ";".join(d.id for d in devices)


TINY = TinyCodec()


def rules(**changes: object) -> VendorRules:
    base: dict[str, object] = {
        "vendor_key": "MLU",
        "register_annotation": "hami.io/node-mlu-register",
        "handshake_annotation": "hami.io/node-handshake-mlu",
        "count_resource": "cambricon.com/mlu",
        "liveness": HANDSHAKE,
        "codec": TINY,
    }
    base.update(changes)
    return VendorRules(**base)  # type: ignore[arg-type]


def test_vendor_rules_accepts_a_driver_description() -> None:
    r = rules(liveness=ALLOCATABLE, handshake_annotation=None)
    assert (r.vendor_key, r.handshake_annotation, r.liveness.name, r.codec.name) == (
        "MLU", None, "allocatable", "tiny")


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("vendor_key", "", "vendor_key"),
        ("register_annotation", "", "register_annotation"),
        ("handshake_annotation", "", "handshake_annotation"),
        ("count_resource", "", "count_resource"),
        ("liveness", "handshake", "liveness"),
        ("codec", object(), "codec"),
    ],
)
def test_vendor_rules_refuses_bad_fields(field: str, value: object, message: str) -> None:
    with pytest.raises((ValueError, TypeError), match=message):
        rules(**{field: value})
