"""The patch writer: sends the registrar's annotation patches, bounded, rate-limited, leader-gated.

Patches for one node are sent one at a time and in order (a later patch for the same node waits for the
earlier one and is merged with anything else queued for that node meanwhile). Patches for different
nodes run concurrently, at most ``max_in_flight`` at once. Each is checked against leadership right
before it is sent: a replica that lost the lease writes nothing more. A failed patch is reported through
``on_failure`` and never blocks other nodes.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor

from hami_core.kube.port import Cluster, ClusterError, NotFound
from hami_core.kube.ratelimit import TokenBucket

__all__ = ["PatchWriter"]

log = logging.getLogger(__name__)

Patch = Mapping[str, str | None]


class PatchWriter:
    def __init__(
        self,
        cluster: Cluster,
        *,
        limiter: TokenBucket,
        is_leader: Callable[[], bool],
        on_failure: Callable[[str, Patch, Exception], None],
        on_success: Callable[[str], None] = lambda node: None,
        max_in_flight: int = 16,
    ) -> None:
        self._cluster = cluster
        self._limiter = limiter
        self._is_leader = is_leader
        self._on_failure = on_failure
        self._on_success = on_success
        self._pool = ThreadPoolExecutor(max_workers=max_in_flight, thread_name_prefix="hami-patch")
        self._lock = threading.Lock()
        self._pending: dict[str, dict[str, str | None]] = {}
        self._busy: set[str] = set()
        self._idle = threading.Condition(self._lock)
        self.counters: Counter[str] = Counter()

    def submit(self, node: str, patch: Patch) -> None:
        if not patch:
            return
        with self._lock:
            self._pending.setdefault(node, {}).update(patch)
            if node in self._busy:
                return
            self._busy.add(node)
        self._pool.submit(self._drain, node)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until nothing is queued or in flight (for tests and shutdown)."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._busy, timeout)

    def close(self, timeout: float = 5.0) -> None:
        self.wait_idle(timeout)
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _drain(self, node: str) -> None:
        while True:
            with self._lock:
                patch = self._pending.pop(node, None)
                if patch is None:
                    self._busy.discard(node)
                    self._idle.notify_all()
                    return
            self._send(node, patch)

    def _send(self, node: str, patch: dict[str, str | None]) -> None:
        self._limiter.acquire()
        if not self._is_leader():
            self.counters["dropped_not_leader"] += 1
            self._on_failure(node, patch, RuntimeError("not the leader"))
            return
        try:
            self._cluster.patch_node_annotations(node, patch)
            self.counters["patches"] += 1
            self._on_success(node)
        except NotFound:
            self.counters["patches_node_gone"] += 1
        except ClusterError as exc:
            self.counters["patch_errors"] += 1
            log.warning("node %s: patch of %s failed: %s", node, sorted(patch), exc)
            self._on_failure(node, patch, exc)
        except Exception as exc:
            self.counters["patch_errors"] += 1
            log.exception("node %s: patch failed unexpectedly", node)
            self._on_failure(node, patch, exc)
