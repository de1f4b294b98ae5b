"""The reporter's pure core: what one pass writes, given the Node now and what the drivers found."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import attrs
import pytest

from hami_core import DeviceInfo
from hami_core.plugins.driver import VendorDriver
from hami_core.plugins.manager import load_drivers
from hami_core.protocol.codecs import JSON_CODEC, decode_any
from hami_core.reporter.plan import EMPTY_LEGACY, Discovery, plan_pass, register_value

NOW = datetime(2026, 11, 30, 9, 15, 7, tzinfo=timezone(timedelta(hours=8)))
REPORTED = "Reported_2026-11-30 09:15:07"
GPU = [DeviceInfo(id="GPU-0", count=10, devmem=24576, devcore=100, type="NVIDIA-A10", health=True)]
MLU = [
    DeviceInfo(id="MLU-0", count=10, devmem=23308, type="MLU-370", health=True),
    DeviceInfo(id="MLU-1", index=1, count=10, devmem=23308, type="MLU-370", numa=1, health=True),
]


@pytest.fixture(scope="module")
def drivers() -> dict[str, VendorDriver]:
    _, loaded = load_drivers()
    return {d.name: d for d in loaded}


def key(driver: VendorDriver) -> str:
    """The driver's register annotation (every driver these tests publish for has one)."""
    assert driver.register_annotation is not None, driver.name
    return driver.register_annotation


def test_a_first_pass_publishes_every_vendor_and_the_heartbeats_in_one_patch(
    drivers: dict[str, VendorDriver],
) -> None:
    found = [Discovery(driver=drivers["nvidia"], devices=GPU), Discovery(driver=drivers["mlu"], devices=MLU)]
    plan = plan_pass({}, found, NOW)
    assert plan.patch == {
        "hami.io/node-nvidia-register": JSON_CODEC.encode(GPU),
        "hami.io/node-mlu-register": "MLU-0,10,23308,0,MLU-370,0,true,0,:MLU-1,10,23308,0,MLU-370,1,true,1,:",
        "hami.io/node-handshake-mlu": REPORTED,  # NVIDIA's plugin writes no Reported_
    }
    assert plan.published == ("nvidia", "mlu") and plan.problems == ()


def test_an_unchanged_register_value_is_not_sent_again(drivers: dict[str, VendorDriver]) -> None:
    mlu, nvidia = drivers["mlu"], drivers["nvidia"]
    on_node = {
        key(mlu): register_value(mlu, MLU),
        key(nvidia): register_value(nvidia, GPU),
        "hami.io/node-handshake-mlu": "Requesting_2026-11-30 09:14:50",
    }
    found = [Discovery(driver=mlu, devices=MLU), Discovery(driver=nvidia, devices=GPU)]
    plan = plan_pass(on_node, found, NOW)
    assert plan.patch == {"hami.io/node-handshake-mlu": REPORTED}  # the heartbeat, every pass
    assert plan_pass(on_node, [Discovery(driver=nvidia, devices=GPU)], NOW).patch == {}


def test_a_value_deleted_or_edited_by_hand_is_written_again(drivers: dict[str, VendorDriver]) -> None:
    nvidia = drivers["nvidia"]
    value = register_value(nvidia, GPU)
    found = [Discovery(driver=nvidia, devices=GPU)]
    assert plan_pass({}, found, NOW).patch == {key(nvidia): value}
    edited = {key(nvidia): value.replace("24576", "1")}
    assert plan_pass(edited, found, NOW).patch == {key(nvidia): value}


def test_no_devices_is_published_as_a_readable_empty_list(drivers: dict[str, VendorDriver]) -> None:
    for name, empty in (("mlu", EMPTY_LEGACY), ("kunlun", "[]")):
        plan = plan_pass({}, [Discovery(driver=drivers[name], devices=[])], NOW)
        assert plan.patch[key(drivers[name])] == empty
        assert decode_any(empty) == []


def test_a_driver_without_a_source_publishes_nothing(drivers: dict[str, VendorDriver]) -> None:
    plan = plan_pass({}, [Discovery(driver=drivers["dcu"], devices=None)], NOW)
    assert plan.patch == {} and plan.problems == ()


def test_a_failed_probe_sends_no_heartbeat_and_leaves_the_others_alone(
    drivers: dict[str, VendorDriver],
) -> None:
    found = [
        Discovery(driver=drivers["dcu"], error="device probe failed: OSError: no driver loaded"),
        Discovery(driver=drivers["mlu"], devices=MLU),
    ]
    plan = plan_pass({}, found, NOW)
    assert set(plan.patch) == {"hami.io/node-mlu-register", "hami.io/node-handshake-mlu"}
    assert plan.problems == ("dcu: device probe failed: OSError: no driver loaded",)


class _BrokenCodec:
    name = "broken"

    def decode(self, value: str) -> list[DeviceInfo]:
        return []

    def encode(self, devices: object) -> str:
        raise RuntimeError("bug in the driver's codec")


def test_a_codec_that_fails_or_a_legacy_separator_is_a_problem_not_a_crash(
    drivers: dict[str, VendorDriver],
) -> None:
    dcu = drivers["dcu"]
    broken = attrs.evolve(dcu, vendor=attrs.evolve(dcu.rules(), codec=_BrokenCodec()))
    bad_id = [DeviceInfo(id="MLU:0", count=1)]
    found = [
        Discovery(driver=broken, devices=MLU),
        Discovery(driver=drivers["mlu"], devices=bad_id),
        Discovery(driver=drivers["kunlun"], devices=GPU),
    ]
    plan = plan_pass({}, found, NOW)
    assert set(plan.patch) == {"hami.io/node-register-xpu", "hami.io/node-handshake-xpu"}
    assert plan.problems[0] == "dcu: cannot encode its devices: RuntimeError: bug in the driver's codec"
    assert plan.problems[1].startswith("mlu: cannot encode its devices: EncodeError:")


def test_the_heartbeat_is_written_on_the_nodes_own_clock(drivers: dict[str, VendorDriver]) -> None:
    utc = NOW.astimezone(UTC)
    plan = plan_pass({}, [Discovery(driver=drivers["mlu"], devices=MLU)], utc)
    assert plan.patch["hami.io/node-handshake-mlu"] == "Reported_2026-11-30 01:15:07"


def test_a_driver_whose_devices_come_from_the_node_is_not_published_nor_warned_about() -> None:
    _, loaded = load_drivers(["kunlun"])
    card = next(d for d in loaded if d.name == "kunlun-card")
    plan = plan_pass({}, [Discovery(driver=card, devices=None)], NOW)
    assert (plan.patch, plan.published, plan.unsourced, plan.failures) == ({}, (), (), ())
