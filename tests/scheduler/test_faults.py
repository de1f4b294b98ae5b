"""Faults the scheduler must survive: an unreachable API server, dropped and expired watches, failed
patches. The network faults run against the real kube-apiserver through a cuttable TCP path."""

from __future__ import annotations

import urllib.error
import urllib.request
from typing import Any

from harness.admin import MemoryCluster
from harness.poll import wait_for
from harness.scheduler_world import WINDOW, CountingCluster, World
from harness.tcpproxy import TcpProxy

from hami_core.scheduler.metrics import total

NVIDIA = (
    '[{"id":"GPU-0","count":10,"devmem":24576,"devcore":100,"type":"NVIDIA-A10",'
    '"mode":"hami-core","health":true}]'
)
DCU = "DCU-1,4,16384,100,DCU-Z100,0,true,0,hami:"


def _registered(replica: object, node: str) -> set[str]:
    cache = replica.cache  # type: ignore[attr-defined]
    return {k for k, e in cache.node(node).items() if e.state == "registered"}


def test_unreachable_at_start_then_recovers_by_itself(real_world: World, proxy: TcpProxy) -> None:
    node = real_world.node("late", {"hami.io/node-dcu-register": DCU}, {"hygon.com/dcunum": "4"})
    cluster = real_world.cluster(proxy=proxy)  # the proxy is not listening yet: connection refused
    replica = real_world.scheduler("dcu", cluster=cluster)
    clock = real_world.clock
    for _ in range(12):  # three seconds of fake time; each step returns once what was due has run
        clock.advance(0.25)
        assert clock.wait_for_waiting(3)  # reflector (backoff), elector and worker wait again
    assert replica.alive() and not replica.ready() and not replica.cache.nodes()
    # Backoff, not a tight loop: a handful of attempts in three seconds.
    assert cluster.calls["list_nodes"] <= 6, cluster.calls
    assert cluster.calls["get_lease"] + cluster.calls["create_lease"] <= 3, cluster.calls
    # No answer at all (connection refused): counted as "error", not as an HTTP status class.
    lists = total(replica.metrics.api_requests, verb="list", resource="nodes", result="error")
    assert lists == cluster.calls["list_nodes"] >= 1
    proxy.start()
    real_world.run_until(
        "registered once the server is reachable", lambda: _registered(replica, node) == {"DCU"}
    )
    real_world.run_until("ready", replica.ready)


def test_outage_mid_run_stops_writes_keeps_the_cache_and_cleans_nothing(
    real_world: World, proxy: TcpProxy
) -> None:
    proxy.start()
    node = real_world.node(
        "mid",
        {"hami.io/node-dcu-register": DCU, "hami.io/node-nvidia-register": NVIDIA},
        {"hygon.com/dcunum": "4", "nvidia.com/gpu": "10"},
    )
    cluster = real_world.cluster(proxy=proxy)
    replica = real_world.scheduler("dcu", "nvidia", cluster=cluster)
    real_world.run_until("registered", lambda: _registered(replica, node) == {"DCU", "NVIDIA"})
    real_world.run_until("ready", replica.ready)
    proxy.cut()
    real_world.run_until("lease lost", lambda: not replica.elector.is_leader())
    assert not replica.ready()
    # The outage outlasts the handshake window: stamps expire meanwhile.
    patches_at_cut = cluster.calls["patch_node_annotations"]
    real_world.advance(WINDOW + 1)
    assert _registered(replica, node) == {"DCU", "NVIDIA"}, "the cache is kept during the outage"
    assert cluster.calls["patch_node_annotations"] == patches_at_cut, "no writes without the lease"
    proxy.start()
    real_world.run_until("leader again", replica.ready)
    real_world.advance(WINDOW)
    # Allocatable is still > 0 for both: expired stamps alone clean nothing (spec 4 rule 4).
    assert _registered(replica, node) == {"DCU", "NVIDIA"}
    assert replica.registrar.metrics.totals()["cleanups"] == 0
    assert replica.alive()


def test_watch_expiry_and_drops_relist_without_loss_duplication_or_cleanup(memory_world: World) -> None:
    """410 on demand needs the in-memory cluster; on the real server the reflector's relist after Gone is
    in the cluster contract suite, and dropped connections are in the outage tests above."""
    world = memory_world
    memory: MemoryCluster = world.admin  # type: ignore[assignment]
    nodes = [
        world.node(f"w{i}", {"hami.io/node-nvidia-register": NVIDIA}, {"nvidia.com/gpu": "10"})
        for i in range(5)
    ]
    replica = world.scheduler("nvidia")
    for n in nodes:
        world.run_until("registered", lambda n=n: _registered(replica, n) == {"NVIDIA"})  # type: ignore[misc]
    lists_before = replica.reflector.lists
    memory.compact()
    memory.force_gone(2)
    memory.drop_watches()
    # Changes while the watch is down: one node deleted, one added.
    memory.delete_node(nodes[0])
    added = world.node("w-new", {"hami.io/node-nvidia-register": NVIDIA}, {"nvidia.com/gpu": "10"})
    world.run_until("relisted", lambda: replica.reflector.lists > lists_before)
    world.run_until("new node registered", lambda: _registered(replica, added) == {"NVIDIA"})
    world.run_until("deleted node gone", lambda: not replica.cache.node(nodes[0]))
    assert set(replica.cache.nodes()) == {*nodes[1:], added}
    assert replica.registrar.metrics.totals()["cleanups"] == 0


def test_failed_patches_are_retried_and_do_not_block_other_nodes(memory_world: World) -> None:
    world = memory_world
    memory: MemoryCluster = world.admin  # type: ignore[assignment]
    a = world.node("pa", {"hami.io/node-dcu-register": DCU}, {"hygon.com/dcunum": "4"})
    replica = world.scheduler("dcu", start=False)
    memory.fail_next(2, verb="patch")
    world.start(replica)
    world.run_until(
        "stamped after retries",
        lambda: world.annotations(a).get("hami.io/node-handshake-dcu", "").startswith("Requesting_"),
        step=0.25,
    )
    b = world.node("pb", {"hami.io/node-dcu-register": DCU}, {"hygon.com/dcunum": "4"})
    world.run_until("other node stamped", lambda: "hami.io/node-handshake-dcu" in world.annotations(b))
    assert replica.writer.counters["patch_errors"] == 2
    assert replica.metrics.patch_requests() == {"2xx": 2, "4xx": 0, "5xx": 2, "error": 0}
    assert CountingCluster.of(replica).calls["patch_node_annotations"] == 4  # two failed, then one per node


# -- spec 5b: no cleanup on a view the replica cannot vouch for (real-server cases: test_faults_view.py) --

MLU_REGISTER = "hami.io/node-mlu-register"
MLU_HANDSHAKE = "hami.io/node-handshake-mlu"
MLU = "MLU-1,10,23308,0,MLU-MLU370-X4,0,true:"
REPORT = "Reported_2026-01-01 00:00:55"


def _stamped(world: World, node: str) -> bool:
    return world.annotations(node).get(MLU_HANDSHAKE, "").startswith("Requesting_")


def _get(replica: Any, path: str) -> tuple[int, bytes]:
    _, port = replica.http_address
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def test_no_cleanup_is_decided_while_the_view_has_a_gap(memory_world: World) -> None:
    world = memory_world
    node = world.node("gap", {MLU_REGISTER: MLU})
    replica = world.scheduler("mlu")
    world.run_until("stamped", lambda: _stamped(world, node))
    world.run_until("ready", replica.ready)
    world.advance(WINDOW - 10)  # the stamp is 50 s old
    memory: MemoryCluster = world.admin._inner  # writes the replica cannot see yet
    memory.fail_next(8, verb="list")  # the lists after the gap fail for a minute and more (backoff)
    memory.drop_watches()
    memory.patch_node_annotations(node, {MLU_HANDSHAKE: REPORT})  # the plugin answers meanwhile
    # No fake time passes before the replica has seen its watch break: a busy machine can delay that,
    # and the clock, moved meanwhile, would expire the stamp on a view that still counts as current.
    reflector = replica.reflector
    wait_for("the watch seen broken", lambda: reflector.listing_due() or reflector.backing_off())
    world.run_until("stale", lambda: not replica.ready())
    view = replica.status()["view"]
    assert not view["current"] and "failed" in view["stale_because"], view
    status, body = _get(replica, "/readyz")
    assert status == 503, body
    metrics = _get(replica, "/metrics")[1].decode()
    assert "hami_scheduler_view_current 0.0" in metrics and "hami_scheduler_view_stale_total 1.0" in metrics
    world.advance(15)  # the stamp expires in the replica's view, which still shows it
    totals = replica.metrics.totals()
    assert totals["cleanups_withheld"] >= 1 and totals["cleanups"] == 0, totals
    assert world.annotations(node)[MLU_HANDSHAKE] == REPORT  # nothing deleted
    assert _registered(replica, node) == {"MLU"}  # nor dropped from the cache
    world.run_until("current again", replica.ready, limit=150)
    world.run_until("the report answered with a stamp", lambda: _stamped(world, node))
    assert replica.metrics.totals()["cleanups"] == 0
    assert _registered(replica, node) == {"MLU"}
    assert replica.status()["view"]["current"] and replica.status()["view"]["times_stale"] >= 1
    assert _get(replica, "/readyz")[0] == 200


def test_a_term_starts_on_a_list_made_after_it_began(memory_world: World) -> None:
    world = memory_world
    node = world.node("term", {MLU_REGISTER: MLU})
    first = world.scheduler("mlu", identity="first")
    world.run_until("stamped", lambda: _stamped(world, node))
    world.run_until("ready", first.ready)
    second = world.scheduler("mlu", identity="second")
    world.settle()
    world.advance(WINDOW - 10)
    memory: MemoryCluster = world.admin._inner
    memory.silence_watches()  # both replicas' watches go silent (no FIN, no RST): nobody notices yet
    memory.patch_node_annotations(node, {MLU_HANDSHAKE: REPORT})  # the plugin answers, unseen
    lists = second.reflector.lists
    world.stop(first)  # it releases the Lease: the second takes over on a view that missed the report
    world.run_until("the second leads", second.ready)
    assert second.reflector.lists > lists  # its term started on a fresh list, which shows the report
    world.advance(15)  # the old stamp's window passes
    assert second.metrics.totals()["cleanups"] == 0
    assert _stamped(world, node)  # the report was answered, not deleted
    assert _registered(second, node) == {"MLU"}
