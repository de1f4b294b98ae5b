"""The driver test kit's codec round trip knows the fields a codec sets on every device it reads."""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import pytest
from plugins.driverkit import Describes, make_spec

from hami_core import JSON_CODEC, DeviceInfo, fixed_fields
from hami_core.plugins import DriverManager, VendorDriver
from hami_core.testing import SAMPLE_DEVICE_LISTS, DriverContract


@attrs.frozen
class SetsDevcore:
    """A codec that sets devcore 100 on every device it reads, and does not say so."""

    name = "json"

    def encode(self, devices: Sequence[DeviceInfo]) -> str:
        return JSON_CODEC.encode(devices)

    def decode(self, value: str) -> list[DeviceInfo]:
        return [attrs.evolve(d, devcore=100) for d in JSON_CODEC.decode(value)]


def _driver(codec: object) -> VendorDriver:
    (driver,) = DriverManager().register(Describes(make_spec(encoding=codec)), "acme")
    return driver


@pytest.mark.parametrize("devices", SAMPLE_DEVICE_LISTS, ids=["full", "zero-valued", "two-devices"])
def test_a_codec_with_fixed_fields_round_trips_with_them_set(devices: tuple[DeviceInfo, ...]) -> None:
    DriverContract().test_codec_round_trips(_driver(fixed_fields(JSON_CODEC, devcore=100)), devices)


def test_a_codec_that_changes_a_field_unsaid_fails_the_round_trip() -> None:
    devices = SAMPLE_DEVICE_LISTS[0]
    assert devices[0].devcore == 100  # the sample the change leaves alone
    DriverContract().test_codec_round_trips(_driver(SetsDevcore()), devices)
    for changed in SAMPLE_DEVICE_LISTS[1:]:
        with pytest.raises(AssertionError):
            DriverContract().test_codec_round_trips(_driver(SetsDevcore()), changed)


def test_fixed_values_are_the_fields_given() -> None:
    assert fixed_fields(JSON_CODEC, devcore=100, numa=1).fixed_values == {"devcore": 100, "numa": 1}
