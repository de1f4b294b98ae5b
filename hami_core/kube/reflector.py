"""The project's list+watch loop for Nodes, on top of the ``Cluster`` port (works with either one).

A paged list (``limit`` 500) fills the store, then a watch runs from the list's resourceVersion with
bookmarks and a jittered timeout, and resumes from the last resourceVersion seen when it ends. A ``Gone``
means the history is lost: the reflector lists again and hands the handler the *difference* between its
store and the new list, so consumers see every add, update and delete exactly once and nothing twice.
Other failures back off exponentially with jitter (0.5 s .. 30 s by default). Nothing escapes the thread:
errors are logged, handler exceptions are logged and the loop carries on.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable
from typing import Protocol

import attrs

from hami_core.clock import SYSTEM, Clock
from hami_core.kube.port import Cluster, Gone, NodeSnapshot, WatchEvent, WatchStream

__all__ = ["Backoff", "NodeHandler", "Reflector", "ReflectorConfig"]

log = logging.getLogger(__name__)


class NodeHandler(Protocol):
    """What the reflector tells its consumer. Called on the reflector's thread, one call at a time."""

    def on_upsert(self, old: NodeSnapshot | None, new: NodeSnapshot) -> None:
        """A Node appeared (``old`` is ``None``) or changed."""

    def on_delete(self, last: NodeSnapshot) -> None:
        """A Node was deleted, or stopped matching the label selector; ``last`` is its last known state."""

    def on_synced(self, *, relisted: bool) -> None:
        """The store matches a full list: after the first list (``relisted=False``) and after every relist
        that followed a lost watch (``relisted=True``), once that list's differences were delivered."""


@attrs.frozen(kw_only=True)
class ReflectorConfig:
    label_selector: str = ""
    page_size: int = 500
    #: A watch's ``timeout_seconds`` is drawn uniformly from this range, so replicas do not reconnect
    #: in step.
    watch_timeout: tuple[int, int] = (240, 360)
    backoff_initial: float = 0.5
    backoff_max: float = 30.0
    #: A watch that ends sooner than this without delivering anything counts as a failure (no tight loop).
    min_watch_duration: float = 1.0


class Backoff:
    """Exponential backoff with full jitter: the n-th delay is uniform in [d/2, d], d = initial * 2^n."""

    def __init__(self, initial: float, maximum: float, rand: Callable[[], float]) -> None:
        self._initial, self._maximum, self._rand = initial, maximum, rand
        self._failures = 0

    def next_delay(self) -> float:
        ceiling = min(self._maximum, self._initial * 2.0 ** min(self._failures, 64))
        self._failures += 1
        return ceiling / 2 + self._rand() * ceiling / 2

    def reset(self) -> None:
        self._failures = 0


class Reflector:
    """Keeps ``name -> NodeSnapshot`` in step with the cluster and reports every change to ``handler``.

    Backoff waits are on ``clock`` and cut short by :meth:`stop`; ``rand()`` in [0, 1) drives the jitter;
    ``clock`` also measures watch durations. Both are injectable for tests. Use :meth:`start` for a
    daemon thread or call :meth:`run` on a thread of your own. ``keep`` (optional) reduces every Node
    before it is stored or handed on, for a consumer that reads only part of it (the scheduler keeps
    only what its vendors and node selector read: ``scheduler/trim.py``).
    """

    def __init__(
        self,
        cluster: Cluster,
        handler: NodeHandler,
        config: ReflectorConfig | None = None,
        *,
        rand: Callable[[], float] = random.random,
        clock: Clock = SYSTEM,
        keep: Callable[[NodeSnapshot], NodeSnapshot] | None = None,
    ) -> None:
        self._cluster = cluster
        #: What the store keeps of each Node, applied before the handler sees it (default: all of it).
        self._keep = keep
        self._handler = handler
        self._config = config or ReflectorConfig()
        self._stop = clock.event()
        self._sleep = self._stop.wait
        self._rand = rand
        self._clock = clock.monotonic
        self._backoff = Backoff(self._config.backoff_initial, self._config.backoff_max, rand)
        self._lock = threading.Lock()
        self._store: dict[str, NodeSnapshot] = {}
        self._synced = threading.Event()
        self._watch: WatchStream | None = None
        self._thread: threading.Thread | None = None
        #: The resourceVersion the next watch starts from; empty until the first list.
        self.resource_version = ""
        #: How many full lists were made (the first one included).
        self.lists = 0
        #: ``clock()`` at the last sign of progress (a list, a watch opened, an event); for liveness.
        self.last_progress = clock.monotonic()
        self._gone_right_after_list = False
        self._resume_at: float | None = None

    # -- reading the store ------------------------------------------------------------------------------

    @property
    def has_synced(self) -> bool:
        """True once the first full list has been delivered (and from then on)."""
        return self._synced.is_set()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        return self._synced.wait(timeout)

    def snapshot(self, name: str) -> NodeSnapshot | None:
        with self._lock:
            return self._store.get(name)

    def names(self) -> list[str]:
        with self._lock:
            return sorted(self._store)

    def items(self) -> dict[str, NodeSnapshot]:
        """A copy of the whole store."""
        with self._lock:
            return dict(self._store)

    # -- running ----------------------------------------------------------------------------------------

    def start(self) -> threading.Thread:
        if self._thread is not None:
            raise RuntimeError("reflector already started")
        self._thread = threading.Thread(target=self.run, name="hami-node-reflector", daemon=True)
        self._thread.start()
        return self._thread

    def stop(self, timeout: float | None = 5.0) -> None:
        """Stop the loop: closes the open watch and wakes a backoff sleep; joins the thread if started."""
        self._stop.set()
        with self._lock:
            watch = self._watch
        if watch is not None:
            watch.close()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def run(self) -> None:
        """The loop; returns only after :meth:`stop`. Never raises."""
        need_list = True
        while not self._stop.is_set():
            try:
                if need_list:
                    self._list()
                    need_list = False
                if self._stop.is_set():
                    break
                if self._watch_once():
                    self._backoff.reset()
                else:
                    self._pause("the watch ended at once without an event")
            except Gone as exc:
                log.info("node watch expired (%s); listing again", exc)
                need_list = True
                if self._gone_right_after_list:
                    self._pause("the watch expired right after a list")
            except Exception as exc:  # the loop must survive anything, including bugs in a cluster
                log.warning("node list/watch failed: %s", exc)
                self._pause(str(exc))
        log.debug("node reflector stopped")

    def _pause(self, why: str) -> None:
        delay = self._backoff.next_delay()
        log.debug("node reflector backs off %.2fs: %s", delay, why)
        self._resume_at = self._clock() + delay
        try:
            self._sleep(delay)
        finally:
            self._resume_at = None

    def backing_off(self) -> bool:
        """Waiting out a backoff after a failure, until the clock reaches its end."""
        resume_at = self._resume_at
        return resume_at is not None and self._clock() < resume_at

    # -- list -------------------------------------------------------------------------------------------

    def _list(self) -> None:
        """A full paged list, then the difference against the store goes to the handler."""
        items: dict[str, NodeSnapshot] = {}
        token: str | None = None
        resource_version = ""
        while True:
            page = self._cluster.list_nodes(
                label_selector=self._config.label_selector,
                limit=self._config.page_size,
                continue_token=token,
            )
            if not resource_version:
                resource_version = page.resource_version
            keep = self._keep
            for node in page.items:
                items[node.name] = node if keep is None else keep(node)
            token = page.continue_token
            if not token:
                break
            if self._stop.is_set():
                return
        relisted = self.lists > 0
        self.lists += 1
        self._apply_list(items)
        self.resource_version = resource_version
        self._gone_right_after_list = True
        self.last_progress = self._clock()
        self._synced.set()
        try:
            self._handler.on_synced(relisted=relisted)
        except Exception:
            log.exception("node event handler failed in on_synced; the reflector carries on")

    def _apply_list(self, items: dict[str, NodeSnapshot]) -> None:
        with self._lock:
            old_store = self._store
            self._store = dict(items)
        for name, old in sorted(old_store.items()):
            if name not in items:
                self._notify(self._handler.on_delete, old)
        for name, new in sorted(items.items()):
            before = old_store.get(name)
            if before is None or before.resource_version != new.resource_version:
                self._notify(self._handler.on_upsert, before, new)

    # -- watch ------------------------------------------------------------------------------------------

    def _watch_once(self) -> bool:
        """One watch until it ends. Returns False when it ended at once without delivering anything."""
        low, high = self._config.watch_timeout
        timeout = int(low + self._rand() * (high - low))
        started = self._clock()
        delivered = False
        watch = self._cluster.watch_nodes(
            resource_version=self.resource_version,
            label_selector=self._config.label_selector,
            timeout_seconds=timeout,
            allow_bookmarks=True,
        )
        with self._lock:
            self._watch = watch
        self.last_progress = self._clock()
        try:
            if self._stop.is_set():
                return True
            for event in watch:
                if self._stop.is_set():
                    return True
                self._apply(event)
                delivered = True
                self._gone_right_after_list = False
        finally:
            with self._lock:
                self._watch = None
            watch.close()
        return delivered or self._stop.is_set() or self._clock() - started >= self._config.min_watch_duration

    def _apply(self, event: WatchEvent) -> None:
        self.resource_version = event.resource_version
        self.last_progress = self._clock()
        node = event.node
        if event.type == "BOOKMARK" or node is None:
            return
        if self._keep is not None:
            node = self._keep(node)
        if event.type == "DELETED":
            with self._lock:
                known = self._store.pop(node.name, None)
            if known is not None:
                self._notify(self._handler.on_delete, node)
            return
        with self._lock:
            old = self._store.get(node.name)
            if old is not None:
                node = _sharing(old, node)
            self._store[node.name] = node
        self._notify(self._handler.on_upsert, old, node)

    def _notify(self, call: Callable[..., None], *args: NodeSnapshot | None) -> None:
        try:
            call(*args)
        except Exception:
            log.exception("node event handler failed in %s; the reflector carries on", call.__name__)


def _sharing(old: NodeSnapshot, new: NodeSnapshot) -> NodeSnapshot:
    """``new``, holding the very string objects of ``old``'s name, uid and annotations that did not
    change: every watch event parses a Node afresh, and a consumer that keeps a value (the scheduler keeps
    each register value it read, and the name and uid as keys) would otherwise keep a second copy of it
    alive once the store moves on."""
    before, after = old.annotations, new.annotations
    annotations = (
        {key: before[key] if before.get(key) == value else value for key, value in after.items()}
        if before and after
        else after
    )
    return attrs.evolve(
        new, annotations=annotations, name=old.name, uid=old.uid if old.uid == new.uid else new.uid
    )
