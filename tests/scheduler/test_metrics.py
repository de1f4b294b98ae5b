"""The scheduler's /metrics, read over HTTP and parsed with prometheus_client's own parser, on a scheduler
running against the in-memory cluster and the real kube-apiserver alike (on the world's fake clock)."""

from __future__ import annotations

import urllib.request
from typing import Any

from harness.admin import MemoryCluster
from harness.scheduler_world import CountingCluster, World
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

from hami_core.scheduler.metrics import API_CALLS, EVENT_DROP_CAUSES, PATCH_RESULTS
from hami_core.scheduler.registrar import EVENT_REASONS

DCU = "DCU-1,4,16384,100,DCU-Z100,0,true,0,hami:DCU-2,4,16384,100,DCU-Z100,1,true,1,hami:"
NVIDIA = (
    '[{"id":"GPU-0","count":10,"devmem":24576,"devcore":100,"type":"NVIDIA-A10",'
    '"mode":"hami-core","health":true}]'
)
VENDORS = ("DCU", "MLU", "NVIDIA")

Key = tuple[str, tuple[tuple[str, str], ...]]


def scrape(replica: Any) -> tuple[dict[str, Any], dict[Key, float]]:
    """The replica's /metrics over HTTP: the families by name, and every sample by (name, labels)."""
    _, port = replica.http_address
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
        assert response.status == 200
        text = response.read().decode()
    families = {f.name: f for f in text_string_to_metric_families(text)}
    values = {
        (s.name, tuple(sorted(s.labels.items()))): s.value for f in families.values() for s in f.samples
    }
    return families, values


def one(values: dict[Key, float], name: str, **labels: str) -> float:
    return values[(name, tuple(sorted(labels.items())))]


def hami_samples(families: dict[str, Any]) -> list[Sample]:
    return [s for name, f in families.items() if name.startswith("hami_") for s in f.samples]


def test_every_series_exists_from_the_start_with_help_and_type(world: World) -> None:
    replica = world.scheduler("dcu", "mlu", "nvidia")
    families, values = scrape(replica)  # at once: before the first list, before leading
    for name, family in families.items():
        if name.startswith("hami_"):
            assert family.documentation and family.type in ("counter", "gauge", "histogram", "info"), name
    for vendor in VENDORS:
        for counter in ("decode_errors", "liveness_rule_errors", "cleanups", "stamps", "handshake_deletes"):
            assert one(values, f"hami_scheduler_{counter}_total", vendor=vendor) == 0
        assert one(values, "hami_scheduler_nodes", vendor=vendor, state="registered") == 0
        assert one(values, "hami_scheduler_nodes", vendor=vendor, state="degraded") == 0
        assert one(values, "hami_scheduler_devices", vendor=vendor) == 0
    for verb, resource in API_CALLS.values():
        for result in PATCH_RESULTS:
            assert (
                "hami_scheduler_api_requests_total",
                (("resource", resource), ("result", result), ("verb", verb)),
            ) in values
        assert (
            "hami_scheduler_api_request_duration_seconds_count",
            (("resource", resource), ("verb", verb)),
        ) in values
    for reason in EVENT_REASONS:
        assert one(values, "hami_scheduler_events_posted_total", reason=reason) == 0
        for cause in EVENT_DROP_CAUSES:
            assert one(values, "hami_scheduler_events_dropped_total", reason=reason, cause=cause) == 0
    for name in (
        "hami_scheduler_evaluations_total",
        "hami_scheduler_dropped_not_leader_total",
        "hami_scheduler_leadership_changes_total",
        "hami_scheduler_last_full_pass_timestamp_seconds",
        "hami_scheduler_work_queue_depth",
        "hami_scheduler_work_queue_delayed",
        "hami_scheduler_leader",
        "hami_scheduler_ready",
        "hami_scheduler_cache_synced",
        "hami_scheduler_term",
        "hami_scheduler_nodes_watched",
    ):
        assert (name, ()) in values, name
    (build,) = [k for k in values if k[0] == "hami_build_info"]
    assert dict(build[1])["component"] == "scheduler"
    assert ("process_cpu_seconds_total", ()) in values and "python_info" in families
    # Nothing about a particular node: no node label.
    assert not [s for s in hami_samples(families) if "node" in s.labels]


def test_the_metrics_follow_the_cluster(world: World) -> None:
    good = world.node("m-dcu", {"hami.io/node-dcu-register": DCU}, {"hygon.com/dcunum": "8"})
    bad = world.node("m-mlu", {"hami.io/node-mlu-register": "MLU-1,10"})
    gpu = world.node("m-gpu", {"hami.io/node-nvidia-register": NVIDIA}, {"nvidia.com/gpu": "10"})
    leader = world.scheduler("dcu", "mlu", "nvidia", identity="m-leader")
    world.run_until("ready", leader.ready)
    synced_at = world.clock.now().timestamp()
    follower = world.scheduler("dcu", "mlu", "nvidia", identity="m-follower")
    world.run_until("follower warm", lambda: follower.cache.vendor(good, "DCU") is not None)
    world.advance(1)

    _, values = scrape(leader)
    assert one(values, "hami_scheduler_nodes", vendor="DCU", state="registered") == 1
    assert one(values, "hami_scheduler_nodes", vendor="MLU", state="degraded") == 1
    assert one(values, "hami_scheduler_nodes", vendor="NVIDIA", state="registered") == 1
    assert one(values, "hami_scheduler_devices", vendor="DCU") == 2
    assert one(values, "hami_scheduler_devices", vendor="NVIDIA") == 1
    assert one(values, "hami_scheduler_decode_errors_total", vendor="MLU") == 1
    assert one(values, "hami_scheduler_decode_errors_total", vendor="DCU") == 0
    # One stamp per vendor on its node; MLU's degraded node carries a register value, so it is stamped too.
    for vendor in VENDORS:
        assert one(values, "hami_scheduler_stamps_total", vendor=vendor) == 1
    patches = CountingCluster.of(leader).calls["patch_node_annotations"]
    assert patches == 3
    assert one(values, "hami_scheduler_api_requests_total", verb="patch", resource="nodes", result="2xx") == 3
    latency = "hami_scheduler_api_request_duration_seconds_count"
    assert one(values, latency, verb="patch", resource="nodes") == 3
    assert one(values, "hami_scheduler_api_requests_total", verb="list", resource="nodes", result="2xx") >= 1
    assert one(values, "hami_scheduler_leader") == 1 and one(values, "hami_scheduler_ready") == 1
    assert one(values, "hami_scheduler_cache_synced") == 1 and one(values, "hami_scheduler_term") == 1
    assert one(values, "hami_scheduler_leadership_changes_total") == 1
    assert one(values, "hami_scheduler_last_full_pass_timestamp_seconds") == synced_at
    assert one(values, "hami_scheduler_work_queue_depth") == 0
    assert one(values, "hami_scheduler_nodes_watched") == len(leader.reflector.names()) >= 3

    _, standby = scrape(follower)
    assert one(standby, "hami_scheduler_leader") == 0 and one(standby, "hami_scheduler_ready") == 0
    assert one(standby, "hami_scheduler_cache_synced") == 1  # a warm standby
    assert one(standby, "hami_scheduler_decode_errors_total", vendor="MLU") == 1  # it sees the same
    assert one(standby, "hami_scheduler_stamps_total", vendor="DCU") == 0  # and writes nothing
    assert one(standby, "hami_scheduler_leadership_changes_total") == 0

    # NVIDIA's plugin dies: its count drops to 0, it is cleaned up and its stamp deleted.
    world.admin.patch_node_status(gpu, {"nvidia.com/gpu": "0"})
    world.run_until("cleanup", lambda: leader.cache.vendor(gpu, "NVIDIA") is None)
    world.run_until(
        "the Event",
        lambda: one(scrape(leader)[1], "hami_scheduler_events_posted_total", reason="HamiVendorCleanedUp"),
    )
    families, values = scrape(leader)
    assert one(values, "hami_scheduler_cleanups_total", vendor="NVIDIA") == 1
    assert one(values, "hami_scheduler_handshake_deletes_total", vendor="NVIDIA") == 1
    assert one(values, "hami_scheduler_nodes", vendor="NVIDIA", state="registered") == 0
    assert one(values, "hami_scheduler_devices", vendor="NVIDIA") == 0
    assert one(values, "hami_scheduler_events_posted_total", reason="HamiVendorCleanedUp") == 1
    assert one(values, "hami_scheduler_events_posted_total", reason="HamiRegisterAnnotationInvalid") == 1
    events = one(values, "hami_scheduler_api_requests_total", verb="create", resource="events", result="2xx")
    assert events == 2
    names = (good, bad, gpu)
    assert not [s for s in hami_samples(families) if any(n in v for v in s.labels.values() for n in names)]

    # The leader goes: the follower takes over, and says so.
    world.stop(leader)
    world.run_until("takeover", follower.ready)
    _, values = scrape(follower)
    assert one(values, "hami_scheduler_leader") == 1 and one(values, "hami_scheduler_term") == 1
    assert one(values, "hami_scheduler_leadership_changes_total") == 1
    assert one(values, "hami_scheduler_last_full_pass_timestamp_seconds") > synced_at


def test_patch_results_by_status_class(memory_world: World) -> None:
    world = memory_world
    memory: MemoryCluster = world.admin  # type: ignore[assignment]
    node = world.node("classes", {"hami.io/node-dcu-register": DCU}, {"hygon.com/dcunum": "4"})
    replica = world.scheduler("dcu", start=False)
    memory.fail_next(2, verb="patch")  # 503 twice, then the stamp lands
    world.start(replica)
    world.run_until("stamped", lambda: "hami.io/node-handshake-dcu" in world.annotations(node), step=0.25)
    world.settle()
    _, values = scrape(replica)
    results = {
        r: one(values, "hami_scheduler_api_requests_total", verb="patch", resource="nodes", result=r)
        for r in PATCH_RESULTS
    }
    assert results == {"2xx": 1, "4xx": 0, "5xx": 2, "error": 0}
    assert replica.metrics.patch_requests() == results
