"""Which registration changes the registrar turns into Events, and what their messages say, without
threads or clusters."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from hami_core import ALLOCATABLE, HANDSHAKE
from hami_core.kube.port import NodeSnapshot
from hami_core.protocol.codecs import LEGACY_CODEC
from hami_core.protocol.decide import VendorRules
from hami_core.protocol.liveness import LivenessRule
from hami_core.scheduler.cache import DeviceCache
from hami_core.scheduler.registrar import Evaluation, Registrar, VendorEvent

TZ = timezone(timedelta(hours=8))
T0 = datetime(2026, 11, 29, 18, 0, 0, tzinfo=TZ)
REGISTER = "hami.io/node-acme-register"
HANDSHAKE_KEY = "hami.io/node-handshake-acme"
VALUE = "A-1,4,1024,100,ACME-1,0,true,0,hami-core:A-2,4,1024,100,ACME-1,1,true,1,hami-core:"
STAMP = "Requesting_2026-11-29 18:00:00"


def rules(liveness: LivenessRule = HANDSHAKE, handshake: str | None = HANDSHAKE_KEY) -> VendorRules:
    return VendorRules(
        vendor_key="ACME",
        register_annotation=REGISTER,
        handshake_annotation=handshake,
        count_resource="example.com/acme",
        liveness=liveness,
        codec=LEGACY_CODEC,
    )


def node(annotations: dict[str, str], alloc: str = "0", uid: str = "u1") -> NodeSnapshot:
    return NodeSnapshot(
        name="n1",
        uid=uid,
        resource_version="1",
        annotations=annotations,
        allocatable={"example.com/acme": alloc},
    )


def only_event(evaluation: Evaluation) -> VendorEvent:
    (event,) = evaluation.events
    assert event.node == "n1" and event.uid == "u1" and event.vendor_key == "ACME"
    return event


def test_a_registration_found_at_first_sight_is_no_news_but_one_on_a_known_node_is() -> None:
    registrar = Registrar([rules()], DeviceCache())
    assert registrar.evaluate("n1", node({REGISTER: VALUE}), now=T0).events == ()
    fresh = Registrar([rules()], DeviceCache())
    assert fresh.evaluate("n1", node({}), now=T0).events == ()
    event = only_event(fresh.evaluate("n1", node({REGISTER: VALUE}), now=T0))
    assert (event.type, event.reason) == ("Normal", "HamiVendorRegistered")
    assert event.message == f"ACME registered 2 devices from {REGISTER}"
    # A node re-created under the same name is another object: its first sight is no news either.
    assert fresh.evaluate("n1", node({REGISTER: VALUE}, uid="u2"), now=T0).events == ()


def test_a_cleanup_says_the_rule_the_stamp_age_and_the_count() -> None:
    registrar = Registrar([rules()], DeviceCache())
    registrar.evaluate("n1", node({REGISTER: VALUE}, alloc="2"), now=T0)
    registrar.evaluate("n1", node({REGISTER: VALUE, HANDSHAKE_KEY: STAMP}, alloc="0"), now=T0)
    later = T0 + timedelta(seconds=75)
    event = only_event(registrar.evaluate("n1", node({REGISTER: VALUE, HANDSHAKE_KEY: STAMP}), now=later))
    assert (event.type, event.reason) == ("Warning", "HamiVendorCleanedUp")
    assert event.message == (
        "ACME cleaned up by the 'handshake' liveness rule: the scheduler's stamp is 1 min 15 s old "
        "(window 1 min), allocatable example.com/acme is 0 (it was above 0); its 2 devices left the "
        "device cache until the plugin reports in hami.io/node-handshake-acme, allocatable "
        "example.com/acme is above 0, or the register value changes"
    )
    assert registrar.metrics.totals()["cleanups"] == 1


@pytest.mark.parametrize(
    ("handshake", "words"),
    [
        ("Reported 2026-11-29 17:00:00", "the handshake is 'Reported 2026-11-29 17:00:00', not a stamp"),
        ("Requesting_yesterday", "the stamp 'Requesting_yesterday' does not parse"),
        (None, f"no {HANDSHAKE_KEY} annotation"),
    ],
)
def test_a_cleanup_by_the_count_says_what_the_handshake_was(handshake: str | None, words: str) -> None:
    registrar = Registrar([rules(ALLOCATABLE)], DeviceCache())
    registrar.evaluate("n1", node({}), now=T0)
    shown = {REGISTER: VALUE} | ({HANDSHAKE_KEY: handshake} if handshake else {})
    registrar.evaluate("n1", node(shown, alloc="1"), now=T0)
    event = only_event(registrar.evaluate("n1", node(shown, alloc="0"), now=T0))
    assert event.reason == "HamiVendorCleanedUp"
    assert event.message.startswith(
        f"ACME cleaned up by the 'allocatable' liveness rule: {words}, "
        "allocatable example.com/acme is 0 (it was above 0); its 2 devices "
    )


def test_a_vendor_without_a_handshake_says_so() -> None:
    registrar = Registrar([rules(ALLOCATABLE, handshake=None)], DeviceCache())
    registrar.evaluate("n1", node({REGISTER: VALUE}, alloc="1"), now=T0)
    event = only_event(registrar.evaluate("n1", node({REGISTER: VALUE}, alloc="0"), now=T0))
    assert "liveness rule: the vendor has no handshake, allocatable example.com/acme is 0" in event.message


@pytest.mark.parametrize(
    ("after", "alloc", "sign"),
    [
        (
            {HANDSHAKE_KEY: "Reported_2026.11.29 18:05:00"},
            "0",
            "the plugin's report 'Reported_2026.11.29 18:05:00'",
        ),
        ({HANDSHAKE_KEY: STAMP}, "4", "allocatable example.com/acme is 4"),
        ({REGISTER: VALUE.split(":")[0] + ":"}, "0", f"a new value of {REGISTER}"),
    ],
)
def test_coming_back_names_the_sign_of_life(after: dict[str, str], alloc: str, sign: str) -> None:
    registrar = Registrar([rules()], DeviceCache())
    registrar.evaluate("n1", node({REGISTER: VALUE}), now=T0)
    expired = T0 + timedelta(seconds=61)
    cleaned = registrar.evaluate("n1", node({REGISTER: VALUE, HANDSHAKE_KEY: STAMP}), now=expired)
    assert only_event(cleaned).reason == "HamiVendorCleanedUp"
    shown = {REGISTER: VALUE, HANDSHAKE_KEY: STAMP} | after
    event = only_event(registrar.evaluate("n1", node(shown, alloc=alloc), now=expired))
    count = 1 if REGISTER in after else 2
    assert (event.type, event.reason) == ("Normal", "HamiVendorReadmitted")
    assert event.message == (
        f"ACME is back after a sign of life ({sign}): {count} device{'s' if count != 1 else ''} registered"
    )


def test_updates_and_unchanged_evaluations_are_no_events() -> None:
    registrar = Registrar([rules()], DeviceCache())
    registrar.evaluate("n1", node({}), now=T0)
    registrar.evaluate("n1", node({REGISTER: VALUE}, alloc="2"), now=T0)
    shown = {REGISTER: VALUE, HANDSHAKE_KEY: STAMP}
    assert registrar.evaluate("n1", node(shown, alloc="2"), now=T0).events == ()
    updated = {REGISTER: VALUE.split(":")[0] + ":", HANDSHAKE_KEY: STAMP}
    assert registrar.evaluate("n1", node(updated, alloc="2"), now=T0).events == ()
    unregistered = node({HANDSHAKE_KEY: STAMP}, alloc="2")
    assert registrar.evaluate("n1", unregistered, now=T0).events == ()
