"""Spec 5b on the real API server: the faults that made the scheduler delete live plugin reports, or stay
blind while looking healthy, reproduced the way they were found, through a fault proxy between the
scheduler and kube-apiserver (``harness.tcpproxy``) and with etcd emptied under a restarted API server.

The oracle is the API server's audit log (``harness.audit``): which writes the scheduler's identity made,
and what they removed from the Node as it stood at that resourceVersion. "No live report deleted" is read
from it after the fact, never proven by waiting. While a fault lasts, the replicas' fake time is moved no
faster than real time (``World.paced``): the API server's watch timeouts and bookmarks and the clients'
read timeouts run on real time, and a replica must not see a minute pass in a second of the wire's.
"""

from __future__ import annotations

import functools
import logging
import uuid
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from harness import audit, rbac
from harness.apiserver import ApiServer, start_apiserver, stop_apiserver
from harness.fixtures import binaries_or_fail
from harness.scheduler_world import WINDOW, World, wait_for, world_on
from harness.tcpproxy import TcpProxy

from hami_core.kube.client import KubeCluster
from hami_core.scheduler.daemon import Scheduler

REGISTER = "hami.io/node-mlu-register"
HANDSHAKE = "hami.io/node-handshake-mlu"
MLU = "MLU-1,10,23308,0,MLU-MLU370-X4,0,true:"


def _registered(replica: Scheduler, node: str) -> bool:
    entry = replica.cache.vendor(node, "MLU")
    return entry is not None and entry.state == "registered"


def _stamped(world: World, node: str) -> bool:
    return world.annotations(node).get(HANDSHAKE, "").startswith("Requesting_")


def _report(server: ApiServer, node: str) -> str:
    """The node's device plugin answers (as HAMi's do: ``Reported_<local time>``), as the reporter of that
    node, straight to the API server (the fault is on the scheduler's path only)."""
    value = "Reported_" + datetime.now().strftime("%Y-%m-%d %H:%M:%S")
    plugin = KubeCluster.from_kubeconfig(server.kubeconfig(server.reporter(node)))
    try:
        plugin.patch_node_annotations(node, {HANDSHAKE: value})
    finally:
        plugin.close()
    return value


def _reports_deleted_by_the_scheduler(server: ApiServer, nodes: list[str]) -> list[tuple[str, str, str]]:
    events = server.audit_events(resource="nodes")
    return [
        (node, key, value)
        for node in nodes
        for _, key, value in audit.deleted_values(events, node, user=rbac.SCHEDULER_USER)
        if value.startswith("Reported")
    ]


def _untracked_node(world: World, suffix: str) -> str:
    """A Node made behind the world's back: ``settle`` does not wait for the replicas to see it (a replica
    whose watch is frozen cannot)."""
    name = f"{suffix}-{uuid.uuid4().hex[:8]}"
    world.admin._inner.create_node(name, labels=world.label, annotations={REGISTER: MLU})
    return name


def test_a_silent_watch_is_replaced_the_view_recovers_and_no_live_report_is_deleted(
    real_world: World, proxy: TcpProxy, caplog: pytest.LogCaptureFixture
) -> None:
    world, server = real_world, real_world.server
    caplog.set_level(logging.WARNING, logger="hami_core.kube.reflector")
    proxy.start()
    node = world.node("live", {REGISTER: MLU})
    replica = world.scheduler("mlu", cluster=world.cluster(proxy=proxy))
    world.run_until("stamped", lambda: _stamped(world, node))
    world.run_until("ready", replica.ready)
    stale_before = replica.status().get("view", {}).get("times_stale", 0)

    assert proxy.freeze() >= 1  # the watch and the pooled connections go silent; new ones work
    report = _report(server, node)  # the plugin answers; the frozen watch never shows it
    late = _untracked_node(world, "late")
    # A window and more passes, no faster than on the wire: the stamp the plugin answered expires.
    world.paced(WINDOW + 10)

    assert _reports_deleted_by_the_scheduler(server, [node, late]) == []
    wait_for("the node created meanwhile registered", lambda: _registered(replica, late), timeout=60)
    stamps = [
        e
        for e in server.audit_events(user=rbac.SCHEDULER_USER, name=late, verbs={"patch"}, succeeded=True)
        if str((e.request_annotations or {}).get(HANDSHAKE, "")).startswith("Requesting_")
    ]
    assert stamps, "the scheduler never stamped the node created while its watch was silent"
    now = world.annotations(node).get(HANDSHAKE, "")
    assert now == report or now.startswith("Requesting_"), now  # the report, or the stamp answering it
    assert replica.status()["view"]["times_stale"] > stale_before, "the silent watch was never noticed"
    assert "showed no progress" in caplog.text
    world.run_until("ready again", replica.ready)
    assert replica.metrics.totals()["cleanups"] == 0


@pytest.mark.parametrize("fault", ["blackhole", "resets"])
def test_after_an_outage_no_cleanup_is_decided_on_the_old_view(
    real_world: World, proxy: TcpProxy, fault: str
) -> None:
    world, server = real_world, real_world.server
    proxy.start()
    nodes = [world.node(f"r{i}", {REGISTER: MLU}) for i in range(3)]
    replica = world.scheduler("mlu", cluster=world.cluster(proxy=proxy))
    for node in nodes:
        world.run_until("stamped", functools.partial(_stamped, world, node))
    world.run_until("ready", replica.ready)
    term = replica.elector.term
    world.advance(WINDOW - 15)  # the stamps are 45 s old; the plugins are slow to answer

    if fault == "blackhole":
        # 20 s in which nothing gets through, new connections included; the connections open at its
        # start never deliver again (what was sent on them was lost), new ones work once it is over
        proxy.freeze()
        proxy.hold()
        lasts = 20.0
    else:
        proxy.resets(True)  # 15 s of resets
        lasts = 15.0
    for node in nodes:
        _report(server, node)  # the answers come in, 45-50 s after the stamps: live plugins
    world.paced(lasts)  # the stamps expire in the replica's view meanwhile
    if fault == "blackhole":
        proxy.release()
    else:
        proxy.resets(False)
    world.paced(30, until=replica.ready)
    world.run_until("ready after the outage", replica.ready)

    assert _reports_deleted_by_the_scheduler(server, nodes) == []
    for node in nodes:
        assert _registered(replica, node), node
    assert replica.elector.term >= term


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[ApiServer]:
    """An API server of this test's own: it is restarted on an empty etcd, which the session's shares."""
    server = start_apiserver(tmp_path / "server", bin_dir=binaries_or_fail(), reporter_nodes=())
    try:
        yield server
    finally:
        stop_apiserver(server)


def test_after_etcd_loses_its_data_the_cache_converges_within_a_minute(own_server: ApiServer) -> None:
    server = own_server
    namespace = f"t-{uuid.uuid4().hex[:8]}"
    assert server.request("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})[0] == 201
    world = world_on(server, namespace)
    try:
        gone = world.node("gone", {REGISTER: MLU})
        again = world.node("again", {REGISTER: MLU})
        replica = world.scheduler("mlu")
        for node in (gone, again):
            world.run_until("stamped", functools.partial(_stamped, world, node))
        world.run_until("ready", replica.ready)
        old_uid = replica.reflector.snapshot(again).uid  # type: ignore[union-attr]
        # move the store on, so that the empty one is well behind what the replica has seen
        for i in range(150):
            world.admin.patch_node_annotations(gone, {"example.com/n": str(i)})
        world.settle()
        seen = int(replica.reflector.resource_version)

        server.restart_on_empty_etcd()
        world.admin.writes.expected.clear()  # the old objects are gone with etcd's data
        assert server.request("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})[0] == 201
        # what the cluster holds now: one of the old nodes again (a new object), and a new one
        again_now = world.admin.create_node(again, labels=world.label, annotations={REGISTER: MLU})
        new = world.node("new", {REGISTER: MLU})
        assert int(again_now.resource_version) < seen

        def converged() -> bool:
            snapshot = replica.reflector.snapshot(again)
            return (
                replica.reflector.snapshot(gone) is None
                and not replica.cache.node(gone)
                and snapshot is not None
                and snapshot.uid == again_now.uid
                and _registered(replica, again)
                and _registered(replica, new)
                and _stamped(world, again)
                and _stamped(world, new)
            )

        assert world.paced(60, until=converged), "not converged within a minute of the restart"
        assert replica.reflector.store_rewinds >= 1 and old_uid != again_now.uid
        for node in (again, new):
            stamps = [
                e
                for e in server.audit_events(
                    user=rbac.SCHEDULER_USER, name=node, verbs={"patch"}, succeeded=True
                )
                if e.resource_version.isdigit() and int(e.resource_version) < seen
            ]
            assert stamps, f"no stamp of {node} on the new store"
    finally:
        world.stop_all()
