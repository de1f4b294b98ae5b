"""The reporter against the in-memory cluster and the real API server (as the node's own identity, whose
RBAC and admission policy allow a GET and a PATCH of its own Node's protocol annotations only)."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from harness.admin import MemoryCluster
from harness.clock import WatchedClock
from harness.poll import wait_for
from harness.scheduler_world import CountingCluster, World

from hami_core import DeviceInfo
from hami_core.clock import SYSTEM, Clock
from hami_core.kube.client import KubeCluster
from hami_core.plugins.driver import VendorDriver
from hami_core.plugins.manager import load_drivers
from hami_core.protocol.codecs import decode_any
from hami_core.reporter.daemon import Reporter, ReporterConfig
from hami_core.reporter.plan import register_value

GPU = [DeviceInfo(id="GPU-0", count=10, devmem=24576, devcore=100, type="NVIDIA-A10", health=True)]
MLU = [DeviceInfo(id="MLU-0", count=10, devmem=23308, type="MLU-370", health=True)]
DCU = [DeviceInfo(id="DCU-0", count=4, devmem=16384, devcore=100, type="DCU-Z100", health=True)]
XPU = [DeviceInfo(id="XPU-0", count=4, devmem=98304, devcore=100, type="P800", health=True)]
FOUND = {"nvidia": GPU, "mlu": MLU, "dcu": DCU, "kunlun": XPU}


class Source:
    """The drivers' discovery hook, faked: a device list, ``None`` (no source) or an exception per driver."""

    def __init__(self, found: Mapping[str, Sequence[DeviceInfo] | Exception | None]) -> None:
        self.found = dict(found)

    def __call__(self, driver: VendorDriver, node: str) -> list[DeviceInfo] | None:
        result = self.found.get(driver.name)
        if isinstance(result, Exception):
            raise result
        return None if result is None else list(result)


def own_cluster(world: World, node: str) -> CountingCluster:
    """The cluster as ``node``'s reporter reaches it, counting its requests."""
    if world.kind == "memory":
        return CountingCluster(world.admin)
    server = world.server
    return CountingCluster(
        KubeCluster.from_kubeconfig(
            server.kubeconfig(server.reporter(node)), request_timeout=5.0, connect_timeout=2.0
        )
    )


def reporter(
    world: World, node: str, source: Source, *names: str, clock: Clock = SYSTEM, **timings: float
) -> Reporter:
    drivers = [world.drivers[n] for n in (names or sorted(FOUND))]
    return Reporter(
        own_cluster(world, node), drivers, source, ReporterConfig(node_name=node, **timings), clock=clock
    )


def calls(daemon: Reporter) -> Counter[str]:
    """The requests ``daemon`` made, counted by the cluster ``reporter`` gave it."""
    cluster = daemon._cluster
    assert isinstance(cluster, CountingCluster), type(cluster)
    return cluster.calls


def passes_total(daemon: Reporter) -> float | None:
    return daemon.metrics.registry.get_sample_value("hami_reporter_passes_total")


def settle(clock: WatchedClock, daemon: Reporter, passes: int) -> None:
    """Wait (real time, bounded) until the loop has run ``passes`` passes and waits on the clock again."""
    wait_for(f"{passes} passes", lambda: (passes_total(daemon) or 0) >= passes, timeout=30)
    assert clock.wait_for_waiting(1, timeout=30)


def test_a_pass_publishes_every_vendor_with_one_get_and_one_patch(world: World) -> None:
    node = world.node("rep")
    daemon = reporter(world, node, Source(FOUND))
    result = daemon.run_once()
    assert result.ok and result.sent
    annotations = world.annotations(node)
    for name, devices in FOUND.items():
        driver = world.drivers[name]
        assert driver.register_annotation is not None
        assert annotations[driver.register_annotation] == register_value(driver, devices)
        assert decode_any(annotations[driver.register_annotation]) == devices
        heartbeat = annotations.get(driver.handshake_annotation or "")
        assert (heartbeat or "").startswith("Reported_") == driver.writes_reported
    assert calls(daemon) == {"get_node": 1, "patch_node_annotations": 1}


def test_later_passes_send_only_heartbeats_and_nothing_for_nvidia_alone(world: World) -> None:
    node = world.node("rep")
    everything = reporter(world, node, Source(FOUND))
    everything.run_once()
    second = everything.run_once()
    assert second.plan is not None and second.plan.published == ()
    assert set(second.plan.patch) == {
        "hami.io/node-handshake-mlu",
        "hami.io/node-handshake-dcu",
        "hami.io/node-handshake-xpu",
    }
    nvidia = reporter(world, node, Source(FOUND), "nvidia")
    quiet = nvidia.run_once()
    assert quiet.ok and not quiet.sent
    assert calls(nvidia) == {"get_node": 1}


def test_a_register_annotation_deleted_by_hand_is_repaired(world: World) -> None:
    node = world.node("rep")
    daemon = reporter(world, node, Source(FOUND), "nvidia", "mlu")
    daemon.run_once()
    world.admin.patch_node_annotations(
        node, {"hami.io/node-nvidia-register": None, "hami.io/node-mlu-register": "MLU-0,10,1,0,x,0,true:"}
    )
    repaired = daemon.run_once()
    assert repaired.plan is not None and repaired.plan.published == ("nvidia", "mlu")
    annotations = world.annotations(node)
    assert decode_any(annotations["hami.io/node-nvidia-register"]) == GPU
    assert decode_any(annotations["hami.io/node-mlu-register"]) == MLU


def test_a_failed_probe_leaves_that_driver_out_and_the_pass_failed(world: World) -> None:
    node = world.node("rep")
    daemon = reporter(world, node, Source({**FOUND, "dcu": OSError("no DCU driver loaded")}))
    result = daemon.run_once()
    assert not result.ok and result.sent
    assert result.problems == ("dcu: device probe failed: OSError: no DCU driver loaded",)
    annotations = world.annotations(node)
    assert "hami.io/node-dcu-register" not in annotations and "hami.io/node-handshake-dcu" not in annotations
    assert "hami.io/node-mlu-register" in annotations


def test_a_missing_node_is_a_failed_pass_and_it_retries_sooner(world: World) -> None:
    name = f"rep-late-{world.label['hami-test']}"
    clock = WatchedClock()
    probed: list[float] = []
    source = Source(FOUND)

    def timed(driver: VendorDriver, node: str) -> list[DeviceInfo] | None:
        probed.append(clock.monotonic())
        return source(driver, node)

    daemon = Reporter(
        own_cluster(world, name),
        [world.drivers["mlu"]],
        timed,
        ReporterConfig(node_name=name, interval=60.0, retry_interval=5.0),
        clock=clock,
    )
    loop = threading.Thread(target=daemon.run, daemon=True)
    loop.start()
    try:
        settle(clock, daemon, 1)  # the first pass failed: the Node is not there
        assert not daemon.ready() and daemon.alive()
        world.admin.create_node(name, labels=world.label)
        clock.advance(5.0)  # the retry interval, not the 60 s one
        settle(clock, daemon, 2)
        assert "hami.io/node-mlu-register" in world.annotations(name) and daemon.ready()
        clock.advance(60.0)
        settle(clock, daemon, 3)
        assert [t - probed[0] for t in probed] == [0.0, 5.0, 65.0]
    finally:
        daemon.request_stop()
        loop.join(10)
        world.admin.delete_node(name)
    assert not loop.is_alive() and not daemon.alive()


def test_an_unreachable_api_server_is_a_failed_pass_not_an_exception() -> None:
    cluster = MemoryCluster()
    cluster.create_node("n1")
    cluster.fail_next(1, verb="get")
    _, drivers = load_drivers(["mlu"])
    daemon = Reporter(cluster, drivers, Source(FOUND), ReporterConfig(node_name="n1"))
    result = daemon.run_once()
    assert not result.ok and "server unavailable" in result.problems[0]
    cluster.fail_next(1, verb="patch")
    result = daemon.run_once()
    assert not result.ok and result.problems[0].startswith("cannot patch node n1:")
    assert daemon.run_once().ok and "hami.io/node-mlu-register" in cluster.get_node("n1").annotations


def test_a_reporter_cannot_write_another_nodes_annotations(real_world: World) -> None:
    mine, other = real_world.node("rep-mine"), real_world.node("rep-other")
    server = real_world.server
    as_mine = KubeCluster.from_kubeconfig(server.kubeconfig(server.reporter(mine)))
    daemon = Reporter(as_mine, [real_world.drivers["mlu"]], Source(FOUND), ReporterConfig(node_name=other))
    result = daemon.run_once()
    assert not result.ok and "hami.io/node-mlu-register" not in real_world.annotations(other)


def test_the_scheduler_registers_what_the_reporter_publishes(world: World) -> None:
    node = world.node("rep-e2e")
    world.admin.patch_node_status(node, {"cambricon.com/mlu": "1"})
    daemon = reporter(world, node, Source(FOUND), "mlu", "kunlun")
    assert daemon.run_once().ok
    replica = world.scheduler("mlu", "kunlun")
    entry = wait_for("MLU registered", lambda: replica.cache.vendor(node, "MLU"))
    assert [d.id for d in entry.devices] == ["MLU-0"]
    wait_for("XPU registered", lambda: replica.cache.vendor(node, "XPU"))
    # The scheduler answers a heartbeat with a stamp; the next pass reports again over it.
    handshake = "hami.io/node-handshake-xpu"
    wait_for(
        "stamped after a report", lambda: world.annotations(node).get(handshake, "").startswith("Requesting_")
    )
    # The next pass overwrites the stamp with Reported_ (the scheduler may answer at once, so the value
    # is not read back here): a Requesting_ seen after it is the scheduler's answer to that report.
    second = daemon.run_once()
    assert second.ok and second.sent and second.plan is not None
    assert second.plan.patch[handshake].startswith("Reported_")
    wait_for(
        "re-stamped after the next report",
        lambda: world.annotations(node).get(handshake, "").startswith("Requesting_"),
    )


@pytest.mark.parametrize("bad", [{"interval": 0.0}, {"retry_interval": -1.0}, {"node_name": ""}])
def test_bad_reporter_settings_are_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        ReporterConfig(**{"node_name": "n1", **bad})
