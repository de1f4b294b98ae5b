"""A small read-only HTTP endpoint server that both daemons put their routes on.

The daemon gives a ``Routes`` function (path -> ``Response``); the server does the rest: ``GET`` and
``HEAD`` (the same answer without the body), ``405`` with ``Allow: GET, HEAD`` for any other method, a
``500`` (logged) for a route that raises, clients that go away in the middle (ignored, logged at debug),
and IPv4 or IPv6 addresses (``::1``, ``::``). Request lines are logged at debug, through ``logging``.
"""

from __future__ import annotations

import json
import logging
import socket
import sys
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

__all__ = [
    "EndpointServer",
    "Response",
    "Routes",
    "health_response",
    "json_response",
    "not_found",
    "text_response",
]

log = logging.getLogger(__name__)

#: (status, body, content type)
Response = tuple[HTTPStatus, bytes, str]
#: The daemon's answer to a GET of a path (without query string or trailing ``/``).
Routes = Callable[[str], Response]


def json_response(status: HTTPStatus, body: dict[str, Any]) -> Response:
    return status, json.dumps(body, sort_keys=True).encode(), "application/json"


def text_response(status: HTTPStatus, text: str) -> Response:
    return status, text.encode(), "text/plain; charset=utf-8"


def health_response(ok: bool) -> Response:
    """A ``/livez`` or ``/readyz`` answer: 200 ``ok`` or 503 ``not ready``."""
    return (
        text_response(HTTPStatus.OK, "ok\n")
        if ok
        else text_response(HTTPStatus.SERVICE_UNAVAILABLE, "not ready\n")
    )


def not_found(path: str) -> Response:
    return json_response(HTTPStatus.NOT_FOUND, {"error": f"no such endpoint: {path}"})


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


class EndpointServer:
    """Serves ``routes`` on ``host:port`` from a background thread (port 0 picks a free one).

    ``host`` may be an IPv6 address (``::1``, ``::``). Raises ``OSError`` when the address cannot be bound.
    """

    def __init__(self, routes: Routes, host: str, port: int, *, name: str = "hami") -> None:
        server = _Server6 if ":" in host else _Server
        self._server = server((host, port), _make_handler(routes, name))
        self._name = name
        self._thread: threading.Thread | None = None

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def start(self) -> None:
        self._thread = threading.Thread(
            target=self._server.serve_forever, name=f"{self._name}-http", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(5)


def _make_handler(routes: Routes, name: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = name

        def do_GET(self) -> None:
            self._serve(body=True)

        def do_HEAD(self) -> None:
            self._serve(body=False)

        def _refuse(self) -> None:
            message = f"{self.command} not allowed: the endpoint is read-only"
            refusal = json_response(HTTPStatus.METHOD_NOT_ALLOWED, {"error": message})
            self._send(refusal, body=True, allow="GET, HEAD")

        do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _refuse

        def _serve(self, *, body: bool) -> None:
            path = urlsplit(self.path).path.rstrip("/") or "/"
            try:
                response = routes(path)
            except Exception:
                log.exception("HTTP %s failed", path)
                response = json_response(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": "internal error"})
            self._send(response, body=body)

        def _send(self, response: Response, *, body: bool, allow: str | None = None) -> None:
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
