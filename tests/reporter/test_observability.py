"""What an operator sees of a reporter: its metrics (parsed with prometheus_client's own parser), its
/livez, /readyz and /metrics endpoint, and the warning about a driver without a device source. On the
in-memory cluster and a fake clock."""

from __future__ import annotations

import http.client
import logging
import threading
from collections.abc import Iterator

import pytest
from harness.admin import MemoryCluster
from harness.clock import WatchedClock
from harness.poll import wait_for
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from hami_core import DeviceInfo
from hami_core.plugins.driver import VendorDriver
from hami_core.plugins.manager import load_drivers
from hami_core.reporter.daemon import Reporter, ReporterConfig
from hami_core.reporter.http import reporter_server
from hami_core.serve.http import EndpointServer

MLU = [
    DeviceInfo(id="MLU-0", count=10, devmem=23308, type="MLU-370", health=True),
    DeviceInfo(id="MLU-1", count=10, devmem=23308, type="MLU-370", health=True),
]
GPU = [DeviceInfo(id="GPU-0", count=10, devmem=24576, devcore=100, type="NVIDIA-A10", health=True)]


class Source:
    def __init__(self, found: dict[str, list[DeviceInfo] | Exception | None]) -> None:
        self.found = found

    def __call__(self, driver: VendorDriver, node: str) -> list[DeviceInfo] | None:
        result = self.found.get(driver.name)
        if isinstance(result, Exception):
            raise result
        return result


def samples(daemon: Reporter) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of the reporter's /metrics text, by (name, labels), through prometheus_client's parser."""
    text = generate_latest(daemon.metrics.registry).decode()
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


@pytest.fixture
def cluster() -> MemoryCluster:
    c = MemoryCluster()
    c.create_node("n1")
    return c


def make(cluster: MemoryCluster, source: Source, *names: str, clock: WatchedClock | None = None) -> Reporter:
    _, drivers = load_drivers(list(names))
    return Reporter(
        cluster,
        drivers,
        source,
        ReporterConfig(node_name="n1", interval=30, retry_interval=5),
        clock=clock or WatchedClock(),
    )


def test_every_series_exists_from_the_start_with_help_and_type(cluster: MemoryCluster) -> None:
    daemon = make(cluster, Source({}), "mlu", "nvidia", "dcu")
    text = generate_latest(daemon.metrics.registry).decode()
    values = samples(daemon)
    for vendor in ("MLU", "NVIDIA", "DCU"):
        assert values[("hami_reporter_published_devices", (("vendor", vendor),))] == 0
        assert values[("hami_reporter_device_source", (("vendor", vendor),))] == 0
    for name in (
        "hami_reporter_passes_total",
        "hami_reporter_failed_passes_total",
        "hami_reporter_patches_total",
        "hami_reporter_last_success_timestamp_seconds",
    ):
        assert values[(name, ())] == 0
    build = [k for k in values if k[0] == "hami_build_info"]
    assert len(build) == 1 and dict(build[0][1])["component"] == "reporter"
    assert ("process_cpu_seconds_total", ()) in values
    for family in ("hami_reporter_passes", "hami_reporter_published_devices", "hami_build_info"):
        assert f"# HELP {family}" in text and f"# TYPE {family}" in text
    # Its own registry: a second reporter counts apart.
    other = make(cluster, Source({}), "mlu")
    daemon.metrics.passes.inc()
    assert samples(other)[("hami_reporter_passes_total", ())] == 0


def test_passes_failures_patches_devices_and_the_last_good_pass(cluster: MemoryCluster) -> None:
    clock = WatchedClock()
    source = Source({"mlu": MLU, "nvidia": GPU})
    daemon = make(cluster, source, "mlu", "nvidia", "dcu", clock=clock)
    assert daemon.run_once().ok
    values = samples(daemon)
    assert values[("hami_reporter_passes_total", ())] == 1
    assert values[("hami_reporter_patches_total", ())] == 1
    assert values[("hami_reporter_published_devices", (("vendor", "MLU"),))] == 2
    assert values[("hami_reporter_published_devices", (("vendor", "NVIDIA"),))] == 1
    assert values[("hami_reporter_published_devices", (("vendor", "DCU"),))] == 0
    assert values[("hami_reporter_device_source", (("vendor", "DCU"),))] == 0
    assert values[("hami_reporter_device_source", (("vendor", "MLU"),))] == 1
    assert values[("hami_reporter_last_success_timestamp_seconds", ())] == clock.now().timestamp()
    good_at = clock.now().timestamp()

    clock.advance(30)
    cluster.fail_next(1, verb="get")
    assert not daemon.run_once().ok
    source.found["mlu"] = MLU[:1]
    clock.advance(5)
    assert daemon.run_once().ok  # heartbeat + the changed MLU list: a second patch
    values = samples(daemon)
    assert values[("hami_reporter_passes_total", ())] == 3
    assert values[("hami_reporter_failed_passes_total", ())] == 1
    assert values[("hami_reporter_patches_total", ())] == 2
    assert values[("hami_reporter_published_devices", (("vendor", "MLU"),))] == 1
    assert values[("hami_reporter_last_success_timestamp_seconds", ())] == good_at + 35

    # A failed probe keeps what was published; the pass counts as failed.
    source.found["nvidia"] = OSError("driver gone")
    assert not daemon.run_once().ok
    values = samples(daemon)
    assert values[("hami_reporter_published_devices", (("vendor", "NVIDIA"),))] == 1
    assert values[("hami_reporter_failed_passes_total", ())] == 2


def test_a_driver_without_a_device_source_is_a_warning_once_per_pass(
    cluster: MemoryCluster, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="hami_core.reporter")
    daemon = make(cluster, Source({"mlu": MLU}), "mlu", "dcu", "nvidia")
    for _ in range(2):
        result = daemon.run_once()
        assert result.ok and result.published == ("mlu",)
    warned = [r for r in caplog.records if getattr(r, "reason", None) == "no-device-source"]
    assert sorted(r.vendor for r in warned) == ["DCU", "DCU", "NVIDIA", "NVIDIA"]  # type: ignore[attr-defined]
    assert all(r.levelno == logging.WARNING and r.node == "n1" for r in warned)  # type: ignore[attr-defined]
    assert all("n1" not in r.getMessage() for r in warned)  # the node is a field, not in the message
    published = [r for r in caplog.records if getattr(r, "reason", None) == "published"]
    assert [(r.node, r.vendor) for r in published] == [("n1", "MLU")]  # type: ignore[attr-defined]


def test_nothing_published_when_no_driver_has_a_source(cluster: MemoryCluster) -> None:
    result = make(cluster, Source({}), "mlu", "nvidia").run_once()
    assert result.ok and result.published == () and not result.sent


def get(server: EndpointServer, path: str, method: str = "GET") -> tuple[int, bytes]:
    connection = http.client.HTTPConnection(*server.address, timeout=5)
    try:
        connection.request(method, path)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


@pytest.fixture
def served(cluster: MemoryCluster) -> Iterator[tuple[Reporter, EndpointServer, WatchedClock]]:
    clock = WatchedClock()
    cluster.delete_node("n1")  # the first pass fails: not ready
    daemon = make(cluster, Source({"mlu": MLU}), "mlu", clock=clock)
    server = reporter_server(daemon, "127.0.0.1", 0)
    server.start()
    yield daemon, server, clock
    daemon.request_stop()
    server.stop()


def test_livez_readyz_and_metrics(
    served: tuple[Reporter, EndpointServer, WatchedClock], cluster: MemoryCluster
) -> None:
    daemon, server, clock = served
    assert get(server, "/livez")[0] == 503  # the loop has not started
    loop = threading.Thread(target=daemon.run, daemon=True)
    loop.start()
    registry = daemon.metrics.registry
    wait_for("first pass", lambda: registry.get_sample_value("hami_reporter_passes_total") == 1)
    assert clock.wait_for_waiting(1)
    assert get(server, "/livez") == (200, b"ok\n") and get(server, "/healthz")[0] == 200
    assert get(server, "/readyz") == (503, b"not ready\n")
    cluster.create_node("n1")
    clock.advance(5)
    wait_for("ready after the first good pass", lambda: get(server, "/readyz")[0] == 200)
    status, body = get(server, "/metrics")
    families = {f.name for f in text_string_to_metric_families(body.decode())}
    assert status == 200 and {"hami_reporter_passes", "hami_build_info", "process_cpu_seconds"} <= families
    assert get(server, "/metrics", "HEAD") == (200, b"")
    assert get(server, "/metrics", "POST")[0] == 405
    assert get(server, "/nope")[0] == 404
    daemon.request_stop()
    loop.join(10)
    assert get(server, "/livez")[0] == 503


def test_the_reporter_names_itself_in_the_server_header_and_its_writes(
    served: tuple[Reporter, EndpointServer, WatchedClock], cluster: MemoryCluster
) -> None:
    _, server, _ = served
    connection = http.client.HTTPConnection(*server.address, timeout=5)
    try:
        connection.request("GET", "/livez")
        assert connection.getresponse().getheader("Server") == "hami-core-reporter"
    finally:
        connection.close()
    cluster.create_node("n1", labels={"kubernetes.io/os": "linux"})  # as kubelet does: fields are tracked
    assert make(cluster, Source({"mlu": MLU}), "mlu").run_once().ok
    managers = cluster.node_annotation_managers("n1").managers
    assert managers and set(managers.values()) == {("hami-core-reporter",)}
