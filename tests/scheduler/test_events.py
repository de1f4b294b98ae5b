"""Events on the Node, end to end, in memory and on the real API server: a Warning saying why a vendor was
cleaned up, Normal when it registers or comes back, only from the leader, and a flapping node bounded."""

from __future__ import annotations

import re
from typing import Any

from harness.scheduler_world import WINDOW, World

from hami_core.scheduler.metrics import total

DCU = "DCU-1,4,16384,100,DCU-Z100,0,true,0,hami:DCU-2,4,16384,100,DCU-Z100,1,true,1,hami:"
NVIDIA = (
    '[{"id":"GPU-0","count":10,"devmem":24576,"devcore":100,"type":"NVIDIA-A10",'
    '"mode":"hami-core","health":true}]'
)


def events(world: World, node: str) -> list[dict[str, Any]]:
    """Events about ``node``, oldest first (Events about Nodes live in ``default``)."""
    return world.events_about(node)


def reasons(world: World, node: str) -> list[str]:
    return [e["reason"] for e in events(world, node)]


def test_a_cleanup_warns_with_why_and_a_sign_of_life_is_a_normal_event(world: World) -> None:
    node = world.node("ev-dcu", {"hami.io/node-dcu-register": DCU}, {"hygon.com/dcunum": "8"})
    leader = world.scheduler("dcu", identity="ev-leader")
    world.run_until("ready", leader.ready)
    follower = world.scheduler("dcu", identity="ev-follower")
    world.run_until("follower warm", lambda: follower.cache.vendor(node, "DCU") is not None)
    world.advance(WINDOW / 2)
    assert events(world, node) == []  # registered before the scheduler started: no news

    # The plugin dies: kubelet's count drops to 0 and no report comes; the stamp expires (acted on within
    # the world's one-second step).
    world.admin.patch_node_status(node, {"hygon.com/dcunum": "0"})
    world.run_until("the cleanup Event", lambda: events(world, node))
    [cleanup] = events(world, node)
    assert (cleanup["type"], cleanup["reason"]) == ("Warning", "HamiVendorCleanedUp")
    assert re.fullmatch(
        r"DCU cleaned up by the 'handshake' liveness rule: "
        r"the scheduler's stamp is 1 min( 1 s)? old \(window 1 min\), allocatable hygon.com/dcunum is 0 "
        r"\(it was above 0\); its 2 devices left the device cache until the plugin reports in "
        r"hami.io/node-handshake-dcu, allocatable hygon.com/dcunum is above 0, or the register value changes",
        cleanup["message"],
    ), cleanup["message"]
    assert node not in cleanup["message"]  # the Event is about the node: the message does not name it

    # A plugin report brings it back.
    world.admin.patch_node_annotations(node, {"hami.io/node-handshake-dcu": "Reported_2026.11.29 10:00:00"})
    world.run_until("the readmission Event", lambda: len(events(world, node)) == 2)
    back = events(world, node)[1]
    assert (back["type"], back["reason"]) == ("Normal", "HamiVendorReadmitted")
    assert back["message"] == (
        "DCU is back after a sign of life (the plugin's report 'Reported_2026.11.29 10:00:00'): "
        "2 devices registered"
    )
    world.advance(WINDOW)
    assert reasons(world, node) == ["HamiVendorCleanedUp", "HamiVendorReadmitted"]
    assert {e["reportingInstance"] for e in events(world, node)} == {"ev-leader"}  # the follower posts none
    # (Whether the follower decided the cleanup too depends on which it saw first at that fake instant,
    # its own expiry timer or the leader's delete through the watch; both replicas' timers fire in the
    # same step, so the test does not count the follower's cleanups.)


def test_a_vendor_registering_on_a_known_node_is_a_normal_event(world: World) -> None:
    node = world.node("ev-new")  # a fresh node, no plugin yet
    replica = world.scheduler("dcu")
    world.run_until("ready", replica.ready)
    world.admin.patch_node_annotations(node, {"hami.io/node-dcu-register": DCU})
    world.run_until("the Event", lambda: events(world, node))
    [registered] = events(world, node)
    assert (registered["type"], registered["reason"]) == ("Normal", "HamiVendorRegistered")
    assert registered["message"] == "DCU registered 2 devices from hami.io/node-dcu-register"
    # An updated device list is no news; a value that does not decode is a Warning.
    world.admin.patch_node_annotations(node, {"hami.io/node-dcu-register": DCU.split(":")[0] + ":"})
    world.run_until("updated", lambda: len(getattr(replica.cache.vendor(node, "DCU"), "devices", [])) == 1)
    world.admin.patch_node_annotations(node, {"hami.io/node-dcu-register": "DCU-1,4"})
    world.run_until("the Warning", lambda: len(events(world, node)) == 2)
    warning = events(world, node)[1]
    assert (warning["type"], warning["reason"]) == ("Warning", "HamiRegisterAnnotationInvalid")
    assert warning["message"].startswith("annotation hami.io/node-dcu-register: ")  # the node not named


def test_a_flapping_node_cannot_flood_the_api_server(memory_world: World) -> None:
    world = memory_world
    node = world.node("flap", {"hami.io/node-nvidia-register": NVIDIA}, {"nvidia.com/gpu": "10"})
    replica = world.scheduler("nvidia")
    world.run_until("ready", replica.ready)
    # NVIDIA's rule: a count seen above 0 that drops to 0 cleans up at once; back above 0 readmits.
    for _ in range(15):
        world.admin.patch_node_status(node, {"nvidia.com/gpu": "0"})
        world.run_until("cleaned up", lambda: replica.cache.vendor(node, "NVIDIA") is None)
        world.admin.patch_node_status(node, {"nvidia.com/gpu": "10"})
        world.run_until("back", lambda: replica.cache.vendor(node, "NVIDIA") is not None)
    world.settle()
    assert replica.registrar.metrics.totals()["cleanups"] == 15
    # 30 Events decided: the node's burst of 25 is posted, the rest dropped and counted.
    assert len(events(world, node)) == 25
    assert total(replica.metrics.events_dropped, cause="rate_limited") == 5
    assert total(replica.metrics.events_posted) == 25
    # One more token five minutes on; every other node keeps its own burst.
    world.advance(300)
    world.admin.patch_node_status(node, {"nvidia.com/gpu": "0"})
    world.run_until("cleaned up", lambda: replica.cache.vendor(node, "NVIDIA") is None)
    world.admin.patch_node_status(node, {"nvidia.com/gpu": "10"})
    world.run_until("back", lambda: replica.cache.vendor(node, "NVIDIA") is not None)
    world.settle()
    assert reasons(world, node)[25:] == ["HamiVendorCleanedUp"]
    other = world.node("steady")
    world.settle()  # seen without a plugin first: its registration is news
    world.admin.patch_node_annotations(other, {"hami.io/node-nvidia-register": NVIDIA})
    world.run_until("the other node's Event", lambda: reasons(world, other) == ["HamiVendorRegistered"])
