"""Kubernetes Events about Nodes, posted in the background so the main loop never waits or fails on them,
deduplicated per (node, vendor, reason) and rate-limited per node as client-go's ``EventCorrelator``
(docs/observability.md, "Events on the Node"). Each fate goes to ``on_outcome``; nothing is retried."""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from datetime import UTC
from typing import Any, Literal

from hami_core.clock import SYSTEM, Clock
from hami_core.kube.access import describe_error
from hami_core.kube.port import Cluster, ClusterError
from hami_core.kube.ratelimit import TokenBucket

__all__ = ["EventRecorder", "EventType"]

log = logging.getLogger(__name__)

EventType = Literal["Normal", "Warning"]
#: What the worker posts: an Event's log record fields (its node, vendor and reason) and its body.
_Queued = tuple[dict[str, str], dict[str, Any]]

_MAX_MESSAGE = 1024
#: How many nodes (rate limits) and node+vendor pairs (deduplication) are remembered, the oldest dropped.
_REMEMBERED = 10_000


class EventRecorder:
    """Posts core/v1 Events from a worker thread (``start()``, ``stop()``); ``record`` never blocks."""

    def __init__(
        self,
        cluster: Cluster,
        *,
        component: str,
        instance: str,
        namespace: str = "default",
        queue_size: int = 1000,
        clock: Clock = SYSTEM,
        burst: int = 25,
        refill: float = 300.0,
        dedupe_window: float = 600.0,
        on_outcome: Callable[[str, str], object] = lambda reason, outcome: None,
    ) -> None:
        if burst < 1 or not refill > 0 or dedupe_window < 0:
            raise ValueError(
                f"event recorder: need burst >= 1, refill > 0 and dedupe_window >= 0, got "
                f"{burst!r}, {refill!r}, {dedupe_window!r}"
            )
        self._cluster = cluster
        self._component = component
        self._instance = instance
        self._namespace = namespace
        self._clock = clock
        self._bucket: Callable[[], TokenBucket] = lambda: TokenBucket(1.0 / refill, burst, clock=clock)
        self._window = dedupe_window
        self._on_outcome = on_outcome
        self._queue: queue.Queue[_Queued | None] = queue.Queue(maxsize=queue_size)
        #: A full queue was reported in the log; not again until an Event is posted.
        self._full_reported = False
        #: (node, vendor) -> (reason, monotonic time) of the last Event queued for it.
        self._last: OrderedDict[tuple[str, str], tuple[str, float]] = OrderedDict()
        self._buckets: OrderedDict[str, TokenBucket] = OrderedDict()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="hami-events", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        if self._thread is None:
            return
        with contextlib.suppress(queue.Full):
            self._queue.put(None, timeout=timeout)
        self._thread.join(timeout)
        self._thread = None

    def forget(self, node: str) -> None:
        """Drop what was recorded about ``node`` (it was deleted): a re-created node starts afresh."""
        with self._lock:
            for key in [k for k in self._last if k[0] == node]:
                del self._last[key]
            self._buckets.pop(node, None)

    def record(self, node: str, uid: str, *, vendor: str, type: EventType, reason: str, message: str) -> bool:
        """Queue an Event about ``vendor`` on ``node`` unless a duplicate or rate-limited; True if queued."""
        fields = {"node": node, "vendor": vendor, "reason": reason}
        outcome = self._admit(node, vendor, reason)
        if outcome is not None:
            log.debug("%s Event not posted: %s", reason, outcome.replace("_", " "), extra=fields)
            self._on_outcome(reason, outcome)
            return False
        involved = {"apiVersion": "v1", "kind": "Node", "name": node, "uid": uid}
        return self._enqueue(fields, involved, self._namespace, type, message)

    def record_about(
        self, involved: Mapping[str, str], *, type: EventType, reason: str, message: str
    ) -> bool:
        """Queue an Event about a namespaced object, in its namespace, with no deduplication or rate limit
        (the caller posts it once per occurrence). True if queued."""
        fields = {"vendor": "", "reason": reason}
        return self._enqueue(fields, dict(involved), involved["namespace"], type, message)

    def _enqueue(
        self, fields: dict[str, str], involved: dict[str, str], namespace: str, type: EventType, message: str
    ) -> bool:
        reason = fields["reason"]
        now = self._clock.now().astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{involved['name']}.", "namespace": namespace},
            "involvedObject": involved,
            "reason": reason,
            "message": message[:_MAX_MESSAGE],
            "type": type,
            "source": {"component": self._component},
            "reportingComponent": self._component,
            "reportingInstance": self._instance[:128],
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        try:
            self._queue.put_nowait((fields, body))
        except queue.Full:
            with self._lock:
                reported, self._full_reported = self._full_reported, True
            self._on_outcome(reason, "queue_full")
            log.log(
                logging.DEBUG if reported else logging.WARNING,
                "%s Event not posted: %d Events already wait to be posted (the API server is slow or "
                "unreachable)",
                reason,
                self._queue.maxsize,
                extra=fields,
            )
            return False
        return True

    def _admit(self, node: str, vendor: str, reason: str) -> str | None:
        """``None`` when the Event may be queued (then remembered and its token taken), else why not."""
        now = self._clock.monotonic()
        with self._lock:
            last = self._last.get((node, vendor))
            if last is not None and last[0] == reason and now - last[1] < self._window:
                return "duplicate"
            self._last[(node, vendor)] = (reason, now)
            self._last.move_to_end((node, vendor))
            while len(self._last) > _REMEMBERED:
                self._last.popitem(last=False)
            bucket = self._buckets.get(node)
            if bucket is None:
                bucket = self._buckets[node] = self._bucket()
                while len(self._buckets) > _REMEMBERED:
                    self._buckets.popitem(last=False)
            self._buckets.move_to_end(node)
            if not bucket.try_acquire():
                return "rate_limited"
        return None

    def idle(self) -> bool:
        """Nothing queued and nothing being posted."""
        return self._queue.unfinished_tasks == 0

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            try:
                self._post(*item)
            finally:
                self._queue.task_done()
        self._queue.task_done()

    def _post(self, fields: dict[str, str], body: dict[str, Any]) -> None:
        reason = fields["reason"]
        try:
            self._cluster.create_event(body["metadata"]["namespace"], body)
        except ClusterError as exc:
            self._on_outcome(reason, "failed")
            log.warning("could not post the %s Event: %s", reason, describe_error(exc), extra=fields)
            return
        except Exception:
            self._on_outcome(reason, "failed")
            log.exception("could not post the %s Event", reason, extra=fields)
            return
        with self._lock:
            self._full_reported = False
        self._on_outcome(reason, "posted")
