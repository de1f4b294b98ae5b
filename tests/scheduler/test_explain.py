"""The explanation of a Node (``/cache/<node>`` and ``hami doctor``): it agrees with the decision core and
the registrar on every row of the decide() table, and says in words what the decision means."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Any

import attrs
import pytest
from protocol.test_decide import ROWS, Row

from hami_core.durations import span
from hami_core.kube.port import NodeSnapshot
from hami_core.plugins.manager import load_drivers
from hami_core.protocol.decide import (
    CacheChange,
    HandshakeWrite,
    Observation,
    Reason,
    VendorMemory,
    VendorRules,
    Verdict,
)
from hami_core.protocol.evaluate import evaluate
from hami_core.protocol.handshake import format_stamp
from hami_core.protocol.marker import fingerprint
from hami_core.scheduler.cache import DeviceCache
from hami_core.scheduler.explain import (
    NodeExplanation,
    VendorExplanation,
    VendorState,
    WriteKind,
    explain_node,
    explanation_json,
)
from hami_core.scheduler.registrar import Registrar
from hami_core.scheduler.selector import NodeSelector

SELECTOR = NodeSelector({"pool": "gpu"})
LABELS = {"pool": "gpu"}


def snapshot(obs: Observation, rules: VendorRules) -> NodeSnapshot | None:
    """The Node an observation was made of (``None``: deleted)."""
    if not obs.present:
        return None
    annotations: dict[str, str] = {}
    if obs.register is not None:
        assert rules.register_annotation is not None, "a register value needs a register annotation"
        annotations[rules.register_annotation] = obs.register
    if obs.handshake is not None and rules.handshake_annotation is not None:
        annotations[rules.handshake_annotation] = obs.handshake
    allocatable = {rules.count_resource: str(obs.allocatable)} if obs.allocatable else {}
    labels = LABELS if obs.selected else {}
    return NodeSnapshot(
        name=obs.node,
        uid="uid-1",
        resource_version="7",
        labels=labels,
        annotations=annotations,
        allocatable=allocatable,
    )


def expected_kind(write: HandshakeWrite | None) -> WriteKind:
    if write is None:
        return WriteKind.NOTHING
    return WriteKind.STAMP if write.value is not None else WriteKind.DELETE


@pytest.mark.parametrize("row", ROWS, ids=[r.id for r in ROWS])
def test_the_explanation_and_the_scheduler_agree_on_every_row_of_the_decide_table(row: Row) -> None:
    obs, rules = row.observation, row.rules
    node = snapshot(obs, rules)
    (explained,) = explain_node(
        obs.node, node, [rules], {rules.vendor_key: row.memory}, selector=SELECTOR, now=row.now
    ).vendors
    assert explained.vendor_key == rules.vendor_key
    # the decision core's own answer, and the spec row's
    assert explained.decision == evaluate(obs, row.memory, now=row.now, rules=rules)
    d = explained.decision
    assert (d.write, d.cache, d.reason, d.verdict) == (row.write, row.cache, row.reason, row.verdict)
    # the words say the same thing as the decision
    assert explained.next.write is expected_kind(row.write)
    if row.write is not None:
        assert explained.next.annotation == row.write.annotation and explained.next.value == row.write.value
        assert explained.next.why.startswith(f"{explained.next.write.value} {row.write.annotation} now: ")
    else:
        assert explained.next.why.startswith("nothing to write: ")
    assert explained.next.deadline == d.recheck_at
    assert (explained.state is VendorState.REGISTERED) == (
        d.memory.registered
        and d.reason not in (Reason.DEGRADED, Reason.CLEANED_UP, Reason.NOT_SELECTED, Reason.NODE_DELETED)
    )
    assert (explained.state is VendorState.AWAITING_SIGN_OF_LIFE) == d.memory.awaiting_sign_of_life
    assert (explained.state is VendorState.DEGRADED) == (d.reason is Reason.DEGRADED)
    assert explained.summary and explained.next.why

    # ...and the registrar (what the daemon runs) decides the same on the same Node with the same memory
    registrar = Registrar([rules], DeviceCache(), selector=SELECTOR)
    if row.memory != VendorMemory():
        registrar._memory[(obs.node, rules.vendor_key)] = row.memory  # what an earlier evaluation left
    evaluation = registrar.evaluate(obs.node, node, now=row.now)
    if rules.vendor_key in evaluation.decisions:
        assert evaluation.decisions[rules.vendor_key] == d
    else:  # nothing of the vendor on the Node (or no Node) and nothing remembered: the registrar does not ask
        assert row.memory == VendorMemory() and d.memory == VendorMemory()
        assert (d.write, d.cache) == (None, CacheChange.KEEP)
        assert d.reason in (Reason.NO_VENDOR, Reason.NODE_DELETED)
    expected = {row.write.annotation: row.write.value} if row.write else {}
    if d.marker is not None:  # a cleanup leaves its marker on the Node (readmission removes it)
        expected[d.marker.annotation] = d.marker.value
    assert dict(evaluation.patch) == expected
    # a cleanup's patch is conditional; a vendor without a handshake is cleaned without any write
    assert evaluation.conditional == d.conditional == (d.reason is Reason.CLEANED_UP and bool(expected))


# --- the words, on the real drivers ------------------------------------------------------------------------

TZ = timezone(timedelta(hours=8))
NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=TZ)
SEC = timedelta(seconds=1)
_, _DRIVERS = load_drivers()
RULES = {d.vendor_key: d.rules() for d in _DRIVERS}
DCU = RULES["DCU"]
NVIDIA = RULES["NVIDIA"]
DCU_VALUE = "DCU-1,4,16384,100,DCU-Z100,0,true,0,hami:"
DCU_HS = "hami.io/node-handshake-dcu"
DCU_REG = "hami.io/node-dcu-register"


def node(
    annotations: dict[str, str] | None = None,
    allocatable: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
) -> NodeSnapshot:
    return NodeSnapshot(
        name="gpu-1",
        uid="u",
        resource_version="42",
        labels=labels or {},
        annotations=annotations or {},
        allocatable=allocatable or {},
    )


def explain(
    snap: NodeSnapshot | None,
    memory: dict[str, VendorMemory] | None = None,
    *,
    rules: VendorRules = DCU,
    selector: NodeSelector | None = None,
    now: datetime = NOW,
) -> VendorExplanation:
    (explained,) = explain_node(
        "gpu-1", snap, [rules], memory, selector=selector or NodeSelector({}), now=now
    ).vendors
    assert explained.vendor_key == rules.vendor_key
    return explained


def codes(e: VendorExplanation) -> list[str]:
    return [n.code for n in e.notes]


def stamp(age: timedelta) -> str:
    return format_stamp(NOW - age)


def registered_dcu(**more: Any) -> dict[str, VendorMemory]:
    first = evaluate(Observation(node="gpu-1", register=DCU_VALUE), VendorMemory(), now=NOW, rules=DCU)
    return {"DCU": attrs.evolve(first.memory, **more)}


def test_a_registered_vendor_with_a_fresh_stamp() -> None:
    e = explain(node({DCU_REG: DCU_VALUE, DCU_HS: stamp(10 * SEC)}), registered_dcu())
    assert e.state is VendorState.REGISTERED and e.summary == "registered with 1 device"
    assert (e.register.present, e.register.decodes, e.register.devices) == (True, True, 1)
    assert (e.handshake.kind, e.handshake.standing, e.handshake.age) == ("stamp", "fresh", 10 * SEC)
    assert e.next.write is WriteKind.NOTHING
    assert e.next.why == "nothing to write: the stamp is fresh (10 s old, 50 s left)"
    assert e.next.deadline == NOW + 50 * SEC
    assert e.next.at_deadline is not None and "DCU is cleaned up" in e.next.at_deadline
    assert codes(e) == []


def test_a_vendor_seen_for_the_first_time_is_stamped_with_its_deadline() -> None:
    e = explain(node({DCU_REG: DCU_VALUE}), {})
    assert e.state is VendorState.REGISTERED and "registers now" in e.summary
    assert (e.next.write, e.next.annotation, e.next.value) == (WriteKind.STAMP, DCU_HS, format_stamp(NOW))
    assert "no stamp" in e.next.why and e.next.deadline == NOW + 60 * SEC


def test_an_expired_stamp_and_no_allocatable_is_a_cleanup_with_its_reason() -> None:
    e = explain(node({DCU_REG: DCU_VALUE, DCU_HS: stamp(90 * SEC)}), registered_dcu())
    assert (e.next.write, e.next.annotation, e.next.value) == (WriteKind.DELETE, DCU_HS, None)
    assert "its stamp expired 30 s ago and allocatable hygon.com/dcunum is 0" in e.next.why
    assert e.state is VendorState.AWAITING_SIGN_OF_LIFE and e.reason is Reason.CLEANED_UP
    assert "the plugin reports in hami.io/node-handshake-dcu" in e.next.why


def test_kept_by_allocatable() -> None:
    e = explain(
        node({DCU_REG: DCU_VALUE, DCU_HS: stamp(2 * 3600 * SEC)}, {"hygon.com/dcunum": "4"}), registered_dcu()
    )
    assert e.verdict is Verdict.KEPT_BY_ALLOCATABLE and e.next.write is WriteKind.NOTHING
    assert "expired 1 h 59 min ago, but allocatable hygon.com/dcunum is 4" in e.next.why
    assert "cleaned up once allocatable hygon.com/dcunum drops to 0" in e.next.why
    assert e.allocatable.count == 4 and e.allocatable.raw == "4"


def test_nvidia_allocatable_dropping_to_zero() -> None:
    value = '[{"id":"GPU-0","count":10,"devmem":32768,"devcore":100,"type":"V100","health":true}]'
    memory = evaluate(
        Observation(node="gpu-1", register=value, allocatable=8), VendorMemory(), now=NOW, rules=NVIDIA
    ).memory
    e = explain(
        node({"hami.io/node-nvidia-register": value, "hami.io/node-handshake": stamp(5 * SEC)}),
        {"NVIDIA": memory},
        rules=NVIDIA,
    )
    assert e.next.write is WriteKind.DELETE
    assert "allocatable nvidia.com/gpu was above 0 and is now 0" in e.next.why


def test_a_decode_error_names_its_position() -> None:
    e = explain(
        node({DCU_REG: "DCU-1,4,16384,100,DCU-Z100,0,maybe,0,hami:", DCU_HS: stamp(SEC)}), registered_dcu()
    )
    assert e.state is VendorState.DEGRADED and e.register.decodes is False and e.register.devices is None
    assert e.register.error is not None and "health" in e.register.error and "maybe" in e.register.error
    assert e.error == e.register.error and "last good list (1 device)" in e.summary


def test_a_cpu_only_node_has_nothing_of_the_vendor() -> None:
    e = explain(node(), {})
    assert (e.state, e.next.write, e.register.present, e.handshake.kind) == (
        VendorState.NOT_PRESENT,
        WriteKind.NOTHING,
        False,
        "absent",
    )
    assert e.next.why == f"nothing to write: the node carries neither {DCU_REG} nor {DCU_HS}"
    assert codes(e) == []


def test_hamis_stamp_on_a_node_without_the_vendor() -> None:
    e = explain(node({DCU_HS: stamp(5 * SEC)}), {})
    assert e.state is VendorState.NOT_PRESENT and e.next.write is WriteKind.NOTHING
    assert codes(e) == ["hami-stamp-without-vendor"]
    assert "HAMi's scheduler stamps every node for every vendor, CPU-only ones included" in e.notes[0].text


@pytest.mark.parametrize(
    ("value", "layout"),
    [
        ("Requesting_2026.11.30 11:59:50", "dotted layout of HAMi up to v2.4"),
        ("Requesting_2026-11-30 03:59:50 +0000 UTC m=+12.000000001", "Time.String() layout"),
    ],
)
def test_a_stamp_hami_cannot_parse(value: str, layout: str) -> None:
    e = explain(node({DCU_REG: DCU_VALUE, DCU_HS: value}), registered_dcu())
    assert e.handshake.kind == "stamp" and e.handshake.age == 10 * SEC
    assert codes(e) == ["hami-cannot-parse"]
    assert layout in e.notes[0].text and "HAMi counts it as healthy forever" in e.notes[0].text
    later = explain(node({DCU_REG: DCU_VALUE, DCU_HS: value}), registered_dcu(), now=NOW + 60 * SEC)
    assert later.next.write is WriteKind.DELETE  # hami-core lets it expire; HAMi would not


def test_a_requesting_value_without_a_time_is_restamped() -> None:
    e = explain(node({DCU_REG: DCU_VALUE, DCU_HS: "Requesting_garbage"}), registered_dcu())
    assert e.handshake.kind == "bad-stamp" and e.handshake.error
    assert e.next.write is WriteKind.STAMP and "names no time that can be read" in e.next.why
    assert codes(e) == ["hami-cannot-parse"]


def test_a_far_future_stamp() -> None:
    e = explain(node({DCU_REG: DCU_VALUE, DCU_HS: format_stamp(NOW + timedelta(hours=3))}), registered_dcu())
    assert e.next.write is WriteKind.STAMP and "3 h ahead" in e.next.why
    assert codes(e) == ["hami-far-future"]


def test_hamis_flapping_after_a_cleanup() -> None:
    """The memory says awaiting a sign of life; the node shows a fresh Requesting stamp someone else wrote."""
    cleaned = {
        "DCU": VendorMemory(
            awaiting_sign_of_life=True,
            register_at_cleanup=fingerprint(DCU_VALUE),
            handshake_at_cleanup=fingerprint(stamp(120 * SEC)),
        )
    }
    e = explain(node({DCU_REG: DCU_VALUE, DCU_HS: stamp(12 * SEC)}), cleaned)
    assert e.state is VendorState.AWAITING_SIGN_OF_LIFE and e.next.write is WriteKind.NOTHING
    assert "a stamp is not one" in e.next.why
    assert codes(e) == ["hami-flapping"]
    assert "(its flapping)" in e.notes[0].text and "12 s old" in e.notes[0].text
    # The stamp judged at cleanup, still there (our delete not landed): not HAMi's, and it is deleted again.
    pending = {"DCU": attrs.evolve(cleaned["DCU"], delete_handshake=True)}
    e = explain(node({DCU_REG: DCU_VALUE, DCU_HS: stamp(120 * SEC)}), pending)
    assert e.next.write is WriteKind.DELETE and "the value judged then" in e.next.why and codes(e) == []


def test_a_report_readmits_with_the_sign_of_life_named() -> None:
    cleaned = {"DCU": VendorMemory(awaiting_sign_of_life=True, register_at_cleanup=fingerprint(DCU_VALUE))}
    e = explain(node({DCU_REG: DCU_VALUE, DCU_HS: "Reported_2026-11-30 11:59:59"}), cleaned)
    assert e.next.write is WriteKind.STAMP and e.state is VendorState.REGISTERED
    assert e.next.why.startswith(
        f"stamp {DCU_HS} now: the plugin's report 'Reported_2026-11-30 11:59:59' is "
        "a sign of life after the cleanup"
    )


def test_without_memory_the_explanation_says_what_a_scheduler_that_had_cleaned_up_would_do() -> None:
    e = explain(node({DCU_REG: DCU_VALUE, DCU_HS: stamp(12 * SEC)}), None)
    assert e.state is VendorState.REGISTERED and codes(e) == ["no-memory"]
    assert "has no memory of earlier evaluations" in e.notes[0].text
    assert "a stamp alone, such as HAMi's, does not readmit it" in e.notes[0].text
    # allocatable > 0 is a sign of life whatever happened before: nothing to add
    e = explain(node({DCU_REG: DCU_VALUE, DCU_HS: stamp(12 * SEC)}, {"hygon.com/dcunum": "4"}), None)
    assert codes(e) == []


def test_outside_the_selector() -> None:
    e = explain(node({DCU_REG: DCU_VALUE}, labels={"pool": "cpu"}), registered_dcu(), selector=SELECTOR)
    assert e.state is VendorState.NOT_SELECTED and e.next.write is WriteKind.NOTHING
    assert "does not match the node selector pool=gpu" in e.next.why
    assert e.register.devices == 1  # the facts are still shown


def test_an_allocatable_that_is_not_a_quantity() -> None:
    snap = node({DCU_REG: DCU_VALUE, DCU_HS: stamp(SEC)}, {"hygon.com/dcunum": "four"})
    e = explain(snap, registered_dcu())
    assert e.allocatable.invalid and e.allocatable.count == 0 and codes(e) == ["allocatable-invalid"]


def test_a_vendor_without_a_handshake_annotation() -> None:
    rules = attrs.evolve(DCU, handshake_annotation=None)
    e = explain(node({DCU_REG: DCU_VALUE, DCU_HS: "whatever"}), {}, rules=rules)
    assert e.verdict is Verdict.NO_HANDSHAKE
    assert e.handshake.annotation is None and e.handshake.kind == "absent"
    assert "has no handshake annotation" in e.next.why


def test_the_json_form_is_plain_json() -> None:
    explanation: NodeExplanation = explain_node(
        "gpu-1",
        node({DCU_REG: DCU_VALUE, DCU_HS: stamp(10 * SEC)}),
        list(RULES.values()),
        None,
        selector=NodeSelector({}),
        now=NOW,
    )
    body = json.loads(json.dumps(explanation_json(explanation)))
    assert body["node"] == "gpu-1" and body["resource_version"] == "42" and body["remembered"] is False
    assert set(body["vendors"]) == set(RULES)
    dcu = body["vendors"]["DCU"]
    assert (dcu["state"], dcu["next"]["write"]) == ("registered", "nothing")
    assert dcu["handshake"]["age_seconds"] == 10.0 and dcu["handshake"]["time"] == "2026-11-30T11:59:50+08:00"
    assert dcu["next"]["deadline"] == (NOW + 50 * SEC).isoformat()
    assert body["vendors"]["NVIDIA"]["state"] == "not-present"


def test_explain_refuses_a_naive_clock() -> None:
    with pytest.raises(ValueError, match="aware"):
        explain(node(), {}, now=datetime(2026, 1, 1))


@pytest.mark.parametrize(
    ("seconds", "words"),
    [
        (0.25, "0.2 s"),
        (3, "3 s"),
        (45, "45 s"),
        (60, "1 min"),
        (185, "3 min 5 s"),
        (7800, "2 h 10 min"),
        (3 * 86400, "3 d"),
        (-30, "30 s"),
    ],
)
def test_span(seconds: float, words: str) -> None:
    assert span(timedelta(seconds=seconds)) == words


def test_without_memory_an_expired_stamp_may_be_a_cleanup_for_a_scheduler_that_has_it_registered() -> None:
    e = explain(node({DCU_REG: DCU_VALUE, DCU_HS: stamp(120 * SEC)}), None)
    assert e.state is VendorState.AWAITING_SIGN_OF_LIFE and e.next.write is WriteKind.NOTHING
    assert "found dead before it ever registered" in e.summary
    assert codes(e) == ["no-memory"]
    assert "a scheduler that has DCU registered here would clean it up now (delete " in e.notes[0].text


def test_without_memory_a_cpu_only_node_needs_no_caveat() -> None:
    assert codes(explain(node(), None)) == []
    assert codes(explain(node({DCU_HS: stamp(5 * SEC)}), None)) == ["hami-stamp-without-vendor"]
