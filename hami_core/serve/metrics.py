"""Metrics plumbing both daemons share, on ``prometheus_client``: one registry per daemon (never the
library's global one) and its text exposition. A daemon creates each labelled series at 0 when it starts."""

from __future__ import annotations

import platform
from http import HTTPStatus
from importlib import metadata

from prometheus_client import CollectorRegistry, Info, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector

from hami_core.serve.http import Response

__all__ = ["build_version", "metrics_response", "new_registry"]


def build_version() -> str:
    """The installed hami-core version (``unknown`` when run from a tree that is not installed)."""
    try:
        return metadata.version("hami-core")
    except metadata.PackageNotFoundError:
        return "unknown"


def new_registry(component: str) -> CollectorRegistry:
    """A registry for one daemon with ``hami_build_info``, the process and the Python runtime's metrics."""
    registry = CollectorRegistry(auto_describe=True)
    help = "The hami-core build this daemon runs: component, version and Python version."
    build = {"component": component, "version": build_version(), "python_version": platform.python_version()}
    Info("hami_build", help, registry=registry).info(build)
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    return registry


def metrics_response(registry: CollectorRegistry) -> Response:
    """Every metric of ``registry`` in the Prometheus text format 0.0.4 (what every Prometheus reads)."""
    return HTTPStatus.OK, generate_latest(registry), CONTENT_TYPE_PLAIN_0_0_4
