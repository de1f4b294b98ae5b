"""What a test reads of an ``EndpointServer`` that the daemons never ask: its open connections."""

from __future__ import annotations

from hami_core.serve.http import EndpointServer

__all__ = ["connections"]


def connections(server: EndpointServer) -> dict[str, int]:
    """Open connections: ``waiting`` for their request, ``answering`` (queued for or with a worker)."""
    with server._lock:
        return {"waiting": len(server._waiting), "answering": server._answering}
