"""The scheduler daemon end to end, against the in-memory cluster and the real kube-apiserver alike."""

from __future__ import annotations

from typing import Any

import attrs
from harness.scheduler_world import WINDOW, CountingCluster, World

from hami_core.protocol.codecs import decode_any

NVIDIA_REGISTER = (
    '[{"id":"GPU-0","count":10,"devmem":24576,"devcore":100,"type":"NVIDIA-A10",'
    '"mode":"hami-core","health":true}]'
)
REGISTER = {
    "hami.io/node-nvidia-register": NVIDIA_REGISTER,
    "hami.io/node-mlu-register": "MLU-45013011,10,23308,0,MLU-MLU370-X4,0,true,0,hami-core:",
    "hami.io/node-dcu-register": "DCU-1,4,16384,100,DCU-Z100,0,true,0,hami:"
    "DCU-2,4,16384,100,DCU-Z100,1,true,1,hami:",
    "hami.io/node-register-xpu": '[{"id":"XPU-0","count":4,"devmem":98304,"devcore":100,"type":"P800",'
    '"health":true}]',
}
ALLOCATABLE = {
    "nvidia.com/gpu": "10",
    "cambricon.com/mlu": "1",
    "hygon.com/dcunum": "8",
    "kunlunxin.com/vxpu": "4",
}
HANDSHAKES = {
    "NVIDIA": "hami.io/node-handshake",
    "MLU": "hami.io/node-handshake-mlu",
    "DCU": "hami.io/node-handshake-dcu",
    "XPU": "hami.io/node-handshake-xpu",
}
VENDOR_OF = {
    "hami.io/node-nvidia-register": "NVIDIA",
    "hami.io/node-mlu-register": "MLU",
    "hami.io/node-dcu-register": "DCU",
    "hami.io/node-register-xpu": "XPU",
}


def expected(register_key: str, value: str) -> tuple[Any, ...]:
    vendor = VENDOR_OF[register_key]
    return tuple(attrs.evolve(d, devicevendor=vendor) for d in decode_any(value))


def stamped(world: World, node: str, vendor: str) -> bool:
    return world.annotations(node).get(HANDSHAKES[vendor], "").startswith("Requesting_")


def registered(replica: Any, node: str) -> set[str]:
    return {k for k, e in replica.cache.node(node).items() if e.state == "registered"}


def test_all_four_vendors_are_stamped_and_registered_with_one_patch(world: World) -> None:
    node = world.node("all", REGISTER, ALLOCATABLE)
    bare = world.node("cpu-only")
    replica = world.scheduler()
    world.run_until("four vendors registered", lambda: registered(replica, node) == set(HANDSHAKES))
    world.run_until("ready", replica.ready)
    for key, value in REGISTER.items():
        assert getattr(replica.cache.vendor(node, VENDOR_OF[key]), "devices", None) == expected(key, value)
    annotations = world.run_until(
        "stamps", lambda: (a := world.annotations(node)) and all(k in a for k in HANDSHAKES.values()) and a
    )
    for key in HANDSHAKES.values():
        assert annotations[key].startswith("Requesting_20"), annotations[key]
    # Spec 4 rule 6: a node without any vendor gets no handshake at all.
    assert world.annotations(bare) == {}
    calls = CountingCluster.of(replica).calls
    assert calls["patch_node_annotations"] == 1, calls  # all four stamps in one merge patch
    # The first list, and the fresh one the term starts on (spec 5b), unless the term asked for it
    # before the first list began or while it was read (then the first serves both, started over once
    # if need be); and a one-Node probe before each watch. No list request comes from anywhere else.
    reflector = replica.reflector
    assert calls["get_node"] == 0 and reflector.lists <= 2, calls
    assert reflector.lists <= reflector.list_pages <= 2 * reflector.lists, calls  # one page per list
    assert calls["list_nodes"] == reflector.list_pages + reflector.probes, calls


def test_a_plugin_report_is_re_stamped(world: World) -> None:
    node = world.node("mlu", {"hami.io/node-mlu-register": REGISTER["hami.io/node-mlu-register"]})
    replica = world.scheduler("mlu")
    world.run_until("stamp", lambda: stamped(world, node, "MLU"))
    report = "Reported 2024-01-23 04:30:04.434037031 +0000 UTC m=+1104711.777756895"
    world.admin.patch_node_annotations(node, {HANDSHAKES["MLU"]: report})
    world.run_until("re-stamp", lambda: stamped(world, node, "MLU"))
    assert registered(replica, node) == {"MLU"}
    world.settle()
    assert CountingCluster.of(replica).calls["patch_node_annotations"] == 2


def test_dead_plugin_is_cleaned_up_and_stays_out_until_a_sign_of_life(world: World) -> None:
    node = world.node(
        "dcu", {"hami.io/node-dcu-register": REGISTER["hami.io/node-dcu-register"]}, {"hygon.com/dcunum": "8"}
    )
    replica = world.scheduler("dcu")
    world.run_until("registered", lambda: registered(replica, node) == {"DCU"})
    # The plugin dies: kubelet drops the allocatable count, no more reports.
    world.admin.patch_node_status(node, {"hygon.com/dcunum": "0"})
    world.run_until("cleanup", lambda: not replica.cache.node(node))
    world.run_until("handshake deleted", lambda: HANDSHAKES["DCU"] not in world.annotations(node))
    assert world.annotations(node)["hami.io/node-dcu-register"] == REGISTER["hami.io/node-dcu-register"]
    # No flapping (spec 4.2): more than a window later it is neither re-stamped nor re-registered.
    world.advance(WINDOW * 1.5)
    assert not replica.cache.node(node)
    assert HANDSHAKES["DCU"] not in world.annotations(node)
    # A sign of life readmits it.
    world.admin.patch_node_annotations(node, {HANDSHAKES["DCU"]: "Reported_2026.11.29 10:00:00"})
    world.run_until("readmitted", lambda: registered(replica, node) == {"DCU"})
    world.run_until("re-stamped", lambda: stamped(world, node, "DCU"))
    assert replica.registrar.metrics.totals()["cleanups"] == 1


def test_nvidia_with_an_old_stamp_and_allocatable_stays_registered(world: World) -> None:
    node = world.node(
        "gpu",
        {
            "hami.io/node-nvidia-register": NVIDIA_REGISTER,
            "hami.io/node-handshake": "Requesting_2024-01-23 04:30:04",
        },
        {"nvidia.com/gpu": "10"},
    )
    replica = world.scheduler("nvidia")
    world.run_until("registered", lambda: registered(replica, node) == {"NVIDIA"})
    world.advance(WINDOW + 1)
    assert registered(replica, node) == {"NVIDIA"}
    assert world.annotations(node)["hami.io/node-handshake"] == "Requesting_2024-01-23 04:30:04"
    assert CountingCluster.of(replica).calls["patch_node_annotations"] == 0
    # NVIDIA's rule: once the count was > 0, its drop to 0 cleans up at once.
    world.admin.patch_node_status(node, {"nvidia.com/gpu": "0"})
    world.run_until("cleanup", lambda: not replica.cache.node(node))
    world.run_until("handshake deleted", lambda: "hami.io/node-handshake" not in world.annotations(node))


def test_a_malformed_annotation_degrades_only_that_vendor_on_that_node(world: World) -> None:
    good = world.node("good", REGISTER, ALLOCATABLE)
    truncated = "MLU-1,10,23308,0,MLU-370,0,true:MLU-2,10,"  # the seed's truncated second record
    bad = world.node("bad", {**REGISTER, "hami.io/node-mlu-register": truncated}, ALLOCATABLE)
    replica = world.scheduler()
    world.run_until("good registered", lambda: registered(replica, good) == set(HANDSHAKES))
    world.run_until("bad node's other vendors", lambda: registered(replica, bad) == {"NVIDIA", "DCU", "XPU"})
    entry = world.run_until("degraded", lambda: replica.cache.vendor(bad, "MLU"))
    assert entry.state == "degraded" and entry.devices == () and "segment 2" in (entry.error or "")
    # Seen before the replica led, perhaps: posted once it leads, while the value is still bad.
    world.run_until("the first warning event", lambda: _events(world, bad))
    # A later good value, then a truncated one: the last good list is kept while degraded.
    value = REGISTER["hami.io/node-mlu-register"]
    world.admin.patch_node_annotations(bad, {"hami.io/node-mlu-register": value})
    world.run_until("recovered", lambda: registered(replica, bad) == set(HANDSHAKES))
    world.admin.patch_node_annotations(bad, {"hami.io/node-mlu-register": value[:20]})
    world.run_until(
        "degraded again", lambda: getattr(replica.cache.vendor(bad, "MLU"), "state", None) == "degraded"
    )
    assert getattr(replica.cache.vendor(bad, "MLU"), "devices", None) == expected(
        "hami.io/node-mlu-register", value
    )
    warnings = world.run_until(
        "two warning events", lambda: len(e := _events(world, bad, "Warning")) >= 2 and e
    )
    assert {e["reason"] for e in warnings} == {"HamiRegisterAnnotationInvalid"}
    # The good value in between registered MLU's devices: news about a node the replica knew.
    assert [e["reason"] for e in _events(world, bad, "Normal")] == ["HamiVendorRegistered"]
    assert not _events(world, good)  # found registered when the replica started: no news
    assert registered(replica, good) == set(HANDSHAKES)
    assert replica.alive()


def _events(world: World, node: str, type: str | None = None) -> list[dict[str, Any]]:
    """Events about ``node`` (of ``type``, if given); Events about Nodes live in the ``default`` namespace."""
    return [e for e in world.events_about(node) if type in (None, e["type"])]


def test_huge_and_binary_values_are_degraded_not_fatal(world: World) -> None:
    huge = "[" + ",".join(['{"id":"G"}'] * 20_000) + "]"  # ~200 KiB: under the API server's limit
    node = world.node(
        "huge",
        {"hami.io/node-nvidia-register": huge + "x", "hami.io/node-dcu-register": "\x00\x01\ufffe:,,:"},
        ALLOCATABLE,
    )
    replica = world.scheduler("nvidia", "dcu")
    world.run_until(
        "both degraded",
        lambda: (
            {k for k, e in replica.cache.node(node).items() if e.state == "degraded"} == {"NVIDIA", "DCU"}
        ),
    )
    assert replica.alive()


def test_node_leaving_the_selector_leaves_the_cache(world: World) -> None:
    node = world.node("sel", {"hami.io/node-nvidia-register": NVIDIA_REGISTER}, {"nvidia.com/gpu": "1"})
    replica = world.scheduler("nvidia")
    world.run_until("registered", lambda: registered(replica, node) == {"NVIDIA"})
    world.admin.merge_patch_node(node, {"metadata": {"labels": {"hami-test": None}}})
    world.run_until("gone from the cache", lambda: not replica.cache.node(node))


def test_node_deleted_and_recreated_starts_clean(world: World) -> None:
    annotations = {"hami.io/node-dcu-register": REGISTER["hami.io/node-dcu-register"]}
    node = world.node("recreate", annotations)
    replica = world.scheduler("dcu")
    world.run_until("registered", lambda: registered(replica, node) == {"DCU"})
    world.run_until("cleaned up (no allocatable)", lambda: not replica.cache.node(node))
    assert replica.registrar.memory(node, "DCU").awaiting_sign_of_life
    world.admin.delete_node(node)
    world.run_until("forgotten", lambda: node not in replica.registrar.known_nodes())
    world.admin.create_node(node, labels=world.label, annotations=annotations)
    world.run_until("registered anew", lambda: registered(replica, node) == {"DCU"})
    world.run_until("stamped anew", lambda: stamped(world, node, "DCU"))


def test_two_replicas_one_writer_and_handover_without_cleanup(world: World) -> None:
    nodes = [world.node(f"ha{i}", REGISTER, ALLOCATABLE) for i in range(3)]
    first = world.scheduler(identity="replica-1")
    second = world.scheduler(identity="replica-10")  # HAMi's prefix match would confuse these two
    leader = world.run_until("a leader", lambda: next((r for r in (first, second) if r.ready()), None))
    follower = second if leader is first else first
    assert not follower.elector.is_leader() and not follower.ready()
    for n in nodes:
        world.run_until("warm follower cache", lambda n=n: registered(follower, n) == set(HANDSHAKES))  # type: ignore[misc]
    world.settle()
    assert CountingCluster.of(follower).calls["patch_node_annotations"] == 0
    assert CountingCluster.of(leader).calls["patch_node_annotations"] == len(nodes)
    # The leader crashes (no release): the follower takes over once the lease expires.
    started = world.clock.monotonic()
    world.stop(leader, release=False)
    world.run_until("takeover", follower.ready)
    # The follower sees the leader's last renewal at one of its tries (up to a retry period after the
    # crash) and finds it expired at the first try a lease duration after that: tries are a retry period
    # apart, so up to one more retry period.
    cfg = follower.config
    assert world.clock.monotonic() - started <= cfg.lease_duration + 2 * cfg.retry_period
    for n in nodes:
        assert registered(follower, n) == set(HANDSHAKES)
    world.advance(WINDOW + 1)
    assert [r.registrar.metrics.totals()["cleanups"] for r in (first, second)] == [0, 0]
    for n in nodes:
        assert registered(follower, n) == set(HANDSHAKES)


def test_every_replica_sees_a_bad_value_but_only_the_leader_posts_the_event(world: World) -> None:
    first = world.scheduler("mlu", identity="ev-1")
    second = world.scheduler("mlu", identity="ev-2")
    leader = world.run_until("a leader", lambda: next((r for r in (first, second) if r.ready()), None))
    follower = second if leader is first else first
    world.run_until("follower synced", lambda: follower.reflector.has_synced)
    bad = world.node("ev-bad", {"hami.io/node-mlu-register": "garbage,not,a,device"})
    for replica in (first, second):
        world.run_until("degraded", lambda replica=replica: replica.cache.vendor(bad, "MLU"))  # type: ignore[misc]
    world.run_until("the event", lambda: _events(world, bad))
    world.advance(WINDOW)  # room for a second, wrong one
    [event] = _events(world, bad)
    assert event["reportingInstance"] == leader.config.identity
    assert follower.registrar.metrics.totals()["decode_errors"] == 1  # seen, logged and counted all the same


def test_a_node_deleted_and_recreated_at_once_starts_clean(world: World) -> None:
    annotations = {"hami.io/node-dcu-register": REGISTER["hami.io/node-dcu-register"]}
    node = world.node("reborn", annotations)
    replica = world.scheduler("dcu")
    world.run_until(
        "cleaned up (no allocatable)", lambda: replica.registrar.memory(node, "DCU").awaiting_sign_of_life
    )
    # No wait between: the delete may merge with the re-create in the work queue.
    world.admin.delete_node(node)
    world.admin.create_node(node, labels=world.label, annotations=annotations)
    world.run_until("registered anew", lambda: registered(replica, node) == {"DCU"})
    world.run_until("stamped anew", lambda: stamped(world, node, "DCU"))


def test_graceful_stop_releases_the_lease_for_an_immediate_takeover(world: World) -> None:
    world.node("rel", {"hami.io/node-nvidia-register": NVIDIA_REGISTER}, {"nvidia.com/gpu": "1"})
    first = world.scheduler("nvidia", identity="a", lease_duration=8.0, renew_deadline=6.0)
    world.run_until("first leads", first.ready)
    second = world.scheduler("nvidia", identity="b", lease_duration=8.0, renew_deadline=6.0)
    world.advance(second.config.retry_period)
    assert not second.elector.is_leader()
    started = world.clock.monotonic()
    world.stop(first)
    world.run_until("second leads", second.ready)
    # at its next try, well under the 8 s lease: it was released, not expired
    assert world.clock.monotonic() - started <= second.config.retry_period


def test_without_leader_election_one_replica_leads_and_takes_no_lease(world: World) -> None:
    node = world.node("solo", {"hami.io/node-mlu-register": REGISTER["hami.io/node-mlu-register"]})
    # hami_lease=None: no read of HAMi's Lease either, so any Lease request would be the elector's
    replica = world.scheduler("mlu", leader_elect=False, identity="solo", hami_lease=None)
    world.run_until("ready", replica.ready)
    world.run_until("stamped", lambda: stamped(world, node, "MLU"))
    assert replica.elector.is_leader() and replica.status()["holder"] == "solo"
    calls = CountingCluster.of(replica).calls
    assert calls["get_lease"] + calls["create_lease"] + calls["update_lease"] == 0, calls


def test_a_follower_whose_clock_is_behind_follows_the_leaders_cleanup(world: World) -> None:
    """The leader cleans a dead vendor up when the stamp expires by its clock; a follower whose clock is
    a few seconds behind sees the handshake deleted before its own timer. It must drop the vendor too
    (its warm cache is what it serves and starts a term with), and on a takeover not stamp it again."""
    node = world.node(
        "dcu", {"hami.io/node-dcu-register": REGISTER["hami.io/node-dcu-register"]}, {"hygon.com/dcunum": "8"}
    )
    leader = world.scheduler("dcu", identity="clock-ok")
    world.run_until("leader", leader.ready)
    follower = world.scheduler("dcu", identity="clock-behind", wall_skew=-5.0)
    world.run_until("warm follower", lambda: registered(follower, node) == {"DCU"})
    world.admin.patch_node_status(node, {"hygon.com/dcunum": "0"})
    world.run_until("cleanup", lambda: not leader.cache.node(node))
    world.run_until("handshake deleted", lambda: HANDSHAKES["DCU"] not in world.annotations(node))
    world.run_until("the follower drops it too", lambda: not follower.cache.node(node), limit=3 * WINDOW)
    world.stop(leader)
    world.run_until("takeover", follower.ready)
    world.advance(WINDOW * 1.5)
    assert HANDSHAKES["DCU"] not in world.annotations(node)
    assert not follower.cache.node(node)
    assert CountingCluster.of(follower).calls["patch_node_annotations"] == 0


def test_a_replica_stopped_as_it_starts_stops_cleanly(memory_world: World) -> None:
    """``stop`` can come while the elector's first try is ending and the reflector starting: the reflector
    is then started whole (and joined) or not at all."""
    for i in range(30):
        replica = memory_world.scheduler("dcu", identity=f"brief-{i}")
        memory_world.stop(replica)
        assert not replica.alive()
