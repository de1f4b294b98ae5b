"""A renewal that comes late keeps the term but not the writes: what was not sent meanwhile is sent after.

Under load the elector's thread can be late to renew. Past the renew deadline the replica does not
write (``is_leader`` is false), yet the renewal that finally goes through keeps the term, so no new
term's full pass decides the nodes again. The stamps decided in that gap must still be written once the
replica leads again (found in ``bench/scheduler.py``'s daemon step: 35-350 of 10,000 nodes stayed
unstamped for the rest of the run).
"""

from __future__ import annotations

import threading
from typing import Any

from harness.poll import wait_for
from harness.scheduler_world import World

from hami_core.protocol.handshake import classify
from hami_core.scheduler.daemon import Scheduler
from hami_core.scheduler.explain import CLEANED_UP

MLU = "MLU-45013011,10,23308,0,MLU-MLU370-X4,0,true,0,hami-core:"
REGISTER = "hami.io/node-mlu-register"
HANDSHAKE = "hami.io/node-handshake-mlu"


class Gate:
    """Open until ``hold()``; then a call through ``wait()`` blocks (and says so) until ``release()``."""

    def __init__(self) -> None:
        self._open = threading.Event()
        self._open.set()
        self.stuck = threading.Event()

    def hold(self) -> None:
        self._open.clear()

    def release(self) -> None:
        self._open.set()

    def wait(self) -> None:
        if not self._open.is_set():
            self.stuck.set()
            self._open.wait(120)


class Stalled:
    """Passes every call through; a Lease update waits at ``renewal`` (the elector's thread stuck, as on a
    loaded machine), an annotation patch at ``patches``."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.renewal = Gate()
        self.patches = Gate()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def update_lease(self, lease: Any) -> Any:
        self.renewal.wait()
        return self._inner.update_lease(lease)

    def patch_node_annotations(self, name: str, changes: Any, **kw: Any) -> Any:
        self.patches.wait()
        return self._inner.patch_node_annotations(name, changes, **kw)


def _renewal_late(world: World, replica: Scheduler, cluster: Stalled) -> None:
    """Hold the replica's next renewal until past its renew deadline: its term stays, its writes stop."""
    cluster.renewal.hold()
    world.clock.advance(replica.config.retry_period)  # the elector's next renewal starts, and hangs
    wait_for("the elector stuck in its renewal", cluster.renewal.stuck.is_set)
    world.clock.advance(replica.config.renew_deadline)
    wait_for("the replica to stop writing", lambda: not replica.elector.is_leader())


def _renewal_lands(world: World, replica: Scheduler, cluster: Stalled, term: int) -> None:
    cluster.renewal.release()
    world.run_until("leading again", replica.elector.is_leader)
    world.advance(2 * replica.config.retry_period)
    assert replica.elector.term == term  # the same term: no full pass decided the nodes again


def _report(world: World, nodes: list[str]) -> str:
    reported = f"Reported_{world.clock.now():%Y.%m.%d %H:%M:%S}"
    for node in nodes:
        world.admin.patch_node_annotations(node, {HANDSHAKE: reported})
    return reported


def _unanswered(world: World, nodes: list[str]) -> dict[str, str]:
    shown = {n: world.annotations(n)[HANDSHAKE] for n in nodes}
    return {n: v for n, v in shown.items() if not v.startswith("Requesting_")}


def _stamped_replica(world: World, **overrides: Any) -> tuple[list[str], Scheduler, Stalled]:
    nodes = [world.node(f"late{i}", {REGISTER: MLU}, {"cambricon.com/mlu": "1"}) for i in range(6)]
    cluster = Stalled(world.cluster())
    replica = world.scheduler("mlu", cluster=cluster, **overrides)
    world.run_until("a leader", replica.ready)
    world.settle()
    assert not _unanswered(world, nodes)
    return nodes, replica, cluster


def test_writes_decided_while_a_renewal_is_late_are_sent_when_it_lands(world: World) -> None:
    nodes, replica, cluster = _stamped_replica(world)
    term = replica.elector.term
    _renewal_late(world, replica, cluster)
    reported = _report(world, nodes)
    wait_for(
        "the reports decided on",
        lambda: world.admin.writes.caught_up(replica) and replica.queue.idle() and replica.writer.idle(),
    )
    assert all(world.annotations(n)[HANDSHAKE] == reported for n in nodes)  # nothing sent meanwhile
    # While the renewal stays late, the unsent nodes wait: no node is decided again every retry period
    evaluated = replica.metrics.totals()["evaluations"]
    world.clock.advance(replica.config.retry_period)
    wait_for("the worker idle", lambda: replica.queue.idle() and replica.writer.idle())
    assert replica.metrics.totals()["evaluations"] - evaluated < len(nodes)
    _renewal_lands(world, replica, cluster, term)
    assert not _unanswered(world, nodes), "reports never answered after the late renewal"


def test_writes_dropped_by_the_writer_while_a_renewal_is_late_are_sent_again(memory_world: World) -> None:
    world = memory_world
    nodes, replica, cluster = _stamped_replica(world, max_in_flight=1)
    term = replica.elector.term
    cluster.patches.hold()  # one patch in flight, the other nodes' stamps queued behind it
    _report(world, nodes)
    wait_for("a patch in flight", cluster.patches.stuck.is_set)
    wait_for("the reports decided on", lambda: world.admin.writes.caught_up(replica) and replica.queue.idle())
    _renewal_late(world, replica, cluster)
    cluster.patches.release()  # the queued stamps meet a replica that may not write
    wait_for("the writer done", replica.writer.idle)
    assert replica.metrics.totals()["dropped_not_leader"] == len(nodes) - 1
    _renewal_lands(world, replica, cluster, term)
    assert not _unanswered(world, nodes), "dropped stamps never sent again after the late renewal"


def test_a_cleanup_decided_while_a_renewal_is_late_is_made_and_said_once_it_lands(world: World) -> None:
    """The cleanup is not sent while the replica may not write; the delete decided again after the
    renewal carries the cleanup's Event (docs/architecture.md, "Conditional deletes")."""
    node = world.node("late-dead", {REGISTER: MLU})  # no allocatable count: the handshake alone judges
    cluster = Stalled(world.cluster())
    replica = world.scheduler("mlu", cluster=cluster)
    world.run_until("stamped", lambda: world.annotations(node).get(HANDSHAKE, "").startswith("Requesting_"))
    world.settle()
    stamp = world.annotations(node)[HANDSHAKE]
    zone = world.clock.now().tzinfo
    assert zone is not None
    stamped_at = classify(stamp, tz=zone).time
    assert stamped_at is not None
    # 4 s before the stamp expires; the late renewal below moves the clock 12 s, past both deadlines
    world.advance((stamped_at - world.clock.now()).total_seconds() + replica.config.handshake_window - 4)
    assert replica.cache.vendor(node, "MLU") is not None and world.annotations(node)[HANDSHAKE] == stamp
    term = replica.elector.term
    _renewal_late(world, replica, cluster)
    wait_for("the cleanup decided", lambda: replica.cache.vendor(node, "MLU") is None)
    wait_for("the worker idle", lambda: replica.queue.idle() and replica.writer.idle())
    assert world.annotations(node)[HANDSHAKE] == stamp  # not sent: the replica may not write
    _renewal_lands(world, replica, cluster, term)
    world.run_until("the stamp deleted", lambda: HANDSHAKE not in world.annotations(node))
    world.run_until("the cleanup said", lambda: CLEANED_UP in [e["reason"] for e in world.events_about(node)])
    world.settle()
    assert [e["reason"] for e in world.events_about(node)].count(CLEANED_UP) == 1
