"""The scheduler's read-only HTTP endpoint: health, leadership, the device cache, metrics.

- ``GET /livez`` (and ``/healthz``): 200 while the worker loop is alive.
- ``GET /readyz``: 200 only while this replica leads and its cache is synced *for the current term*.
- ``GET /status``: leadership, term, sync state, counts (JSON).
- ``GET /cache``: every node's vendors and devices, with each vendor's state and reason (JSON).
- ``GET /cache/<node>``: one node (404 when it has nothing registered).
- ``GET /metrics``: Prometheus text format.
"""

from __future__ import annotations

import json
import logging
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


class StatusServer:
    """Serves a ``SchedulerView`` on ``host:port`` from a background thread (port 0 picks a free one)."""

    def __init__(self, view: SchedulerView, host: str, port: int) -> None:
        handler = _make_handler(view)
        self._server = ThreadingHTTPServer((host, port), handler)
        self._server.daemon_threads = True
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


def _make_handler(view: SchedulerView) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "hami-scheduler"

        def do_GET(self) -> None:
            path = urlsplit(self.path).path.rstrip("/") or "/"
            try:
                if path in ("/livez", "/healthz"):
                    self._probe(view.alive())
                elif path == "/readyz":
                    self._probe(view.ready())
                elif path == "/status":
                    self._json(HTTPStatus.OK, view.status())
                elif path == "/cache":
                    self._json(HTTPStatus.OK, view.cache_json())
                elif path.startswith("/cache/"):
                    node = view.node_json(unquote(path[len("/cache/"):]))
                    if node is None:
                        self._json(HTTPStatus.NOT_FOUND, {"error": "node has no registered devices"})
                    else:
                        self._json(HTTPStatus.OK, node)
                elif path == "/metrics":
                    self._send(HTTPStatus.OK, view.metrics_text().encode(), "text/plain; version=0.0.4")
                else:
                    self._json(HTTPStatus.NOT_FOUND, {"error": f"no such endpoint: {path}"})
            except Exception:
                log.exception("HTTP %s failed", path)
                self._json(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": "internal error"})

        def _probe(self, ok: bool) -> None:
            status = HTTPStatus.OK if ok else HTTPStatus.SERVICE_UNAVAILABLE
            self._send(status, b"ok\n" if ok else b"not ready\n", "text/plain")

        def _json(self, status: HTTPStatus, body: dict[str, Any]) -> None:
            self._send(status, json.dumps(body, sort_keys=True).encode(), "application/json")

        def _send(self, status: HTTPStatus, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("http: " + format, *args)

    return Handler
