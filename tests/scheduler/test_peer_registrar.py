"""Beside HAMi's own scheduler, on every resync: the gauge, one Warning Event per start, and
``--refuse-beside-hami``; and the scheduler's own name on what it writes. In memory and on the real API
server, on the world's fake clock."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import attrs
from harness.scheduler_world import World

from hami_core.kube.port import Lease
from hami_core.scheduler.config import COMPONENT
from hami_core.scheduler.daemon import Scheduler
from hami_core.scheduler.peer_check import PEER_ACTIVE_REASON

RESYNC = 15.0
MLU = {"hami.io/node-mlu-register": ":"}
DCU = "DCU-1,4,16384,100,DCU-Z100,0,true,0,hami:"


def hami_lease(world: World, *, holder: str | None = "hami-scheduler-7d9f_0b5e") -> Lease:
    now = world.clock.now()
    return Lease(name="hami-scheduler", namespace=world.namespace, holder_identity=holder,
                 lease_duration_seconds=15, acquire_time=now, renew_time=now)  # fmt: skip


def renew(world: World) -> None:
    current = world.admin.get_lease(world.namespace, "hami-scheduler")
    world.admin.update_lease(attrs.evolve(current, renew_time=world.clock.now()))


def release(world: World) -> None:
    current = world.admin.get_lease(world.namespace, "hami-scheduler")
    world.admin.update_lease(attrs.evolve(current, holder_identity=None, renew_time=world.clock.now()))


def peer_events(world: World) -> list[dict[str, Any]]:
    return [e for e in world.admin.events(world.namespace) if e["reason"] == PEER_ACTIVE_REASON]


def gauge(replica: Scheduler) -> float:
    (line,) = [
        x for x in replica.metrics_text().splitlines() if x.startswith("hami_scheduler_peer_registrar")
    ]
    return float(line.split()[-1])


def test_the_check_runs_on_every_resync_and_warns_once_per_start(world: World) -> None:
    replica = world.scheduler("mlu", identity="peer-0", hami_lease=(world.namespace, "hami-scheduler"))
    world.run_until("ready", replica.ready)
    assert gauge(replica) == 0 and peer_events(world) == []

    world.admin.create_lease(hami_lease(world))  # HAMi's scheduler starts after ours
    world.run_until("seen active", lambda: gauge(replica) == 1, limit=RESYNC + 2)
    assert replica.status()["peer_registrar_active"] is True
    (event,) = peer_events(world)
    assert event["type"] == "Warning"
    lease = {"namespace": world.namespace, "name": replica.config.lease_name}
    assert event["involvedObject"] == {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", **lease}
    assert event["source"] == {"component": COMPONENT} and event["reportingComponent"] == COMPONENT
    assert f"Lease {world.namespace}/hami-scheduler is held by 'hami-scheduler-7d9f_0b5e'" in event["message"]

    for _ in range(3):  # still active at the next resyncs: no second Event
        renew(world)
        world.advance(RESYNC)
    assert gauge(replica) == 1 and len(peer_events(world)) == 1

    world.advance(30)  # no renewal: its Lease expires
    world.run_until("seen gone", lambda: gauge(replica) == 0, limit=RESYNC + 2)
    renew(world)  # it starts again: a second Event
    world.run_until("seen again", lambda: len(peer_events(world)) == 2, limit=RESYNC + 2)
    assert replica.elector.is_leader()  # without --refuse-beside-hami it goes on leading


def test_refuse_beside_hami_gives_up_leadership_and_takes_part_again_once_it_is_gone(world: World) -> None:
    node = world.node("peer", MLU)
    replica = world.scheduler(
        "mlu", identity="peer-1", hami_lease=(world.namespace, "hami-scheduler"), refuse_beside_hami=True
    )
    world.run_until("stamped", lambda: "hami.io/node-handshake-mlu" in world.annotations(node))
    world.admin.create_lease(hami_lease(world))
    world.run_until("stood aside", lambda: not replica.elector.is_leader(), limit=RESYNC + 2)
    world.advance(4)  # the elector's next step (2 s) releases the Lease
    own = world.admin.get_lease(world.namespace, replica.config.lease_name)
    assert own.holder_identity is None
    (event,) = peer_events(world)
    assert "gives up leadership and writes nothing" in event["message"]

    world.admin.patch_node_annotations(node, {"hami.io/node-handshake-mlu": None})
    for _ in range(4):  # HAMi's stays active: nothing is written, the Lease is not taken
        renew(world)
        world.advance(RESYNC)
    assert "hami.io/node-handshake-mlu" not in world.annotations(node)
    assert not replica.elector.is_leader() and not replica.ready()
    assert world.admin.get_lease(world.namespace, replica.config.lease_name).holder_identity is None

    release(world)  # HAMi's scheduler is gone: take part again, lead, and stamp
    world.run_until("leads again", replica.ready, limit=RESYNC + 10)
    world.run_until("stamped again", lambda: "hami.io/node-handshake-mlu" in world.annotations(node))
    assert gauge(replica) == 0


def test_refuse_beside_hami_without_leader_election(world: World) -> None:
    node = world.node("peer-solo", MLU)
    world.admin.create_lease(hami_lease(world))
    replica = world.scheduler("mlu", identity="peer-solo", leader_elect=False, refuse_beside_hami=True,
                              hami_lease=(world.namespace, "hami-scheduler"))  # fmt: skip
    world.run_until("seen active", lambda: gauge(replica) == 1)
    for _ in range(3):
        renew(world)
        world.advance(RESYNC)
    assert "hami.io/node-handshake-mlu" not in world.annotations(node)
    release(world)
    world.run_until("stamped", lambda: "hami.io/node-handshake-mlu" in world.annotations(node), limit=60)


def test_the_scheduler_writes_as_its_own_field_manager_and_posts_as_itself(world: World) -> None:
    node = world.node("owned", {"hami.io/node-dcu-register": DCU})
    replica = world.scheduler("dcu", identity="owner-0")
    world.run_until("stamped", lambda: "hami.io/node-handshake-dcu" in world.annotations(node))
    owners = world.admin.node_annotation_managers(node)
    assert owners.managers["hami.io/node-handshake-dcu"] == (COMPONENT,)
    assert owners.managers["hami.io/node-dcu-register"] == ("OpenAPI-Generator",)  # the admin's, here
    world.advance(timedelta(minutes=2).total_seconds())  # the stamp expires: cleaned up, a Warning Event
    about = world.events_about(node)
    assert about and {e["source"]["component"] for e in about} == {COMPONENT}
    assert replica.status()["settings"]["lease"] == {
        "namespace": world.namespace,
        "name": "hami-core-scheduler",
    }
