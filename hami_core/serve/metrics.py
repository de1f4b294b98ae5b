"""Metrics plumbing both daemons share, on ``prometheus_client``: one registry per daemon (never the
library's global one), with ``hami_build_info`` and the process metrics in it, and its text exposition.

Every metric a daemon registers has HELP and TYPE, is safe to update from any thread, and exists from
the start: a daemon creates each labelled series (say one per selected vendor) at 0 when it starts.
"""

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

__all__ = ["CONTENT_TYPE", "build_version", "exposition", "metrics_response", "new_registry"]

#: The Prometheus text format, version 0.0.4: what every Prometheus server reads.
CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4


def build_version() -> str:
    """The installed hami-core version (``unknown`` when run from a tree that is not installed)."""
    try:
        return metadata.version("hami-core")
    except metadata.PackageNotFoundError:
        return "unknown"


def new_registry(component: str) -> CollectorRegistry:
    """A registry of its own for one daemon (``scheduler``, ``reporter``) holding
    ``hami_build_info{component, version, python_version}`` (always 1), the process metrics
    (``process_cpu_seconds_total``, ``process_resident_memory_bytes``, open file descriptors, start
    time, where the platform has them) and the Python runtime's (``python_info``, ``python_gc_*``)."""
    registry = CollectorRegistry(auto_describe=True)
    Info(
        "hami_build",
        "The hami-core build this daemon runs: component, version and Python version.",
        registry=registry,
    ).info(
        {
            "component": component,
            "version": build_version(),
            "python_version": platform.python_version(),
        }
    )
    ProcessCollector(registry=registry)
    PlatformCollector(registry=registry)
    GCCollector(registry=registry)
    return registry


def exposition(registry: CollectorRegistry) -> bytes:
    """Every metric of ``registry`` in the Prometheus text format (``CONTENT_TYPE``)."""
    return generate_latest(registry)


def metrics_response(registry: CollectorRegistry) -> Response:
    """The ``/metrics`` answer for ``registry``."""
    return HTTPStatus.OK, exposition(registry), CONTENT_TYPE
