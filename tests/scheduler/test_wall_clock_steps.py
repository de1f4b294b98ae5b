"""Wall-clock steps never clean (spec 5b): a step of the scheduler's wall clock, injected through its
``Clock`` (``WatchedClock.step_wall``: the wall time moves, the monotonic time does not), in memory and on
the real API server alike."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from harness.rbac import SCHEDULER_USER
from harness.scheduler_world import WINDOW, World

from hami_core.protocol.handshake import HandshakeKind, classify, format_report, format_stamp

MLU_REG = "hami.io/node-mlu-register"
MLU_VALUE = "MLU-45013011,10,23308,0,MLU-MLU370-X4,0,true,0,hami-core:"
MLU_VALUE_2 = MLU_VALUE + "MLU-45013012,10,23308,0,MLU-MLU370-X4,1,true,0,hami-core:"
MLU_HS = "hami.io/node-handshake-mlu"


def registered(replica: Any, node: str) -> bool:
    entry = replica.cache.vendor(node, "MLU")
    return entry is not None and entry.state == "registered"


def stamp_age(world: World, node: str) -> timedelta:
    """How old the node's stamp is by the scheduler's wall clock now."""
    now = world.clock.now()
    handshake = classify(world.annotations(node).get(MLU_HS), tz=now.tzinfo or None)  # type: ignore[arg-type]
    assert handshake.kind is HandshakeKind.STAMP and handshake.time is not None, handshake
    return now - handshake.time


def test_a_wall_clock_step_forward_of_an_hour_cleans_no_live_vendor(world: World) -> None:
    live = world.node("live", {MLU_REG: MLU_VALUE})  # a live plugin: it reports every 30 s (below)
    hamis = world.node(
        "hamis", {MLU_REG: MLU_VALUE, MLU_HS: format_stamp(world.clock.now())}
    )  # a fresh stamp
    replica = world.scheduler("mlu")
    world.run_until("registered", lambda: registered(replica, live) and registered(replica, hamis))
    world.run_until("stamped", lambda: world.annotations(live).get(MLU_HS, "").startswith("Requesting_"))
    world.advance(10)
    world.clock.step_wall(3600)  # NTP steps the clock an hour forward: every stamp looks an hour old
    # the plugin rewrites its register value: the node is decided again on stamps that look an hour old
    world.admin.patch_node_annotations(live, {MLU_REG: MLU_VALUE_2})
    world.advance(2)
    assert registered(replica, live) and registered(replica, hamis)
    totals = replica.metrics.totals()
    assert totals["cleanups"] == 0 and totals["wall_clock_steps"] == 1
    assert totals["clock_step_restamps"] == 2  # ours on `live`, HAMi's on `hamis`: each written again once
    # the wire says the truth again, in the new wall time (HAMi and the other replicas read it)
    assert stamp_age(world, live) < timedelta(seconds=5) and stamp_age(world, hamis) < timedelta(seconds=5)
    # Two windows on: the live plugin keeps reporting and stays; `hamis` has no plugin behind it and is
    # cleaned up, a window after its re-stamp by the monotonic clock, not before.
    restamped_at = world.clock.monotonic()
    for _ in range(4):
        world.advance(30)
        world.admin.patch_node_annotations(
            live, {MLU_REG: MLU_VALUE_2, MLU_HS: format_report(world.clock.now())}
        )
        if not registered(replica, hamis):
            assert world.clock.monotonic() - restamped_at >= WINDOW
    world.settle()
    assert registered(replica, live) and not registered(replica, hamis)
    assert replica.metrics.totals()["cleanups"] == 1 and replica.metrics.totals()["wall_clock_steps"] == 1
    if world.kind == "apiserver":
        from harness.audit import deleted_values

        events = world.server.audit_events(resource="nodes")
        removed = deleted_values(events, live, user=SCHEDULER_USER)
        assert removed == [], [(key, value) for _, key, value in removed]
        (cleanup,) = [key for _, key, _ in deleted_values(events, hamis, user=SCHEDULER_USER)]
        assert cleanup == MLU_HS


def test_a_step_back_re_stamps_and_keeps_the_vendor(memory_world: World) -> None:
    world = memory_world
    node = world.node("back", {MLU_REG: MLU_VALUE})
    replica = world.scheduler("mlu")
    world.run_until("registered", lambda: registered(replica, node))
    world.run_until("stamped", lambda: world.annotations(node).get(MLU_HS, "").startswith("Requesting_"))
    world.advance(20)
    world.clock.step_wall(-3600)  # our stamp now lies an hour in the future
    world.advance(16)  # nothing happens on the node: the resync (every 15 s) looks at the clocks too
    assert registered(replica, node) and replica.metrics.totals()["clock_step_restamps"] == 1
    assert timedelta(0) <= stamp_age(world, node) < timedelta(seconds=16)  # in the new wall time
    # no plugin reports: the vendor is cleaned up a window after the re-stamp, on the monotonic clock
    world.run_until("cleaned up", lambda: not registered(replica, node), limit=2 * WINDOW)
    assert replica.metrics.totals()["cleanups"] == 1
