"""The scheduler's read-only HTTP routes (listed in docs/observability.md, "The scheduler's endpoint"),
on the shared endpoint server (``hami_core.serve.http``)."""

from __future__ import annotations

from http import HTTPStatus
from typing import Any, Protocol
from urllib.parse import unquote

from hami_core.protocol.states import VendorState, parse_states
from hami_core.scheduler.config import COMPONENT
from hami_core.serve.http import (
    EndpointServer,
    Query,
    Response,
    health_response,
    json_response,
    not_found,
)

__all__ = ["SchedulerView", "StatusServer"]


class SchedulerView(Protocol):
    """What the HTTP endpoint reads. Every method must be safe to call from any thread."""

    def alive(self) -> bool: ...

    def ready(self) -> bool: ...

    def status(self) -> dict[str, Any]: ...

    def cache_json(self, states: frozenset[VendorState] | None = None) -> dict[str, Any]: ...

    def node_json(self, node: str) -> dict[str, Any] | None: ...

    def metrics_text(self) -> str: ...


def _respond(view: SchedulerView, path: str, query: Query) -> Response:
    if path in ("/livez", "/healthz"):
        return health_response(view.alive())
    if path == "/readyz":
        return health_response(view.ready())
    if path == "/status":
        return json_response(HTTPStatus.OK, view.status())
    if path == "/cache":
        wanted = query.get("state")
        if not wanted:
            return json_response(HTTPStatus.OK, view.cache_json())
        try:
            states = parse_states(",".join(wanted))
        except ValueError as exc:
            return json_response(HTTPStatus.BAD_REQUEST, {"error": f"state: {exc}"})
        return json_response(HTTPStatus.OK, view.cache_json(states))
    if path.startswith("/cache/"):
        name = unquote(path[len("/cache/") :])
        node = view.node_json(name)
        if node is None:
            return json_response(HTTPStatus.NOT_FOUND, {"error": f"this scheduler watches no Node {name!r}"})
        return json_response(HTTPStatus.OK, node)
    if path == "/metrics":
        return HTTPStatus.OK, view.metrics_text().encode(), "text/plain; version=0.0.4"
    return not_found(path)


class StatusServer(EndpointServer):
    """Serves a ``SchedulerView`` on ``host:port`` (port 0 picks a free one; ``OSError`` if unbound)."""

    def __init__(self, view: SchedulerView, host: str, port: int) -> None:
        super().__init__(lambda path, query: _respond(view, path, query), host, port, name=COMPONENT)
