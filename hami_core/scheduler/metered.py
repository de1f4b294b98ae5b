"""The cluster port with every request counted and timed (``hami_scheduler_api_requests_total``,
``..._api_request_duration_seconds``, on the performance counter: a measurement, never a wait), and
every node patch sent with the scheduler's field manager.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, ParamSpec, TypeVar

from hami_core.kube.port import Cluster, ClusterError, Lease, NodeList, NodeSnapshot, WatchStream
from hami_core.scheduler.metrics import SchedulerMetrics, status_class

__all__ = ["MeteredCluster"]

T = TypeVar("T")
P = ParamSpec("P")


class MeteredCluster:
    """A ``Cluster`` that measures every call it passes on to ``inner``."""

    def __init__(
        self, inner: Cluster, metrics: SchedulerMetrics, *, field_manager: str | None = None
    ) -> None:
        self._inner = inner
        self._field_manager = field_manager
        self._requests = metrics.api_requests
        self._duration = metrics.api_request_duration

    def _measure(
        self, verb: str, resource: str, call: Callable[P, T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        started = time.perf_counter()
        result = "2xx"
        try:
            return call(*args, **kwargs)
        except ClusterError as exc:
            result = status_class(exc.status)
            raise
        except Exception:
            result = "error"
            raise
        finally:
            self._duration.labels(verb=verb, resource=resource).observe(time.perf_counter() - started)
            self._requests.labels(verb=verb, resource=resource, result=result).inc()

    # -- nodes ------------------------------------------------------------------------------------------

    def get_node(self, name: str) -> NodeSnapshot:
        return self._measure("get", "nodes", self._inner.get_node, name)

    # keyword arguments are passed on as given: their defaults are the inner cluster's
    def list_nodes(self, **options: Any) -> NodeList:
        return self._measure("list", "nodes", self._inner.list_nodes, **options)

    def watch_nodes(self, **options: Any) -> WatchStream:
        return self._measure("watch", "nodes", self._inner.watch_nodes, **options)

    def patch_node_annotations(
        self, name: str, changes: Mapping[str, str | None], **options: Any
    ) -> NodeSnapshot:
        options["field_manager"] = options.get("field_manager") or self._field_manager
        return self._measure("patch", "nodes", self._inner.patch_node_annotations, name, changes, **options)

    # -- leases -----------------------------------------------------------------------------------------

    def get_lease(self, namespace: str, name: str) -> Lease:
        return self._measure("get", "leases", self._inner.get_lease, namespace, name)

    def create_lease(self, lease: Lease) -> Lease:
        return self._measure("create", "leases", self._inner.create_lease, lease)

    def update_lease(self, lease: Lease) -> Lease:
        return self._measure("update", "leases", self._inner.update_lease, lease)

    # -- events -----------------------------------------------------------------------------------------

    def create_event(self, namespace: str, body: Mapping[str, Any]) -> None:
        self._measure("create", "events", self._inner.create_event, namespace, body)
