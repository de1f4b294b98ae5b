"""What an operator sees: the HTTP view, readiness per term, log lines; and expiries acted on when due."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest
from harness.scheduler_world import World
from prometheus_client.parser import text_string_to_metric_families

DCU = "DCU-1,4,16384,100,DCU-Z100,0,true,0,hami:"


def get(replica: Any, path: str) -> tuple[int, bytes]:
    _, port = replica.http_address
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


def samples(text: bytes) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a /metrics text by (name, sorted labels), through prometheus_client's parser."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text.decode())
        for s in family.samples
    }


def test_http_view_of_leader_and_follower(memory_world: World, caplog: pytest.LogCaptureFixture) -> None:
    world = memory_world
    caplog.set_level("INFO", logger="hami_core")
    node = world.node(
        "view",
        {"hami.io/node-dcu-register": DCU, "hami.io/node-mlu-register": "MLU-1,10:"},
        {"hygon.com/dcunum": "4"},
    )
    leader = world.scheduler("dcu", "mlu", identity="leader")
    world.run_until("ready", leader.ready)
    follower = world.scheduler("dcu", "mlu", identity="follower")
    world.run_until("follower warm", lambda: follower.cache.vendor(node, "DCU") is not None)

    assert get(leader, "/livez")[0] == 200 and get(leader, "/healthz")[0] == 200
    assert get(leader, "/readyz")[0] == 200
    assert get(follower, "/readyz")[0] == 503 and get(follower, "/livez")[0] == 200
    status = json.loads(get(leader, "/status")[1])
    assert status["leader"] is True and status["term"] == 1 and status["synced_term"] == 1
    assert status["identity"] == "leader" and status["holder"] == "leader"
    follower_status = json.loads(get(follower, "/status")[1])
    assert follower_status["leader"] is False and follower_status["holder"] == "leader"

    cache = json.loads(get(leader, "/cache")[1])["nodes"]
    dcu = cache[node]["DCU"]
    assert dcu["state"] == "registered" and dcu["reason"] == "registered"
    assert dcu["devices"][0]["id"] == "DCU-1" and dcu["devices"][0]["devicevendor"] == "DCU"
    mlu = cache[node]["MLU"]
    assert mlu["state"] == "degraded" and "segment 1" in mlu["error"] and mlu["devices"] == []
    code, body = get(leader, f"/cache/{node}")
    assert code == 200 and json.loads(body)["vendors"]["DCU"]["state"] == "registered"
    assert get(leader, "/cache/no-such-node")[0] == 404
    assert get(leader, "/nope")[0] == 404
    metrics = samples(get(leader, "/metrics")[1])
    assert metrics[("hami_scheduler_leader", ())] == 1 and metrics[("hami_scheduler_ready", ())] == 1
    assert metrics[("hami_scheduler_decode_errors_total", (("vendor", "MLU"),))] == 1
    assert metrics[("hami_scheduler_decode_errors_total", (("vendor", "DCU"),))] == 0
    assert samples(get(follower, "/metrics")[1])[("hami_scheduler_leader", ())] == 0

    became = [r for r in caplog.records if "became leader" in r.getMessage()]
    assert [getattr(r, "term", None) for r in became] == [1]
    assert any(
        r.getMessage() == "cache synced for term 1" and getattr(r, "term", None) == 1 for r in caplog.records
    )
    # Losing the lease is logged and ends readiness at once; the next term syncs anew.
    world.stop(leader)
    world.run_until("follower takes over", follower.ready)
    assert json.loads(get(follower, "/status")[1])["synced_term"] == 1  # its own first term


def test_an_expiry_is_acted_on_when_due_not_at_the_next_resync(memory_world: World) -> None:
    world = memory_world
    node = world.node("due", {"hami.io/node-dcu-register": DCU})  # no allocatable: dies at expiry
    replica = world.scheduler("dcu", resync=300.0, handshake_window=2.0)
    world.run_until("registered", lambda: replica.cache.vendor(node, "DCU") is not None)
    registered_at = world.clock.monotonic()
    world.run_until("cleaned up", lambda: replica.cache.vendor(node, "DCU") is None, step=0.1)
    # The fake clock starts on a whole second, so the stamp expires exactly 2 s after registration;
    # resync is 300 s.
    assert world.clock.monotonic() - registered_at <= 2.0 + 0.1 + 1e-9
