"""Kubernetes Events about Nodes, posted in the background so the main loop never waits or fails on them.

One Warning Event per distinct (node, reason, message): a malformed annotation that stays malformed is
reported once, not every resync. Posting failures are logged and dropped.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import threading
from collections import OrderedDict
from datetime import UTC
from typing import Any

from hami_core.clock import SYSTEM, Clock
from hami_core.kube.port import Cluster, ClusterError

__all__ = ["EventRecorder"]

log = logging.getLogger(__name__)

_MAX_MESSAGE = 1024
_REMEMBERED = 10_000


class EventRecorder:
    """Posts core/v1 Events about Nodes from a worker thread.

    Call ``start()`` once and ``stop()`` at shutdown. ``warn`` never blocks and never raises.
    """

    def __init__(
        self,
        cluster: Cluster,
        *,
        component: str,
        instance: str,
        namespace: str = "default",
        queue_size: int = 1000,
        clock: Clock = SYSTEM,
    ) -> None:
        self._cluster = cluster
        self._component = component
        self._instance = instance
        self._namespace = namespace
        self._clock = clock
        self._busy = 0
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue(maxsize=queue_size)
        self._seen: OrderedDict[tuple[str, str, str], None] = OrderedDict()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self.posted = 0
        self.dropped = 0

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
        """Drop what was reported about ``node`` (it was deleted), so a re-created node is reported anew."""
        with self._lock:
            for key in [k for k in self._seen if k[0] == node]:
                del self._seen[key]

    def warn(self, node: str, uid: str, reason: str, message: str) -> bool:
        """Queue a Warning Event about ``node`` unless the same one was already posted. True if queued."""
        key = (node, reason, message)
        with self._lock:
            if key in self._seen:
                return False
            self._seen[key] = None
            while len(self._seen) > _REMEMBERED:
                self._seen.popitem(last=False)
        now = self._clock.now().astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{node}.", "namespace": self._namespace},
            "involvedObject": {"apiVersion": "v1", "kind": "Node", "name": node, "uid": uid},
            "reason": reason,
            "message": message[:_MAX_MESSAGE],
            "type": "Warning",
            "source": {"component": self._component},
            "reportingComponent": self._component,
            "reportingInstance": self._instance[:128],
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
        }
        with self._lock:
            self._busy += 1
        try:
            self._queue.put_nowait(body)
        except queue.Full:
            with self._lock:
                self._busy -= 1
            self.dropped += 1
            return False
        return True

    def idle(self) -> bool:
        """Nothing queued and nothing being posted."""
        with self._lock:
            return self._busy == 0

    def _run(self) -> None:
        while True:
            body = self._queue.get()
            if body is None:
                return
            try:
                self._post(body)
            finally:
                with self._lock:
                    self._busy -= 1

    def _post(self, body: dict[str, Any]) -> None:
        try:
            self._cluster.create_event(self._namespace, body)
            self.posted += 1
        except ClusterError as exc:
            self.dropped += 1
            log.warning("could not post event %s: %s", body["reason"], exc,
                        extra={"node": body["involvedObject"]["name"], "reason": body["reason"]})
        except Exception:
            self.dropped += 1
            log.exception("could not post event")
