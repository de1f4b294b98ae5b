"""The registrar without threads or clusters: work proportional to change, merged patches, and what the
protocol asks of a Node as shown (what was sent and not yet seen back is the view's business)."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta, timezone

import attrs

from hami_core import CAPACITY, DEVICES, HANDSHAKE, DeviceInfo, FromNode, NodeView
from hami_core.kube.port import NodeSnapshot
from hami_core.plugins.manager import load_drivers
from hami_core.protocol.codecs import LEGACY_CODEC
from hami_core.protocol.decide import VendorRules
from hami_core.protocol.marker import fingerprint, parse_marker
from hami_core.scheduler.cache import DeviceCache
from hami_core.scheduler.registrar import Registrar
from hami_core.scheduler.selector import NodeSelector, parse_node_selector

TZ = timezone(timedelta(hours=8))
T0 = datetime(2026, 11, 29, 18, 0, 0, tzinfo=TZ)


class CountingCodec:
    """A driver's own codec (legacy underneath) that counts how often it is asked to decode."""

    name = "counting"

    def __init__(self) -> None:
        self.decodes = 0

    def decode(self, value: str) -> list[DeviceInfo]:
        self.decodes += 1
        return LEGACY_CODEC.decode(value)

    def encode(self, devices: Sequence[DeviceInfo]) -> str:
        return LEGACY_CODEC.encode(devices)


def rules(codec: CountingCodec, key: str = "ACME", short: str = "acme") -> VendorRules:
    return VendorRules(
        vendor_key=key,
        register_annotation=f"hami.io/node-{short}-register",
        handshake_annotation=f"hami.io/node-handshake-{short}",
        count_resource=f"example.com/{short}",
        liveness=HANDSHAKE,
        codec=codec,
    )


VALUE = "A-1,4,1024,100,ACME-1,0,true,0,hami-core:"


def node(
    annotations: dict[str, str], *, labels: dict[str, str] | None = None, alloc: str = "4"
) -> NodeSnapshot:
    return NodeSnapshot(
        name="n1",
        uid="u1",
        resource_version="1",
        labels=labels or {},
        annotations=annotations,
        allocatable={"example.com/acme": alloc},
    )


def test_an_unchanged_node_costs_no_decode_and_no_write() -> None:
    codec = CountingCodec()
    registrar = Registrar([rules(codec)], DeviceCache())
    first = registrar.evaluate("n1", node({"hami.io/node-acme-register": VALUE}), now=T0)
    stamp = first.patch["hami.io/node-handshake-acme"]
    assert stamp == "Requesting_2026-11-29 18:00:00" and codec.decodes == 1
    observed = node({"hami.io/node-acme-register": VALUE, "hami.io/node-handshake-acme": stamp})
    for seconds in range(1, 30):  # resyncs within the window
        again = registrar.evaluate("n1", observed, now=T0 + timedelta(seconds=seconds))
        assert again.patch == {}
    assert codec.decodes == 1
    changed = node(
        {"hami.io/node-acme-register": VALUE.replace("1024", "2048"), "hami.io/node-handshake-acme": stamp}
    )
    registrar.evaluate("n1", changed, now=T0 + timedelta(seconds=31))
    assert codec.decodes == 2
    assert registrar.cache.vendor("n1", "ACME").devices[0].devmem == 2048  # type: ignore[union-attr]


def test_all_vendors_of_a_node_share_one_patch() -> None:
    a, b = CountingCodec(), CountingCodec()
    registrar = Registrar([rules(a), rules(b, "BETA", "beta")], DeviceCache())
    result = registrar.evaluate(
        "n1", node({"hami.io/node-acme-register": VALUE, "hami.io/node-beta-register": VALUE}), now=T0
    )
    assert set(result.patch) == {"hami.io/node-handshake-acme", "hami.io/node-handshake-beta"}


def test_relevance_ignores_what_cannot_change_a_decision() -> None:
    registrar = Registrar([rules(CountingCodec())], DeviceCache(), selector=parse_node_selector("pool=gpu"))
    base = node({"hami.io/node-acme-register": VALUE}, labels={"pool": "gpu"})
    noise = node({"hami.io/node-acme-register": VALUE, "unrelated": "x"}, labels={"pool": "gpu", "z": "1"})
    assert registrar.relevant(base) == registrar.relevant(noise)
    for different in (
        node({"hami.io/node-acme-register": VALUE}, labels={"pool": "cpu"}),
        node({"hami.io/node-acme-register": VALUE + "x"}, labels={"pool": "gpu"}),
        node({"hami.io/node-acme-register": VALUE}, labels={"pool": "gpu"}, alloc="0"),
    ):
        assert registrar.relevant(base) != registrar.relevant(different)


def test_the_decision_holds_nothing_about_requests_in_flight() -> None:
    registrar = Registrar([rules(CountingCodec())], DeviceCache())
    shown = node({"hami.io/node-acme-register": VALUE})
    first = registrar.evaluate("n1", shown, now=T0)
    assert "hami.io/node-handshake-acme" in first.patch
    assert registrar.cache.vendor("n1", "ACME") is not None
    # Shown the same Node again (the stamp not sent, or not landed): the protocol asks for it again.
    assert "hami.io/node-handshake-acme" in registrar.evaluate("n1", shown, now=T0).patch


MARKER = "cleaned.hami-core.io/ACME"


def cleanup_of(patch: Mapping[str, str | None]) -> dict[str, str | None]:
    """A cleanup's patch without its marker (checked to be a marker of ours)."""
    assert parse_marker(patch.get(MARKER)) is not None, patch
    return {key: value for key, value in patch.items() if key != MARKER}


def test_a_failed_stamp_is_decided_again_and_a_failed_delete_is_resent() -> None:
    registrar = Registrar([rules(CountingCodec())], DeviceCache())
    registrar.evaluate("n1", node({"hami.io/node-acme-register": VALUE}), now=T0)
    later = T0 + timedelta(seconds=5)
    retry = registrar.evaluate("n1", node({"hami.io/node-acme-register": VALUE}), now=later)
    assert retry.patch == {"hami.io/node-handshake-acme": "Requesting_2026-11-29 18:00:05"}
    # The stamp lands; the plugin dies (allocatable 0); the stamp expires: cleanup deletes it.
    stamped = {
        "hami.io/node-acme-register": VALUE,
        "hami.io/node-handshake-acme": retry.patch["hami.io/node-handshake-acme"] or "",
    }
    dead = registrar.evaluate("n1", node(stamped, alloc="0"), now=later + timedelta(seconds=60))
    assert cleanup_of(dead.patch) == {"hami.io/node-handshake-acme": None} and dead.conditional
    again = registrar.evaluate("n1", node(stamped, alloc="0"), now=later + timedelta(seconds=61))
    assert cleanup_of(again.patch) == {"hami.io/node-handshake-acme": None} and again.conditional
    # Once the node shows the cleanup (the handshake gone, the marker there) there is nothing to resend.
    gone = {"hami.io/node-acme-register": VALUE, MARKER: again.patch[MARKER] or ""}
    assert registrar.evaluate("n1", node(gone, alloc="0"), now=later + timedelta(seconds=62)).patch == {}


def test_recheck_is_the_moment_the_stamp_expires() -> None:
    registrar = Registrar([rules(CountingCodec())], DeviceCache(), window=timedelta(seconds=60))
    result = registrar.evaluate("n1", node({"hami.io/node-acme-register": VALUE}, alloc="0"), now=T0)
    assert result.recheck_at == T0 + timedelta(seconds=60)


def test_deleted_node_leaves_cache_and_memory() -> None:
    registrar = Registrar([rules(CountingCodec())], DeviceCache(), selector=NodeSelector({}))
    registrar.evaluate("n1", node({"hami.io/node-acme-register": VALUE}), now=T0)
    assert registrar.known_nodes() == {"n1"}
    registrar.evaluate("n1", None, now=T0)
    assert registrar.known_nodes() == set() and registrar.cache.nodes() == []


def test_a_node_recreated_under_the_same_name_starts_clean_even_without_a_delete_seen() -> None:
    # A delete and a re-create can merge in the work queue, or fall into a watch gap (a relist then
    # shows only the new object): the new uid alone must reset everything.
    registrar = Registrar([rules(CountingCodec())], DeviceCache())
    first = registrar.evaluate("n1", node({"hami.io/node-acme-register": VALUE}, alloc="0"), now=T0)
    stamp = first.patch["hami.io/node-handshake-acme"] or ""
    stamped = {"hami.io/node-acme-register": VALUE, "hami.io/node-handshake-acme": stamp}
    dead = registrar.evaluate("n1", node(stamped, alloc="0"), now=T0 + timedelta(seconds=60))
    assert cleanup_of(dead.patch) == {"hami.io/node-handshake-acme": None}
    assert registrar.memory("n1", "ACME").awaiting_sign_of_life
    assert not dead.node_gone
    reborn = NodeSnapshot(
        name="n1",
        uid="u2",
        resource_version="9",
        annotations={"hami.io/node-acme-register": VALUE},
        allocatable={"example.com/acme": "0"},
    )
    later = T0 + timedelta(seconds=70)
    fresh = registrar.evaluate("n1", reborn, now=later)
    assert fresh.node_gone
    assert fresh.patch == {"hami.io/node-handshake-acme": "Requesting_2026-11-29 18:01:10"}
    assert registrar.cache.vendor("n1", "ACME") is not None
    assert not registrar.memory("n1", "ACME").awaiting_sign_of_life
    assert not registrar.evaluate("n1", reborn, now=later).node_gone


def test_a_cleanup_delete_is_asked_for_until_the_node_shows_it_done() -> None:
    # Whoever leads when it is sent (the replica that decided it may have been a follower, or lost the
    # lease before sending): while the node shows the stamp cleaned up, the delete is asked for.
    registrar = Registrar([rules(CountingCodec())], DeviceCache())
    stamped = {
        "hami.io/node-acme-register": VALUE,
        "hami.io/node-handshake-acme": "Requesting_2026-11-29 18:00:00",
    }
    assert registrar.evaluate("n1", node(stamped, alloc="0"), now=T0).patch == {}
    cleaned = registrar.evaluate("n1", node(stamped, alloc="0"), now=T0 + timedelta(seconds=60))
    assert cleanup_of(cleaned.patch) == {"hami.io/node-handshake-acme": None}
    assert registrar.cache.vendor("n1", "ACME") is None
    again = registrar.evaluate("n1", node(stamped, alloc="0"), now=T0 + timedelta(seconds=75))
    assert cleanup_of(again.patch) == {"hami.io/node-handshake-acme": None}
    marker = again.patch[MARKER] or ""
    deleted = {"hami.io/node-acme-register": VALUE, MARKER: marker}
    assert registrar.evaluate("n1", node(deleted, alloc="0"), now=T0 + timedelta(seconds=76)).patch == {}
    # the same stamp written back by someone else, beside the marker: not deleted twice
    back = {**stamped, MARKER: marker}
    assert registrar.evaluate("n1", node(back, alloc="0"), now=T0 + timedelta(seconds=77)).patch == {}
    assert registrar.cache.vendor("n1", "ACME") is None
    # the node shows neither (the patch lost, or the marker removed by hand): the marker is written again
    bare = {"hami.io/node-acme-register": VALUE}
    resent = registrar.evaluate("n1", node(bare, alloc="0"), now=T0 + timedelta(seconds=78))
    assert set(resent.patch) == {MARKER} and resent.conditional


class BrokenRule:
    name = "broken"

    def alive(self, facts: object) -> bool:
        raise RuntimeError("driver bug\non two lines")


def test_a_liveness_rule_that_raises_degrades_only_its_vendor_and_warns_once() -> None:
    broken = VendorRules(
        vendor_key="BROKEN",
        register_annotation="example.com/broken-register",
        handshake_annotation="example.com/broken-handshake",
        count_resource="example.com/broken",
        liveness=BrokenRule(),
        codec=LEGACY_CODEC,
    )
    registrar = Registrar([broken, rules(CountingCodec())], DeviceCache())
    annotations = {"example.com/broken-register": VALUE, "hami.io/node-acme-register": VALUE}
    first = registrar.evaluate("n1", node(annotations), now=T0)
    assert first.patch == {"hami.io/node-handshake-acme": "Requesting_2026-11-29 18:00:00"}
    [warning] = first.warnings
    assert (warning.vendor_key, warning.reason) == ("BROKEN", "HamiLivenessRuleFailed")
    assert warning.message == "node n1: liveness rule 'broken' failed: RuntimeError: driver bug on two lines"
    entry = registrar.cache.vendor("n1", "BROKEN")
    assert entry is not None and entry.state == "degraded" and entry.error == warning.message
    assert registrar.cache.vendor("n1", "ACME") is not None
    again = registrar.evaluate("n1", node(annotations), now=T0 + timedelta(seconds=1))
    assert again.warnings == () and registrar.metrics.totals()["liveness_rule_errors"] == 1


STAMPED = {
    "hami.io/node-acme-register": VALUE,
    "hami.io/node-handshake-acme": "Requesting_2026-11-29 18:00:00",
}


def test_a_cleanup_delete_is_not_asked_for_once_the_node_shows_something_newer() -> None:
    later = T0 + timedelta(seconds=60)
    # The object is deleted and a new Node takes the name with a fresh stamp: the old object's delete
    # must not wipe it.
    registrar = Registrar([rules(CountingCodec())], DeviceCache())
    registrar.evaluate("n1", node(STAMPED, alloc="0"), now=T0)
    registrar.evaluate("n1", node(STAMPED, alloc="0"), now=later)
    registrar.evaluate("n1", None, now=later + timedelta(seconds=1))
    fresh_stamp = {**STAMPED, "hami.io/node-handshake-acme": "Requesting_2026-11-29 18:01:01"}
    reborn = NodeSnapshot(
        name="n1",
        uid="u2",
        resource_version="9",
        annotations=fresh_stamp,
        allocatable={"example.com/acme": "4"},
    )
    assert registrar.evaluate("n1", reborn, now=later + timedelta(seconds=2)).patch == {}
    # A report after the cleanup is a sign of life: re-stamped, not deleted.
    registrar = Registrar([rules(CountingCodec())], DeviceCache())
    registrar.evaluate("n1", node(STAMPED, alloc="0"), now=T0)
    registrar.evaluate("n1", node(STAMPED, alloc="0"), now=later)
    reported = {**STAMPED, "hami.io/node-handshake-acme": "Reported_2026-11-29 18:01:01"}
    back = registrar.evaluate("n1", node(reported, alloc="0"), now=later + timedelta(seconds=1))
    assert back.patch == {"hami.io/node-handshake-acme": "Requesting_2026-11-29 18:01:01"}


def test_a_raising_liveness_rule_leaves_nodes_without_its_vendor_alone() -> None:
    broken = VendorRules(
        vendor_key="BROKEN",
        register_annotation="example.com/broken-register",
        handshake_annotation="example.com/broken-handshake",
        count_resource="example.com/broken",
        liveness=BrokenRule(),
        codec=LEGACY_CODEC,
    )
    registrar = Registrar([broken], DeviceCache())
    for name in ("cpu-0", "cpu-1"):
        bare = NodeSnapshot(name=name, uid=name, resource_version="1")
        result = registrar.evaluate(name, bare, now=T0)
        assert result.patch == {} and result.warnings == ()
    assert registrar.cache.nodes() == [] and registrar.metrics.totals()["liveness_rule_errors"] == 0


def test_a_node_source_runs_only_when_its_declared_inputs_change() -> None:
    """Spec 5, beyond HAMi: work proportional to change. A FromNode function is called for new inputs
    only; another annotation, another capacity, a resync of the same Node: nothing runs, nothing counts."""
    calls: list[NodeView] = []

    def cards(node: NodeView) -> list[DeviceInfo]:
        calls.append(node)
        return [
            DeviceInfo(id=f"{node.name}-{i}", index=i, health=True)
            for i in range(node.capacity["x.example/c"])
        ]

    rules = VendorRules(
        vendor_key="CARD",
        count_resource="x.example/c",
        liveness=DEVICES,  # the node source's own rule
        node_source=FromNode(cards, capacity="x.example/c", liveness="devices"),
    )
    registrar = Registrar([rules], DeviceCache())
    node = NodeSnapshot(name="n1", uid="u1", capacity={"x.example/c": "2", "cpu": "8"})
    registrar.evaluate("n1", node, now=T0)
    assert [dict(v.capacity) for v in calls] == [{"x.example/c": 2}]  # the view holds the declared input only
    other = NodeSnapshot(
        name="n1", uid="u1", capacity={"x.example/c": "2", "cpu": "16"}, annotations={"a": "b"}
    )
    assert registrar.relevant(other) == registrar.relevant(node)
    registrar.evaluate("n1", other, now=T0 + timedelta(minutes=5))
    assert len(calls) == 1
    registrar.evaluate("n1", NodeSnapshot(name="n1", uid="u1", capacity={"x.example/c": "3"}), now=T0)
    assert len(calls) == 2 and len(registrar.cache.node("n1")["CARD"].devices) == 3
    assert registrar.relevant(NodeSnapshot(name="cpu", capacity={"cpu": "8"})) != registrar.relevant(node)
    registrar.evaluate("cpu", NodeSnapshot(name="cpu", uid="u2", capacity={"cpu": "8"}), now=T0)
    assert len(calls) == 2 and registrar.memory("cpu", "CARD").register is None


def test_the_main_input_puts_a_node_source_on_a_node_and_the_annotation_serves_elsewhere() -> None:
    """MLU's case (spec 1b): the smlu memory capacity alone is not HAMi v2.10's MLU capacity; without the
    cores (the source's first input) the seed's annotation is read, with its handshake."""
    _, drivers = load_drivers(["mlu"])
    (mlu,) = drivers
    registrar = Registrar([mlu.rules()], DeviceCache())
    register = "MLU-1,10,23308,0,MLU-370,0,true,0,hami-core:"
    only_memory = NodeSnapshot(
        name="n1",
        uid="u1",
        annotations={"hami.io/node-mlu-register": register},
        capacity={"cambricon.com/mlu.smlu.vmemory": "64"},
    )
    evaluation = registrar.evaluate("n1", only_memory, now=T0)
    assert [d.id for d in registrar.cache.node("n1")["MLU"].devices] == ["MLU-1"]
    assert registrar.cache.node("n1")["MLU"].source == "annotation"
    assert set(evaluation.patch) == {"hami.io/node-handshake-mlu"}  # the seed's path stamps
    both = attrs.evolve(only_memory, capacity={**only_memory.capacity, "cambricon.com/mlu.smlu.vcore": "100"})
    evaluation = registrar.evaluate("n1", both, now=T0)
    assert registrar.cache.node("n1")["MLU"].source == "node" and evaluation.patch == {}
    assert [d.id for d in registrar.cache.node("n1")["MLU"].devices] == ["n1-cambricon-mlu-0"]


def test_capacity_is_read_as_hami_reads_it_an_int64_integer_or_nothing() -> None:
    """HAMi reads capacity with ``AsInt64``: ``8Ei`` (2^63) or ``500m`` is no count at all, for the view
    and for the ``capacity`` rule alike (``Value()`` would cap or round it up)."""
    seen: list[NodeView] = []

    def gcus(node: NodeView) -> list[DeviceInfo]:
        seen.append(node)
        return [
            DeviceInfo(id=f"g{i}", index=i, health=True) for i in range(node.capacity.get("x.example/g", 0))
        ]

    rules = VendorRules(
        vendor_key="G",
        count_resource="x.example/g",
        liveness=CAPACITY,
        node_source=FromNode(gcus, capacity="x.example/g", liveness="capacity"),
    )
    registrar = Registrar([rules], DeviceCache())
    registrar.evaluate("n1", NodeSnapshot(name="n1", uid="u", capacity={"x.example/g": "2"}), now=T0)
    assert len(registrar.cache.node("n1")["G"].devices) == 2
    decision = registrar.evaluate(
        "n1", NodeSnapshot(name="n1", uid="u", capacity={"x.example/g": "8Ei"}), now=T0
    ).decisions["G"]
    assert decision.reason.value == "cleaned-up" and decision.write is None
    assert "n1" not in registrar.cache.nodes()
    registrar.evaluate("n2", NodeSnapshot(name="n2", uid="v", capacity={"x.example/g": "500m"}), now=T0)
    assert [dict(v.capacity) for v in seen[-1:]] == [{}] and "n2" not in registrar.cache.nodes()


def test_the_registrar_remembers_register_values_by_fingerprint_never_the_value() -> None:
    """The Node's register value is the store's (kept compressed there): memory keeps its fingerprint,
    and still tells an unchanged value (no decode), a changed one, and a degraded one from each other."""
    codec = CountingCodec()
    registrar = Registrar([rules(codec)], DeviceCache())
    long_value = ";".join(VALUE.replace("A-1,", f"A-{i},") for i in range(40))
    broken = long_value + ";not a device"
    stamp = "Requesting_2026-11-29 18:00:00"

    def remembered(value: str, at: int) -> tuple[str, object]:
        shown = node({"hami.io/node-acme-register": value, "hami.io/node-handshake-acme": stamp})
        reason = registrar.evaluate("n1", shown, now=T0 + timedelta(seconds=at)).decisions["ACME"].reason
        memory = registrar.memory("n1", "ACME")
        kept = [v for v in attrs.asdict(memory, recurse=False).values() if isinstance(v, str)]
        fingerprints = [v for v in kept if v != memory.degraded]  # the one-line error is no value
        assert value not in kept and all(re.fullmatch(r"sha256:[0-9a-f]{64}", v) for v in fingerprints)
        return reason.value, memory.register

    assert remembered(long_value, 0) == ("registered", fingerprint(long_value)) and codec.decodes == 1
    assert remembered(long_value, 1) == ("unchanged", fingerprint(long_value)) and codec.decodes == 1
    assert remembered(broken, 2) == ("degraded", fingerprint(long_value)) and codec.decodes == 2
    assert registrar.memory("n1", "ACME").degraded_value == fingerprint(broken)
    assert remembered(broken, 3) == ("degraded", fingerprint(long_value)) and codec.decodes == 2
    assert remembered(VALUE, 4) == ("updated", fingerprint(VALUE)) and codec.decodes == 3
