"""The shared endpoint server and metrics plumbing, on their own (the daemons' routes are tested with
the daemons)."""

from __future__ import annotations

import http.client
import logging
import socket
import threading
import time
from collections.abc import Iterator
from http import HTTPStatus

import pytest
from harness.endpoint import connections
from harness.poll import wait_for
from prometheus_client import REGISTRY, Counter, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.parser import text_string_to_metric_families

from hami_core.serve.http import EndpointServer, Query, Response, json_response, not_found, text_response
from hami_core.serve.metrics import build_version, metrics_response, new_registry


def routes(path: str, query: Query) -> Response:
    if path == "/hello":
        return text_response(HTTPStatus.OK, "hello\n")
    if path == "/query":
        return json_response(HTTPStatus.OK, {key: list(values) for key, values in query.items()})
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


def test_the_route_gets_the_query_and_the_server_header_is_the_name_alone(server: EndpointServer) -> None:
    status, headers, body = request(server, "GET", "/query?state=a&state=b%2Cc&x=")
    assert (status, body) == (200, b'{"state": ["a", "b,c"]}')
    assert headers["Server"] == "test"


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
        s = EndpointServer(routes, "::1", 0, name="test")
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
        EndpointServer(routes, "127.0.0.1", server.address[1], name="test")


def test_json_response_is_sorted_json() -> None:
    assert json_response(HTTPStatus.OK, {"b": 1, "a": 2}) == (
        HTTPStatus.OK,
        b'{"a": 2, "b": 1}',
        "application/json",
    )


def test_each_daemon_has_its_own_registry_with_build_info_and_process_metrics() -> None:
    scheduler, reporter = new_registry("scheduler"), new_registry("reporter")
    Counter("hami_test_things", "Things.", registry=scheduler).inc(3)
    families = {f.name: f for f in text_string_to_metric_families(generate_latest(scheduler).decode())}
    (build,) = families["hami_build_info"].samples
    assert build.labels["component"] == "scheduler" and build.labels["version"] == build_version()
    assert build.value == 1 and "python_version" in build.labels
    assert {"process_cpu_seconds", "process_resident_memory_bytes", "python_info"} <= set(families)
    assert families["hami_test_things"].samples[0].value == 3
    reporter_names = {f.name for f in text_string_to_metric_families(generate_latest(reporter).decode())}
    assert "hami_test_things" not in reporter_names
    assert REGISTRY.get_sample_value("hami_test_things_total") is None  # never the global registry
    status, body, content_type = metrics_response(reporter)
    assert status == 200 and body.startswith(b"# HELP") and content_type == CONTENT_TYPE_PLAIN_0_0_4
    assert content_type.startswith("text/plain; version=0.0.4")


# -- what clients can hold: real sockets on loopback, real time (socket timeouts have no fake clock) ----


def _server_threads(name: str) -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith(f"{name}-http")]


def _connect(server: EndpointServer, send: bytes = b"") -> socket.socket:
    conn = socket.create_connection(server.address, timeout=30)
    if send:
        conn.sendall(send)
    return conn


def _closed_by_server(conn: socket.socket) -> bool:
    """Whether the server closed ``conn`` (end of stream or a reset), waiting up to the socket's timeout."""
    try:
        return conn.recv(1024) == b""
    except ConnectionResetError:
        return True


def test_connections_that_send_no_request_are_closed_after_the_timeout() -> None:
    s = EndpointServer(routes, "127.0.0.1", 0, name="idle", idle_timeout=0.5)
    s.start()
    try:
        opened = time.monotonic()
        idle = [_connect(s) for _ in range(20)]
        idle.append(_connect(s, b"GET /hello HT"))  # half a request line, then nothing
        closed = [_closed_by_server(conn) for conn in idle]
        assert closed == [True] * len(idle)
        assert time.monotonic() - opened >= 0.5  # each had its time: no connection is closed before it
        wait_for("the server to count them closed", lambda: connections(s) == {"waiting": 0, "answering": 0})
        assert request(s, "GET", "/hello")[0] == 200
    finally:
        for conn in idle:
            conn.close()
        s.stop()


def test_many_open_connections_hold_no_threads_and_the_probes_still_answer() -> None:
    s = EndpointServer(routes, "127.0.0.1", 0, name="many", idle_timeout=300, workers=4, max_connections=64)
    s.start()
    conns: list[socket.socket] = []
    try:
        conns = [_connect(s) for _ in range(200)]
        wait_for("the server to take them", lambda: connections(s)["waiting"] == 64)
        assert len(_server_threads("many")) == 1 + 4  # the acceptor and the workers, 200 connections open
        for _ in range(5):
            assert request(s, "GET", "/hello")[::2] == (200, b"hello\n")
        # Beyond the bound the connection that waited longest is closed (long before its timeout).
        assert _closed_by_server(conns[0])
        assert connections(s)["waiting"] <= 64
        assert len(_server_threads("many")) == 1 + 4
    finally:
        for conn in conns:
            conn.close()
        s.stop()
    wait_for("the threads to end", lambda: _server_threads("many") == [])


def test_when_every_connection_is_being_answered_a_new_one_gets_503() -> None:
    release = threading.Event()

    def slow(path: str, query: Query) -> Response:
        if path == "/slow":
            release.wait(60)
        return routes(path, query)

    s = EndpointServer(slow, "127.0.0.1", 0, name="busy", workers=2, max_connections=3)
    s.start()
    busy: list[socket.socket] = []
    try:
        busy = [_connect(s, b"GET /slow HTTP/1.0\r\n\r\n") for _ in range(3)]  # 2 answering, 1 queued
        wait_for("all three taken", lambda: connections(s) == {"waiting": 0, "answering": 3})
        status, _, body = request(s, "GET", "/hello")
        assert (status, body) == (503, b"too many connections, try again\n")
        release.set()
        for conn in busy:
            with conn.makefile("rb") as answer:
                assert answer.readline().startswith(b"HTTP/1.0 404 ")
        wait_for("the slots to free", lambda: connections(s) == {"waiting": 0, "answering": 0})
        assert request(s, "GET", "/hello")[0] == 200
    finally:
        release.set()
        for conn in busy:
            conn.close()
        s.stop()


@pytest.mark.parametrize("bad", [{"idle_timeout": 0.0}, {"workers": 0}, {"max_connections": 0}])
def test_bounds_must_be_positive(bad: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="idle_timeout must be > 0, workers and max_connections >= 1"):
        EndpointServer(routes, "127.0.0.1", 0, name="bad", **bad)  # type: ignore[arg-type]
