"""A small read-only HTTP endpoint server for both daemons' ``Routes``: ``GET`` and ``HEAD``, ``405`` with
``Allow: GET, HEAD`` for any other method, ``500`` (logged) for a route that raises, IPv4 or IPv6, the
``Server`` header the component's name. One asyncio thread holds every connection, ``workers`` threads
compute the answers; ``idle_timeout`` and ``max_connections`` bound what clients can hold (docs/
operations.md, "The status endpoints under load")."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import queue
import socket
import threading
from collections.abc import Callable, Mapping
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, urlsplit

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


class EndpointServer:
    """Serves ``routes`` on ``host:port`` (port 0: a free one); ``OSError`` when it cannot be bound."""

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
        except OSError:
            listener.close()
            raise
        self._listener = listener
        self._answer = _make_handler(routes, name)
        self._name = name
        self._idle_timeout = idle_timeout
        self._workers = workers
        self._max_connections = max_connections
        self._loop = asyncio.new_event_loop()
        self._stopped: asyncio.Future[None] = self._loop.create_future()
        #: Connections whose request has not fully arrived, in accept order, and their client's address.
        self._waiting: dict[asyncio.Task[Any], Any] = {}
        self._clients: set[asyncio.Task[Any]] = set()
        self._ready: queue.SimpleQueue[tuple[bytes, Any, asyncio.Future[bytes]] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._answering = 0  # handed to the workers (queued, being answered or written), under _lock
        self._threads: list[threading.Thread] = []

    @property
    def address(self) -> tuple[str, int]:
        host, port = self._listener.getsockname()[:2]
        return str(host), int(port)

    def start(self) -> None:
        self._threads = [threading.Thread(target=self._accept_loop, name=f"{self._name}-http", daemon=True)]
        self._threads += [
            threading.Thread(target=self._work, name=f"{self._name}-http-{i}", daemon=True)
            for i in range(self._workers)
        ]
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        if not self._threads:  # never started: nothing else closes them
            self._listener.close()
            self._loop.close()
            return
        with contextlib.suppress(RuntimeError):  # the loop has ended already
            self._loop.call_soon_threadsafe(_resolve, self._stopped, None)
        for _ in range(self._workers):
            self._ready.put(None)
        deadline = SYSTEM.monotonic() + 5  # a worker may be in a slow route: not longer than this
        for thread in self._threads:
            thread.join(max(0.0, deadline - SYSTEM.monotonic()))

    def _accept_loop(self) -> None:
        try:
            self._loop.run_until_complete(self._serve())
        except Exception:  # the endpoint must never take the daemon down; say so and stop serving
            log.exception("http: the endpoint's acceptor failed; it serves no more")
        finally:
            self._listener.close()
            self._loop.close()

    async def _serve(self) -> None:
        server = await asyncio.start_server(self._client, sock=self._listener, backlog=BACKLOG)
        try:
            await self._stopped
        finally:
            server.close()
            for task in self._clients:
                task.cancel()
            await asyncio.gather(*self._clients, return_exceptions=True)

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        address, task = writer.get_extra_info("peername"), asyncio.current_task()
        assert task is not None
        with self._lock:
            full = len(self._waiting) + self._answering >= self._max_connections
            oldest = next(iter(self._waiting), None) if full else None
            if oldest is not None:
                log.debug("http: %s closed to make room: it sent no request", self._waiting.pop(oldest))
                oldest.cancel()
            if not full or oldest is not None:
                self._waiting[task] = address
        if full and oldest is None:
            log.debug(
                "http: %s refused: all %d connections are being answered", address, self._max_connections
            )
            writer.write(_BUSY)
            writer.close()
            return
        self._clients.add(task)
        try:
            head = bytearray()
            async with asyncio.timeout(self._idle_timeout):  # from the accept
                while len(head) < MAX_HEAD_BYTES and not any(end in head for end in _HEAD_END):
                    data = await reader.read(MAX_HEAD_BYTES)
                    if not data:  # the client closed before its request was complete
                        return
                    head += data
            with self._lock:
                if self._waiting.pop(task, None) is None:  # closed to make room meanwhile
                    return
                self._answering += 1
            try:
                answer: asyncio.Future[bytes] = self._loop.create_future()
                self._ready.put((bytes(head), address, answer))
                writer.write(await answer)
                async with asyncio.timeout(self._idle_timeout):
                    await writer.drain()
            finally:
                with self._lock:
                    self._answering -= 1
        except TimeoutError:
            log.debug("http: %s closed: no request or answer within %gs", address, self._idle_timeout)
        except (ConnectionError, OSError) as error:
            log.debug("http: client %s went away: %s", address, error)
        finally:
            with self._lock:
                self._waiting.pop(task, None)
            self._clients.discard(task)
            writer.close()

    def _work(self) -> None:
        while (item := self._ready.get()) is not None:
            head, address, answer = item
            try:
                data = b"" if self._stopped.done() else self._answer(head, address)
            except Exception:
                log.exception("http: error while serving %s", address)
                data = b""
            with contextlib.suppress(RuntimeError):  # the loop has ended: no one to answer
                self._loop.call_soon_threadsafe(_resolve, answer, data)


def _resolve(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


def _make_handler(routes: Routes, name: str) -> Callable[[bytes, Any], bytes]:
    """The answer to a request (its head as it arrived), as the bytes to send."""

    class Handler(BaseHTTPRequestHandler):
        def __init__(self, head: bytes, address: Any) -> None:
            self._head = head
            super().__init__(None, address, None)  # type: ignore[arg-type]  # no socket, no socketserver

        def setup(self) -> None:  # the answer stays in ``out``, for the acceptor to send
            self.out = io.BytesIO()
            self.rfile, self.wfile = io.BytesIO(self._head), self.out

        def finish(self) -> None:
            pass

        def version_string(self) -> str:
            return name  # the component, without the Python version

        def _answer(self) -> None:
            reads = self.command in ("GET", "HEAD")
            if reads:
                parts = urlsplit(self.path)
                path = parts.path.rstrip("/") or "/"
                query = {key: tuple(values) for key, values in parse_qs(parts.query).items()}
                try:
                    response = routes(path, query)
                except Exception:
                    log.exception("HTTP %s failed", path)
                    response = json_response(HTTPStatus.INTERNAL_SERVER_ERROR, {"error": "internal error"})
            else:
                message = f"{self.command} not allowed: the endpoint is read-only"
                response = json_response(HTTPStatus.METHOD_NOT_ALLOWED, {"error": message})
            status, content, content_type = response
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(content)))
            if not reads:
                self.send_header("Allow", "GET, HEAD")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(content)

        do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _answer

        def log_message(self, format: str, *args: Any) -> None:
            log.debug("http: " + format, *args)

    return lambda head, address: Handler(head, address).out.getvalue()
