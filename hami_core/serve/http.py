"""A small read-only HTTP endpoint server that both daemons put their routes on.

The daemon gives a ``Routes`` function (path -> ``Response``); the server does the rest: ``GET`` and
``HEAD`` (the same answer without the body), ``405`` with ``Allow: GET, HEAD`` for any other method, a
``500`` (logged) for a route that raises, clients that go away in the middle (ignored, logged at debug),
and IPv4 or IPv6 addresses (``::1``, ``::``). Request lines are logged at debug, through ``logging``.

A connection costs no thread while it waits. One thread accepts connections and reads their requests
(non-blocking, all at once); a fixed pool of ``workers`` threads answers the requests that have fully
arrived, one connection each (HTTP/1.0: one request per connection, then it is closed). So:

* a connection that has not sent its whole request within ``idle_timeout`` seconds of its accept is
  closed, and so is one whose answer does not leave within ``idle_timeout`` (each write);
* at most ``max_connections`` are open at once. A new connection beyond that closes the one that has
  waited longest without sending its request (a probe, which sends at once, is served); when every
  open connection is being answered or queued for a worker, the new one gets ``503`` and is closed;
* threads: the acceptor and the ``workers``, whatever the clients do.

The ``Server`` header is the daemon's own component name (``name``), nothing more.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import queue
import selectors
import socket
import threading
from collections.abc import Callable, Mapping
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

import attrs

from hami_core.clock import SYSTEM

__all__ = [
    "IDLE_TIMEOUT",
    "MAX_CONNECTIONS",
    "WORKERS",
    "EndpointServer",
    "Query",
    "Response",
    "Routes",
    "health_response",
    "json_response",
    "not_found",
    "text_response",
]

log = logging.getLogger(__name__)

#: Seconds a connection may take to send its request from its accept, and each write of the answer.
#: Probes and scrapes send theirs at once (Prometheus opens a new connection for a scrape after it).
IDLE_TIMEOUT = 15.0
#: Threads that answer requests.
WORKERS = 4
#: Connections open at once, waiting for their request or being answered.
MAX_CONNECTIONS = 64
#: The largest request head read (request line and headers); a longer one is answered with what came.
MAX_HEAD_BYTES = 64 * 1024
#: Connections the kernel holds before the acceptor takes them.
BACKLOG = 128

_HEAD_END = (b"\r\n\r\n", b"\n\n")
_TOO_MANY = b"too many connections, try again\n"
_BUSY = (
    b"HTTP/1.0 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
    b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(_TOO_MANY), _TOO_MANY)
)

#: (status, body, content type)
Response = tuple[HTTPStatus, bytes, str]
#: A request's query string: each parameter's values, in order (``?state=a&state=b``).
Query = Mapping[str, tuple[str, ...]]
#: The daemon's answer to a GET of a path (without query string or trailing ``/``) and its query.
Routes = Callable[[str, Query], Response]


def json_response(status: HTTPStatus, body: dict[str, Any]) -> Response:
    return status, json.dumps(body, sort_keys=True).encode(), "application/json"


def text_response(status: HTTPStatus, text: str) -> Response:
    return status, text.encode(), "text/plain; charset=utf-8"


def health_response(ok: bool) -> Response:
    """A ``/livez`` or ``/readyz`` answer: 200 ``ok`` or 503 ``not ready``."""
    status, text = (HTTPStatus.OK, "ok\n") if ok else (HTTPStatus.SERVICE_UNAVAILABLE, "not ready\n")
    return text_response(status, text)


def not_found(path: str) -> Response:
    return json_response(HTTPStatus.NOT_FOUND, {"error": f"no such endpoint: {path}"})


@attrs.define
class _Waiting:
    """An accepted connection whose request has not fully arrived."""

    address: Any
    deadline: float
    head: bytearray = attrs.Factory(bytearray)


def _close(conn: socket.socket) -> None:
    with contextlib.suppress(OSError):
        conn.shutdown(socket.SHUT_WR)
    conn.close()


class EndpointServer:
    """Serves ``routes`` on ``host:port`` from background threads (port 0 picks a free one).

    ``host`` may be an IPv6 address (``::1``, ``::``). Raises ``OSError`` when the address cannot be bound.
    ``idle_timeout``, ``workers`` and ``max_connections`` bound what clients can hold (module docstring).
    """

    def __init__(
        self,
        routes: Routes,
        host: str,
        port: int,
        *,
        name: str,
        idle_timeout: float = IDLE_TIMEOUT,
        workers: int = WORKERS,
        max_connections: int = MAX_CONNECTIONS,
    ) -> None:
        if not idle_timeout > 0 or workers < 1 or max_connections < 1:
            raise ValueError(
                f"idle_timeout must be > 0, workers and max_connections >= 1 (got {idle_timeout}, "
                f"{workers}, {max_connections})"
            )
        listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        try:
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind((host, port))
            listener.listen(BACKLOG)
            listener.setblocking(False)
        except OSError:
            listener.close()
            raise
        self._listener = listener
        self._handler = _make_handler(routes, name, idle_timeout)
        self._name = name
        self._idle_timeout = idle_timeout
        self._workers = workers
        self._max_connections = max_connections
        self._selector = selectors.DefaultSelector()
        self._wake_read, self._wake_write = socket.socketpair()
        self._wake_read.setblocking(False)
        self._waiting: dict[socket.socket, _Waiting] = {}  # in accept order
        self._ready: queue.SimpleQueue[tuple[socket.socket, Any, bytes] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._answering = 0  # handed to the workers (queued or being answered), under _lock
        self._stopping = threading.Event()
        self._threads: list[threading.Thread] = []

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._listener.getsockname()[:2]
        return str(host), int(port)

    @property
    def connections(self) -> dict[str, int]:
        """Open connections: ``waiting`` for their request, ``answering`` (queued for or with a worker)."""
        with self._lock:
            return {"waiting": len(self._waiting), "answering": self._answering}

    def start(self) -> None:
        self._threads = [threading.Thread(target=self._accept_loop, name=f"{self._name}-http", daemon=True)]
        self._threads += [
            threading.Thread(target=self._work, name=f"{self._name}-http-{i}", daemon=True)
            for i in range(self._workers)
        ]
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._wake()
        for _ in range(self._workers):
            self._ready.put(None)
        deadline = SYSTEM.monotonic() + 5  # a worker may be writing to a slow client: not longer than this
        for thread in self._threads:
            thread.join(max(0.0, deadline - SYSTEM.monotonic()))
        if not self._threads:  # never started: nothing else closes them
            self._close_all()

    # -- the acceptor ---------------------------------------------------------------------------------

    def _wake(self) -> None:
        with contextlib.suppress(OSError):
            self._wake_write.send(b"x")

    def _accept_loop(self) -> None:
        self._selector.register(self._listener, selectors.EVENT_READ)
        self._selector.register(self._wake_read, selectors.EVENT_READ)
        try:
            while not self._stopping.is_set():
                with self._lock:
                    deadline = min((w.deadline for w in self._waiting.values()), default=None)
                timeout = None if deadline is None else max(0.0, deadline - SYSTEM.monotonic())
                for key, _ in self._selector.select(timeout):
                    if key.fileobj is self._listener:
                        self._accept()
                    elif key.fileobj is self._wake_read:
                        self._drain_wake()
                    else:
                        self._read(key.fileobj)  # type: ignore[arg-type]
                self._expire(SYSTEM.monotonic())
        except Exception:  # the endpoint must never take the daemon down; say so and stop serving
            log.exception("http: the endpoint's acceptor failed; it serves no more")
        finally:
            self._close_all()

    def _drain_wake(self) -> None:
        with contextlib.suppress(OSError):
            while self._wake_read.recv(512):
                pass

    def _accept(self) -> None:
        while True:
            try:
                conn, address = self._listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as error:  # out of descriptors, a connection reset before accept
                log.warning("http: cannot accept a connection: %s", error)
                return
            conn.setblocking(False)
            with self._lock:
                full = len(self._waiting) + self._answering >= self._max_connections
                oldest = next(iter(self._waiting), None) if full else None
            if full and oldest is None:
                log.debug("http: %s refused: all %d connections are being answered", address,
                          self._max_connections)  # fmt: skip
                with contextlib.suppress(OSError):
                    conn.send(_BUSY)
                _close(conn)
                continue
            if oldest is not None:
                log.debug("http: %s closed to make room: it sent no request", self._waiting[oldest].address)
                self._drop(oldest)
            with self._lock:
                self._waiting[conn] = _Waiting(address, SYSTEM.monotonic() + self._idle_timeout)
            self._selector.register(conn, selectors.EVENT_READ)

    def _read(self, conn: socket.socket) -> None:
        waiting = self._waiting.get(conn)
        if waiting is None:
            return
        try:
            data = conn.recv(MAX_HEAD_BYTES)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as error:
            log.debug("http: client %s went away: %s", waiting.address, error)
            self._drop(conn)
            return
        if not data:  # the client closed before its request was complete
            self._drop(conn)
            return
        waiting.head += data
        if len(waiting.head) < MAX_HEAD_BYTES and not any(end in waiting.head for end in _HEAD_END):
            return
        self._selector.unregister(conn)
        with self._lock:
            del self._waiting[conn]
            self._answering += 1
        self._ready.put((conn, waiting.address, bytes(waiting.head)))

    def _expire(self, now: float) -> None:
        with self._lock:
            late = [conn for conn, waiting in self._waiting.items() if waiting.deadline <= now]
        for conn in late:
            log.debug(
                "http: %s closed: no request within %gs", self._waiting[conn].address, self._idle_timeout
            )
            self._drop(conn)

    def _drop(self, conn: socket.socket) -> None:
        """Close a connection still waiting for its request."""
        with self._lock:
            self._waiting.pop(conn, None)
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(conn)
        _close(conn)

    def _close_all(self) -> None:
        for conn in list(self._waiting):
            self._drop(conn)
        self._selector.close()
        self._listener.close()
        self._wake_read.close()
        self._wake_write.close()

    # -- the workers ----------------------------------------------------------------------------------

    def _work(self) -> None:
        while True:
            item = self._ready.get()
            if item is None or self._stopping.is_set():
                if item is not None:
                    _close(item[0])
                return
            conn, address, head = item
            try:
                conn.setblocking(True)
                conn.settimeout(self._idle_timeout)
                self._handler(conn, address, head)
            except ConnectionError as error:
                log.debug("http: client %s went away: %s", address, error)
            except Exception:
                log.exception("http: error while serving %s", address)
            finally:
                _close(conn)
                with self._lock:
                    self._answering -= 1


def _make_handler(routes: Routes, name: str, timeout: float) -> Callable[[socket.socket, Any, bytes], object]:
    class Handler(BaseHTTPRequestHandler):
        server_version = name

        def __init__(self, conn: socket.socket, address: Any, head: bytes) -> None:
            self._head = head
            super().__init__(conn, address, None)  # type: ignore[arg-type]  # no socketserver here

        def setup(self) -> None:
            super().setup()
            self.connection.settimeout(timeout)
            self.rfile.close()  # the acceptor has read the request already
            self.rfile = io.BytesIO(self._head)

        def version_string(self) -> str:
            return name  # the component, without the Python version

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
            parts = urlsplit(self.path)
            path = parts.path.rstrip("/") or "/"
            query = {key: tuple(values) for key, values in parse_qs(parts.query).items()}
            try:
                response = routes(path, query)
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
