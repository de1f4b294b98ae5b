"""The reporter's read-only endpoint: ``/livez`` (``/healthz``), ``/readyz`` and ``/metrics``."""

from __future__ import annotations

from hami_core.reporter.daemon import COMPONENT, Reporter
from hami_core.serve.http import EndpointServer, Response, health_response, not_found
from hami_core.serve.metrics import metrics_response

__all__ = ["reporter_server"]


def _respond(reporter: Reporter, path: str) -> Response:
    if path in ("/livez", "/healthz"):
        return health_response(reporter.alive())
    if path == "/readyz":
        return health_response(reporter.ready())
    if path == "/metrics":
        return metrics_response(reporter.metrics.registry)
    return not_found(path)


def reporter_server(reporter: Reporter, host: str, port: int) -> EndpointServer:
    """The endpoint for ``reporter`` on ``host:port`` (not started; ``OSError`` when it cannot bind)."""
    return EndpointServer(lambda path, query: _respond(reporter, path), host, port, name=COMPONENT)
