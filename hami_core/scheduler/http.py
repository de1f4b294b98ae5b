"""The scheduler's read-only HTTP endpoint: health, leadership, the device cache, metrics.

- ``GET /livez`` (and ``/healthz``): 200 while the worker loop is alive.
- ``GET /readyz``: 200 only while this replica leads and its cache is synced *for the current term*.
- ``GET /status``: leadership, term, sync state, counts (JSON).
- ``GET /cache``: every node's vendors and devices, with each vendor's state and reason (JSON).
- ``GET /cache/<node>``: one node (404 when it has nothing registered).
- ``GET /metrics``: Prometheus text format.

``HEAD`` answers as ``GET`` without the body; any other method is 405 (the endpoint is read-only).
"""

from __future__ import annotations

import json
import logging
import socket
import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

__all__ = ["SchedulerView", "StatusServer"]

log = logging.getLogger(__name__)


class SchedulerView(Protocol):
    """What the HTTP endpoint reads. Every method must be safe to call from any thread."""

    def alive(self) -> bool: ...

    def ready(self) -> bool: ...

    def status(self) -> dict[str, Any]: ...

    def cache_json(self) -> dict[str, Any]: ...

    def node_json(self, node: str) -> dict[str, Any] | None: ...

    def metrics_text(self) -> str: ...


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Log through the configured logging (never raw tracebacks on stderr); a client gone is no error.
        error = sys.exc_info()[1]
        if isinstance(error, ConnectionError):
            log.debug("http: client %s went away: %s", client_address, error)
        else:
            log.exception("http: error while serving %s", client_address)


class _Server6(_Server):
    address_family = socket.AF_INET6


class StatusServer:
    """Serves a ``SchedulerView`` on ``host:port`` from a background thread (port 0 picks a free one).

    ``host`` may be an IPv6 address (``::1``, ``::``). Raises ``OSError`` when the address cannot be bound.
    """

    def __init__(self, view: SchedulerView, host: str, port: int) -> None:
        server = _Server6 if ":" in host else _Server
        self._server = server((host, port), _make_handler(view))
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._server.serve_forever, name="hami-http", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(5)


_Response = tuple[HTTPStatus, bytes, str]


def _json(status: HTTPStatus, body: dict[str, Any]) -> _Response:
    return status, json.dumps(body, sort_keys=True).encode(), "application/json"


def _respond(view: SchedulerView, path: str) -> _Response:
    """The response to a GET of ``path``."""
    if path in ("/livez", "/healthz", "/readyz"):
        ok = view.ready() if path == "/readyz" else view.alive()
        return (HTTPStatus.OK, b"ok\n", "text/plain") if ok else \
            (HTTPStatus.SERVICE_UNAVAILABLE, b"not ready\n", "text/plain")
    if path == "/status":
        return _json(HTTPStatus.OK, view.status())
    if path == "/cache":
        return _json(HTTPStatus.OK, view.cache_json())
    if path.startswith("/cache/"):
        node = view.node_json(unquote(path[len("/cache/"):]))
        if node is None:
            return _json(HTTPStatus.NOT_FOUND, {"error": "node has no registered devices"})
        return _json(HTTPStatus.OK, node)
    if path == "/metrics":
        return HTTPStatus.OK, view.metrics_text().encode(), "text/plain; version=0.0.4"
    return _json(HTTPStatus.NOT_FOUND, {"error": f"no such endpoint: {path}"})


def _make_handler(view: SchedulerView) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "hami-scheduler"

        def do_GET(self) -> None:
            self._serve(body=True)

        def do_HEAD(self) -> None:
            self._serve(body=False)

        def _refuse(self) -> None:
            message = f"{self.command} not allowed: the endpoint is read-only"
            refusal = _json(HTTPStatus.METHOD_NOT_ALLOWED, {"error": message})
            self._send(refusal, body=True, allow="GET, HEAD")

        do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _refuse

        def _serve(self, *, body: bool) -> None:
            path = urlsplit(self.path).path.rstrip("/") or "/"
            try:
                response = _respond(view, path)
            except Exception:
                log.exception("HTTP %s failed", path)
                response = _json(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": "internal error"})
            self._send(response, body=body)

        def _send(self, response: _Response, *, body: bool, allow: str | None = None) -> None:
            status, content, content_type = response
            try:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(content)))
                if allow is not None:
                    self.send_header("Allow", allow)
                self.end_headers()
                if body:
                    self.wfile.write(content)
            except ConnectionError as exc:  # the client went away; there is no one to answer
                log.debug("http: client went away during %s %s: %s", self.command, self.path, exc)
                self.close_connection = True

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("http: " + format, *args)

    return Handler
