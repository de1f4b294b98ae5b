"""The shared endpoint server and metrics plumbing, on their own (the daemons' routes are tested with
the daemons)."""

from __future__ import annotations

import http.client
import logging
import socket
from collections.abc import Iterator
from http import HTTPStatus

import pytest
from prometheus_client import REGISTRY, Counter
from prometheus_client.parser import text_string_to_metric_families

from hami_core.serve.http import EndpointServer, Response, json_response, not_found, text_response
from hami_core.serve.metrics import CONTENT_TYPE, build_version, exposition, metrics_response, new_registry


def routes(path: str) -> Response:
    if path == "/hello":
        return text_response(HTTPStatus.OK, "hello\n")
    if path == "/bug":
        raise RuntimeError("a bug in a route")
    return not_found(path)


def request(server: EndpointServer, method: str, path: str) -> tuple[int, dict[str, str], bytes]:
    host, port = server.address
    connection = http.client.HTTPConnection(host, port, timeout=5)
    try:
        connection.request(method, path)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


@pytest.fixture
def server() -> Iterator[EndpointServer]:
    s = EndpointServer(routes, "127.0.0.1", 0, name="test")
    s.start()
    yield s
    s.stop()


def test_get_head_query_strings_and_trailing_slashes(server: EndpointServer) -> None:
    assert request(server, "GET", "/hello?x=1")[::2] == (200, b"hello\n")
    assert request(server, "GET", "/hello/")[0] == 200
    status, headers, body = request(server, "HEAD", "/hello")
    assert (status, body, headers["Content-Length"]) == (200, b"", "6")
    assert request(server, "GET", "/nope")[0] == 404


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE", "OPTIONS"])
def test_writes_are_405_with_allow(server: EndpointServer, method: str) -> None:
    status, headers, _ = request(server, method, "/hello")
    assert status == 405 and headers["Allow"] == "GET, HEAD"


def test_a_route_that_raises_is_a_logged_500(
    server: EndpointServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="hami_core.serve")
    status, _, body = request(server, "GET", "/bug")
    assert status == 500 and body == b'{"error": "internal error"}'
    assert any("HTTP /bug failed" in r.getMessage() and r.exc_info for r in caplog.records)


def test_ipv6_loopback() -> None:
    try:
        socket.socket(socket.AF_INET6).close()
        s = EndpointServer(routes, "::1", 0)
    except OSError as exc:  # a kernel without IPv6 fails the test loudly
        pytest.fail(f"no IPv6 loopback on this machine: {exc}")
    s.start()
    try:
        assert s.address[0] == "::1"
        assert request(s, "GET", "/hello")[0] == 200
    finally:
        s.stop()


def test_an_address_in_use_is_an_oserror(server: EndpointServer) -> None:
    with pytest.raises(OSError):
        EndpointServer(routes, "127.0.0.1", server.address[1])


def test_json_response_is_sorted_json() -> None:
    assert json_response(HTTPStatus.OK, {"b": 1, "a": 2}) == (
        HTTPStatus.OK,
        b'{"a": 2, "b": 1}',
        "application/json",
    )


def test_each_daemon_has_its_own_registry_with_build_info_and_process_metrics() -> None:
    scheduler, reporter = new_registry("scheduler"), new_registry("reporter")
    Counter("hami_test_things", "Things.", registry=scheduler).inc(3)
    families = {f.name: f for f in text_string_to_metric_families(exposition(scheduler).decode())}
    (build,) = families["hami_build_info"].samples
    assert build.labels["component"] == "scheduler" and build.labels["version"] == build_version()
    assert build.value == 1 and "python_version" in build.labels
    assert {"process_cpu_seconds", "process_resident_memory_bytes", "python_info"} <= set(families)
    assert families["hami_test_things"].samples[0].value == 3
    reporter_names = {f.name for f in text_string_to_metric_families(exposition(reporter).decode())}
    assert "hami_test_things" not in reporter_names
    assert REGISTRY.get_sample_value("hami_test_things_total") is None  # never the global registry
    status, body, content_type = metrics_response(reporter)
    assert status == 200 and body.startswith(b"# HELP") and content_type == CONTENT_TYPE
    assert content_type.startswith("text/plain; version=0.0.4")
