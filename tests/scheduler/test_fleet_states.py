"""The fleet in one vocabulary: the state gauge counts every state a vendor is kept in, ``/cache?state=``
lists the nodes in it (in the cache or not), and a node first seen waiting for a sign of life says so
once. In memory and on the real API server."""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from datetime import timedelta
from typing import Any

import pytest
from harness.scheduler_world import WINDOW, World

from hami_core.protocol.handshake import format_stamp
from hami_core.scheduler.config import COMPONENT
from hami_core.scheduler.daemon import Scheduler

DCU_REG = "hami.io/node-dcu-register"
DCU_HS = "hami.io/node-handshake-dcu"
DCU = "DCU-1,4,16384,100,DCU-Z100,0,true,0,hami:"


def get(replica: Scheduler, path: str) -> tuple[int, Any]:
    address = replica.http_address
    assert address is not None
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{address[1]}{path}", timeout=5) as response:
            assert response.headers["Server"] == COMPONENT  # its own name, never HAMi's hami-scheduler
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def gauge(replica: Scheduler, vendor: str, state: str) -> float:
    wanted = f'hami_scheduler_nodes{{state="{state}",vendor="{vendor}"}}'
    (line,) = [x for x in replica.metrics_text().splitlines() if x.startswith(wanted)]
    return float(line.split()[-1])


def test_every_state_is_counted_listed_and_a_dead_node_is_said_once(
    world: World, caplog: pytest.LogCaptureFixture
) -> None:
    live = world.node("fleet-live", {DCU_REG: DCU})
    expired = format_stamp(world.clock.now() - timedelta(seconds=WINDOW * 2))
    dead = world.node("fleet-dead", {DCU_REG: DCU, DCU_HS: expired})  # dead before it ever registered
    bad = world.node("fleet-bad", {DCU_REG: "not,a,dcu"})
    with caplog.at_level(logging.INFO, logger="hami_core.scheduler.daemon"):
        replica = world.scheduler("dcu", identity="fleet-0")
        world.run_until("ready", replica.ready)
        world.advance(WINDOW / 2)
    said = [r for r in caplog.records if r.getMessage().startswith("first seen awaiting-sign-of-life")]
    assert [(r.node, r.vendor) for r in said] == [(dead, "DCU")]  # type: ignore[attr-defined]
    assert gauge(replica, "DCU", "registered") == 1
    assert gauge(replica, "DCU", "awaiting-sign-of-life") == 1
    assert gauge(replica, "DCU", "degraded") == 1
    assert gauge(replica, "DCU", "no-devices") == gauge(replica, "DCU", "not-present") == 0

    status, body = get(replica, "/cache?state=awaiting-sign-of-life")
    assert status == 200 and body["states"] == ["awaiting-sign-of-life"]
    assert list(body["nodes"]) == [dead]
    assert body["nodes"][dead]["DCU"] == {
        "vendor": "DCU",
        "state": "awaiting-sign-of-life",
        "reason": "awaiting-sign-of-life",
        "error": None,
        "updated_at": None,
        "devices": [],
    }
    status, body = get(replica, "/cache?state=registered&state=awaiting-sign-of-life")
    assert sorted(body["nodes"]) == sorted([live, dead])
    assert (
        body["nodes"][live]["DCU"]["state"] == "registered"
        and len(body["nodes"][live]["DCU"]["devices"]) == 1
    )
    assert set(get(replica, "/cache")[1]["nodes"]) == {live, bad}  # the device cache alone, as before
    status, body = get(replica, "/cache?state=sleeping")
    assert status == 400 and body["error"].startswith(
        "state: 'sleeping' is not a vendor state (one of registered,"
    )
    status, body = get(replica, "/cache?state=degraded")
    assert list(body["nodes"]) == [bad] and "error" in body["nodes"][bad]["DCU"]

    world.admin.delete_node(dead)  # gone: counted no more
    world.run_until("forgotten", lambda: gauge(replica, "DCU", "awaiting-sign-of-life") == 0)
