"""The patch writer: per-node order, queued writes merged (one precondition per request), at most
``max_in_flight`` nodes at once, rate-limited, leadership checked right before each send; every outcome
goes to ``on_applied`` or ``on_failed`` (docs/architecture.md, "One node event, end to end").
"""

from __future__ import annotations

import logging
import threading
from collections import Counter, deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from hami_core.kube.access import describe_error
from hami_core.kube.port import Cluster, ClusterError, Conflict, NodeSnapshot, NotFound
from hami_core.kube.ratelimit import TokenBucket
from hami_core.scheduler.metrics import SchedulerMetrics
from hami_core.scheduler.view import PendingWrite

__all__ = ["NotLeader", "PatchWriter"]

log = logging.getLogger(__name__)


class NotLeader(Exception):
    """The write was not sent: this replica is not the leader (any more)."""


class PatchWriter:
    def __init__(
        self,
        cluster: Cluster,
        *,
        limiter: TokenBucket,
        is_leader: Callable[[], bool],
        on_applied: Callable[[PendingWrite, NodeSnapshot], None],
        on_failed: Callable[[PendingWrite, Exception], None],
        max_in_flight: int = 16,
        metrics: SchedulerMetrics | None = None,
    ) -> None:
        self._cluster = cluster
        self.metrics = metrics if metrics is not None else SchedulerMetrics(())
        self._limiter = limiter
        self._is_leader = is_leader
        self._on_applied = on_applied
        self._on_failed = on_failed
        self._pool = ThreadPoolExecutor(max_workers=max_in_flight, thread_name_prefix="hami-patch")
        self._max_in_flight = max_in_flight
        self._lock = threading.Lock()
        self._queued: dict[str, list[PendingWrite]] = {}
        #: Nodes with writes queued or in flight (a node is in here from its first write to its last reply).
        self._busy: set[str] = set()
        #: Busy nodes waiting for a patch thread, in the order their first write came.
        self._ready: deque[str] = deque()
        #: Drain tasks handed to the pool, at most ``max_in_flight``: a cold start decides a write for
        #: every node at once, and a pool task (a Future with its Condition) per node cost ~1.8 KB each.
        self._drainers = 0
        self._closed = False
        self._idle = threading.Condition(self._lock)

    @property
    def counters(self) -> Counter[str]:
        """A snapshot of the writer's metrics (for tests and benchmarks): ``patches`` answered 2xx,
        ``patch_errors`` every other result, ``dropped_not_leader``."""
        results = self.metrics.patch_requests()
        patches, dropped = int(results.pop("2xx")), int(self.metrics.totals()["dropped_not_leader"])
        return Counter(patches=patches, patch_errors=int(sum(results.values())), dropped_not_leader=dropped)

    def submit(self, write: PendingWrite) -> None:
        with self._lock:
            self._queued.setdefault(write.node, []).append(write)
            if write.node in self._busy:
                return
            self._busy.add(write.node)
            self._ready.append(write.node)
            if self._drainers >= self._max_in_flight:
                return  # a running drainer takes the node when it is done with its current one
            self._drainers += 1
        try:
            self._pool.submit(self._drain_ready)
        except RuntimeError:  # the pool is shut down (closing): nothing will be sent any more
            with self._lock:
                self._drainers -= 1

    def idle(self) -> bool:
        with self._lock:
            return not self._busy

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait (in real time) until nothing is queued or in flight (for tests and shutdown)."""
        with self._idle:
            return self._idle.wait_for(lambda: not self._busy, timeout)

    def close(self, timeout: float = 5.0) -> None:
        self.wait_idle(timeout)
        with self._lock:
            self._closed = True  # drainers stop taking nodes, as the pool's queued tasks used to be cancelled
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _drain_ready(self) -> None:
        """One patch thread's task: drain the nodes waiting, one at a time, until none is left."""
        while True:
            with self._lock:
                if not self._ready or self._closed:
                    self._drainers -= 1
                    return
                node = self._ready.popleft()
            self._drain(node)

    def _drain(self, node: str) -> None:
        while True:
            with self._lock:
                writes = self._queued.pop(node, None)
                if writes is None:
                    self._busy.discard(node)
                    self._idle.notify_all()
                    return
                batch, precondition = _one_request(writes)
                if len(batch) < len(writes):
                    self._queued[node] = writes[len(batch) :]
            try:
                self._send(node, batch, precondition)
            except Exception:  # a bug must not leave the node busy forever
                log.exception("patch writer: unexpected error", extra={"node": node})

    def _send(self, node: str, writes: list[PendingWrite], precondition: str | None) -> None:
        patch = {key: value for write in writes for key, value in write.patch.items()}
        self._limiter.acquire()
        if not self._is_leader():
            self.metrics.dropped_not_leader.inc(len(writes))
            for write in writes:
                self._on_failed(write, NotLeader("not the leader"))
            return
        try:
            reply = self._cluster.patch_node_annotations(node, patch, resource_version=precondition)
        except Exception as exc:
            keys = ", ".join(sorted(patch))
            if isinstance(exc, NotFound):
                log.debug("patch of %s: the node is gone", keys, extra={"node": node})
            elif isinstance(exc, Conflict) and precondition is not None:
                # The Node changed since it was judged (a report arrived, or anything else): nothing was
                # written; the node is decided again on what it holds now. Expected: no warning.
                self.metrics.patch_conflicts.inc()
                log.debug(
                    "patch of %s: the node changed since resourceVersion %s; decided again",
                    keys,
                    precondition,
                    extra={"node": node, "reason": "conflict"},
                )
            elif isinstance(exc, ClusterError):
                log.warning(
                    "patch of %s failed: %s",
                    keys,
                    describe_error(exc),
                    extra={"node": node, "reason": "patch-failed"},
                )
            else:
                log.exception("patch failed unexpectedly", extra={"node": node, "reason": "patch-failed"})
            for write in writes:
                self._on_failed(write, exc)
            return
        for write in writes:
            self._on_applied(write, reply)


def _one_request(writes: list[PendingWrite]) -> tuple[list[PendingWrite], str | None]:
    """The first writes of a node's queue that can go in one request, and its precondition: up to (not
    including) the first write conditional on another resourceVersion than an earlier one."""
    precondition = None
    for i, write in enumerate(writes):
        if precondition is not None and write.precondition not in (None, precondition):
            return writes[:i], precondition
        precondition = precondition or write.precondition
    return writes, precondition
