"""The reporter's read-only HTTP endpoint, on the shared endpoint server (``hami_core.serve.http``).

- ``GET /livez`` (and ``/healthz``): 200 while the pass loop runs and no pass is stuck.
- ``GET /readyz``: 200 once a pass has succeeded.
- ``GET /metrics``: the reporter's metrics (``reporter/metrics.py``), Prometheus text format.
"""

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
