"""The HTTP endpoint on its own, over a fake view: methods, failures, clients that go away."""

from __future__ import annotations

import http.client
import json
import socket
import struct
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from harness.poll import wait_for

from hami_core.scheduler.http import StatusServer


class View:
    def __init__(self) -> None:
        self.cache: dict[str, Any] = {"nodes": {f"node-{i}": {"x" * 100: i} for i in range(20_000)}}

    def alive(self) -> bool:
        return True

    def ready(self) -> bool:
        return False

    def status(self) -> dict[str, Any]:
        raise RuntimeError("a bug in the view")

    def cache_json(self, states: Any = None) -> dict[str, Any]:
        return self.cache

    def node_json(self, node: str) -> dict[str, Any] | None:
        return None

    def metrics_text(self) -> str:
        return "hami_scheduler_leader 0\n"


@pytest.fixture
def server() -> Iterator[StatusServer]:
    s = StatusServer(View(), "127.0.0.1", 0)
    s.start()
    yield s
    s.stop()


def request(server: StatusServer, method: str, path: str) -> tuple[int, dict[str, str], bytes]:
    connection = http.client.HTTPConnection(*server.address, timeout=5)
    try:
        connection.request(method, path)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


def test_head_answers_like_get_without_a_body(server: StatusServer) -> None:
    status, headers, body = request(server, "HEAD", "/metrics")
    assert (status, body) == (200, b"") and headers["Content-Length"] == str(len("hami_scheduler_leader 0\n"))
    assert request(server, "HEAD", "/readyz")[0] == 503


@pytest.mark.parametrize("method", ["POST", "PUT", "PATCH", "DELETE"])
def test_other_methods_are_405_with_allow(server: StatusServer, method: str) -> None:
    status, headers, body = request(server, method, "/cache")
    assert status == 405 and headers["Allow"] == "GET, HEAD"
    assert json.loads(body)["error"].startswith(f"{method} not allowed")


def test_a_failing_view_is_a_500_in_json(server: StatusServer, caplog: pytest.LogCaptureFixture) -> None:
    status, _, body = request(server, "GET", "/status")
    assert status == 500 and json.loads(body) == {"error": "internal error"}
    assert any("HTTP /status failed" in r.getMessage() for r in caplog.records)


def test_a_client_that_goes_away_mid_response_leaves_no_raw_traceback(
    server: StatusServer, capfd: pytest.CaptureFixture[str]
) -> None:
    for _ in range(5):
        client = socket.create_connection(server.address, timeout=5)
        client.sendall(b"GET /cache HTTP/1.1\r\nHost: x\r\n\r\n")
        client.recv(100)  # the response has started: reset the connection under it
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client.close()
    # Wait for the server's handler threads to have dealt with the resets (to end), then look.
    wait_for(
        "the handler threads to end",
        lambda: not any("process_request_thread" in t.name for t in threading.enumerate()),
        timeout=10,
    )
    assert request(server, "GET", "/livez")[0] == 200  # still serving
    assert "Traceback" not in capfd.readouterr().err
