"""``/cache/<node>`` on a running scheduler, in memory and on the real API server: every Node it watches
answers with each vendor's state, why, and the write a leader would send now; 404 only for a Node it does
not watch."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid
from datetime import timedelta
from typing import Any
from urllib.parse import quote

from harness.scheduler_world import World

from hami_core.kube.port import Lease
from hami_core.protocol.handshake import format_report, format_stamp
from hami_core.scheduler.config import DEFAULT_LEASE_NAME
from hami_core.scheduler.daemon import Scheduler

DCU_VALUE = "DCU-1,4,16384,100,DCU-Z100,0,true,0,hami:"
DCU_REG, DCU_HS = "hami.io/node-dcu-register", "hami.io/node-handshake-dcu"
MLU_REG = "hami.io/node-mlu-register"


def get(replica: Scheduler, path: str) -> tuple[int, Any]:
    address = replica.http_address
    assert address is not None
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{address[1]}{path}", timeout=5) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def view(replica: Scheduler, node: str) -> dict[str, Any]:
    code, body = get(replica, f"/cache/{quote(node)}")
    assert code == 200, body
    assert isinstance(body, dict) and body["node"] == node
    return body


def test_every_watched_node_answers_with_each_vendors_state(world: World) -> None:
    cpu = world.node("cpu")
    registered = world.node("reg", {DCU_REG: DCU_VALUE}, {"hygon.com/dcunum": "4"})
    degraded = world.node("bad", {MLU_REG: "MLU-1,10:"})
    dead = world.node("dead", {DCU_REG: DCU_VALUE})  # no allocatable: cleaned up once its stamp expires
    outside = f"outside-{uuid.uuid4().hex[:8]}"
    world.admin.create_node(outside, labels={"hami-test": "elsewhere"}, annotations={DCU_REG: DCU_VALUE})
    replica = world.scheduler("dcu", "mlu", identity="leader")
    world.run_until("ready", replica.ready)

    code, body = get(replica, f"/cache/no-such-node-{uuid.uuid4().hex[:8]}")
    assert code == 404 and "watches no Node" in body["error"]

    body = view(replica, cpu)
    assert body["selected"] is True and body["leader"] is True and body["this_replica_writes"] is True
    for vendor in ("DCU", "MLU"):
        shown = body["vendors"][vendor]
        assert (shown["state"], shown["next"]["write"]) == ("not-present", "nothing")
        assert shown["in_cache"] is False

    shown = view(replica, registered)["vendors"]["DCU"]
    assert (shown["state"], shown["in_cache"], shown["register"]["devices"]) == ("registered", True, 1)
    assert shown["devices"][0]["id"] == "DCU-1" and shown["handshake"]["kind"] == "stamp"
    assert shown["next"]["write"] == "nothing"  # stamped already: the view shows the stamp
    assert view(replica, registered)["vendors"]["MLU"]["state"] == "not-present"

    shown = view(replica, degraded)["vendors"]["MLU"]
    assert shown["state"] == "degraded" and "segment 1" in shown["error"]
    assert shown["register"]["decodes"] is False and shown["register"]["error"] == shown["error"]

    body = view(replica, outside)
    assert body["selected"] is False
    shown = body["vendors"]["DCU"]
    assert (shown["state"], shown["next"]["write"], shown["in_cache"]) == ("not-selected", "nothing", False)
    assert "does not match the node selector hami-test=" in shown["next"]["why"]

    world.run_until("dead node cleaned up", lambda: replica.cache.vendor(dead, "DCU") is None)
    world.settle()
    shown = view(replica, dead)["vendors"]["DCU"]
    assert (shown["state"], shown["reason"], shown["next"]["write"]) == (
        "awaiting-sign-of-life",
        "awaiting-sign-of-life",
        "nothing",
    )
    assert shown["handshake"]["kind"] == "absent" and shown["in_cache"] is False
    assert "comes back when the plugin reports" in shown["next"]["why"]

    # HAMi's scheduler stamps it again: the view calls that its flapping, and nothing is written
    hami_stamp = format_stamp(world.clock.now())
    world.admin.patch_node_annotations(dead, {DCU_HS: hami_stamp})
    world.advance(5)
    assert world.annotations(dead)[DCU_HS] == hami_stamp
    shown = view(replica, dead)["vendors"]["DCU"]
    assert shown["state"] == "awaiting-sign-of-life" and shown["next"]["write"] == "nothing"
    assert [n["code"] for n in shown["notes"]] == ["hami-flapping"]

    # the plugin reports: a sign of life, registered again
    world.admin.patch_node_annotations(dead, {DCU_HS: format_report(world.clock.now())})
    world.run_until("readmitted", lambda: replica.cache.vendor(dead, "DCU") is not None)
    world.settle()
    shown = view(replica, dead)["vendors"]["DCU"]
    assert (shown["state"], shown["in_cache"], shown["next"]["write"]) == ("registered", True, "nothing")


def test_a_replica_that_does_not_write_shows_the_write_a_leader_would_send(world: World) -> None:
    now = world.clock.now()
    world.admin.create_lease(
        Lease(
            name=DEFAULT_LEASE_NAME,
            namespace=world.namespace,
            holder_identity="other",
            lease_duration_seconds=3600,
            acquire_time=now,
            renew_time=now,
        )
    )
    node = world.node("new", {DCU_REG: DCU_VALUE})
    follower = world.scheduler("dcu", identity="follower")
    world.run_until("warm", lambda: follower.cache.vendor(node, "DCU") is not None)
    world.advance(3)
    assert DCU_HS not in world.annotations(node)  # a follower writes nothing

    body = view(follower, node)
    assert body["leader"] is False and body["this_replica_writes"] is False
    shown = body["vendors"]["DCU"]
    assert shown["state"] == "registered" and shown["next"]["write"] == "stamp"
    assert shown["next"]["annotation"] == DCU_HS and shown["next"]["value"] == format_stamp(world.clock.now())
    assert shown["next"]["why"].startswith(f"stamp {DCU_HS} now: ")

    # an expired stamp on a registered vendor: the cleanup a leader would send
    world.admin.patch_node_annotations(node, {DCU_HS: format_stamp(world.clock.now() - timedelta(minutes=5))})
    world.settle()
    shown = view(follower, node)["vendors"]["DCU"]
    assert (shown["state"], shown["next"]["write"]) == ("awaiting-sign-of-life", "delete")
    assert "DCU was cleaned up and the node still shows" in shown["next"]["why"]
    assert DCU_HS in world.annotations(node)  # still not sent
