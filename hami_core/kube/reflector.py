"""The project's list+watch loop for Nodes, on the ``Cluster`` port (either one): docs/architecture.md, "One
node event, end to end", step 1 (what it lists, watches, delivers and backs off), and "Leadership" (a term's
fresh list). Nothing escapes the thread: errors and handler exceptions are logged and the loop carries on.

**Whether the view is current** (spec 5b) is its fact, for its consumer to act on: *progress* (a list, an
event, a BOOKMARK, or a :meth:`_probe` that shows nothing was written) within ``progress_deadline`` on the
wire's clock (``wire_clock``), and no *gap* since the last list. A gap is any moment the watch may have
missed something: a failed, dropped or half-open watch (its read timeout is its ``timeout_seconds`` + 5 s),
a 410, "too large resource version", no progress (:meth:`check_progress`), before the first list. After
any gap it lists again: a resumed watch could replay what was missed, but only a BOOKMARK up to 20 s later
would prove it done; a list proves it at once (a watch that ends by its timeout is no gap). A store that
moved backwards (a list or probe below the highest resourceVersion seen, "too large", or a watch whose
bookmarks are older than its start, so it delivers nothing) is listed from the present, and the list
replaces the store (logged once per list).
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable, Mapping
from typing import Any, Protocol

import attrs

from hami_core.clock import SYSTEM, Clock, wait_until
from hami_core.kube.backoff import DEFAULT_BASE, DEFAULT_MAX, ONE, ExponentialBackoff
from hami_core.kube.packed import PackedStrings
from hami_core.kube.port import (
    WATCH_READ_SLACK,
    Cluster,
    Gone,
    NodeSnapshot,
    TooLarge,
    WatchEvent,
    WatchStream,
    rv_number,
)

__all__ = ["NodeHandler", "Reflector", "ReflectorConfig", "ViewState"]

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
    #: in step. The server sends a BOOKMARK 2 s before it ends a watch: this bounds a healthy watch's
    #: silence.
    watch_timeout: tuple[int, int] = (12, 20)
    #: No progress (list, event, BOOKMARK) for this long on the wire clock: the view is stale, and an
    #: open watch is dropped (:meth:`Reflector.check_progress`) and replaced by a list.
    progress_deadline: float = 30.0
    backoff_initial: float = DEFAULT_BASE
    backoff_max: float = DEFAULT_MAX
    #: A watch that ends sooner than this without delivering anything counts as a failure (no tight loop).
    min_watch_duration: float = 1.0

    def __attrs_post_init__(self) -> None:
        timeout: Any = self.watch_timeout
        if not (isinstance(timeout, tuple) and len(timeout) == 2 and 1 <= timeout[0] <= timeout[1]):
            raise ValueError(
                f"ReflectorConfig.watch_timeout must be (low, high) with 1 <= low <= high, got {timeout!r}"
            )
        longest = timeout[1] + WATCH_READ_SLACK
        if not self.progress_deadline >= longest:
            raise ValueError(
                f"ReflectorConfig.progress_deadline must be at least the longest watch timeout plus "
                f"{WATCH_READ_SLACK:g} s ({longest:g} s): a healthy watch shows progress only when it ends, "
                f"got {self.progress_deadline!r}"
            )


@attrs.frozen(kw_only=True)
class ViewState:
    """Whether the reflector's view is current, and why not (for readiness, ``/status`` and metrics)."""

    #: No gap since the last list, and progress within the deadline.
    current: bool
    #: Why the view is not current (``None`` when it is): the gap, or the silence.
    stale_because: str | None
    #: Seconds since the last progress (list, event, BOOKMARK), on the wire clock.
    progress_age: float
    #: Lists made, and times the view went from current to stale (a gap opened), since the start.
    lists: int
    stale_count: int


class Reflector:
    """Keeps ``name -> NodeSnapshot`` in step with the cluster and reports every change to ``handler``, from
    :meth:`start`'s daemon thread or a caller's thread in :meth:`run`. Backoff waits (cut short by
    :meth:`stop`) and watch durations are on ``clock``, progress on ``wire_clock``; ``rand()`` in [0, 1)
    draws the jitter. ``keep`` reduces every Node before it is stored or handed on (``scheduler/trim.py``).
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
        wire_clock: Callable[[], float] = SYSTEM.monotonic,
    ) -> None:
        self._cluster = cluster
        self._keep = keep
        self._handler = handler
        self._config = config or ReflectorConfig()
        self._stop = clock.event()
        #: The backoff's wait, on a lock ``backing_off`` takes (re-entrant: ``stop`` may come from the
        #: reflector's own thread, a handler's or a clock's callback).
        self._pause_lock = threading.RLock()
        self._paused = clock.condition(self._pause_lock)
        self._rand = rand
        self._clock = clock.monotonic
        self._backoff: ExponentialBackoff[str] = ExponentialBackoff(
            self._config.backoff_initial, self._config.backoff_max, jitter=0.5, rand=rand
        )
        self._wire = wire_clock
        self._lock = threading.Lock()
        self._store: dict[str, NodeSnapshot] = {}
        self._synced = threading.Event()
        self._watch: WatchStream | None = None
        self._thread: threading.Thread | None = None
        #: The resourceVersion the next watch starts from; empty until the first list.
        self.resource_version = ""
        #: How many full lists were made (the first one included), the page requests they took (a list
        #: that starts over counts its first pages too), and probes (one before each watch).
        self.lists = 0
        self.list_pages = 0
        self.probes = 0
        #: ``wire_clock()`` at the last progress: a list delivered, an event or a BOOKMARK.
        self.last_progress = wire_clock()
        #: Why the view may have missed something since the last list (``None``: nothing did).
        self._gap: str | None = "not listed yet"
        self._stale_count = 0
        #: Fresh lists asked for (:meth:`relist`), and the highest ticket a list has served.
        self._requested = 0
        self._served = 0
        self._delivering = False
        self._watch_was_open = False
        #: The highest resourceVersion seen (as a number), to tell a store that moved backwards.
        self._highest_rv = 0
        #: Lists whose resourceVersion was lower than the highest seen: the store moved backwards.
        self.store_rewinds = 0
        self._gone_right_after_list = False
        self._resume_at: float | None = None

    # -- reading the store ------------------------------------------------------------------------------

    @property
    def has_synced(self) -> bool:
        """True once the first full list has been delivered (and from then on)."""
        return self._synced.is_set()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        return self._synced.wait(timeout)

    # -- whether the view is current ------------------------------------------------------------------

    def relist(self) -> int:
        """Ask for a fresh list (the open watch is closed); returns the ticket :meth:`current` takes. Any
        thread."""
        with self._lock:
            self._requested += 1
            ticket = self._requested
            watch = self._watch
        if watch is not None:
            watch.close()
        return ticket

    def current(self, ticket: int = 0) -> bool:
        """The view is current: no gap since the last list, progress within the deadline, and a list
        that started after ticket ``ticket`` was asked for has been delivered. Any thread."""
        with self._lock:
            served, gap = self._served, self._gap
        return gap is None and served >= ticket and self.progress_age() <= self._config.progress_deadline

    def listing_due(self) -> bool:
        """A list is due and not yet delivered to the handler (a gap, or a fresh list asked for). Any
        thread."""
        with self._lock:
            return self._gap is not None or self._requested > self._served or self._delivering

    def progress_age(self) -> float:
        """Seconds since the last progress, on the wire clock."""
        return max(0.0, self._wire() - self.last_progress)

    def view_state(self) -> ViewState:
        with self._lock:
            gap, stale_count = self._gap, self._stale_count
        age = self.progress_age()
        because = gap
        if because is None and age > self._config.progress_deadline:
            because = f"no watch progress for {age:.0f}s (deadline {self._config.progress_deadline:g}s)"
        return ViewState(
            current=because is None,
            stale_because=because,
            progress_age=age,
            lists=self.lists,
            stale_count=stale_count,
        )

    def check_progress(self) -> bool:
        """Past the progress deadline: open a gap (the loop lists next) and drop the open watch, if any.
        Called by the consumer's own loop (the scheduler's worker, at every evaluation and tick). Returns
        True when it did. Any thread."""
        age = self.progress_age()
        if age <= self._config.progress_deadline:
            return False
        with self._lock:
            if self._gap is not None:
                return False
            self._gap = f"the watch showed no progress for {age:.0f}s"
            self._stale_count += 1
            watch = self._watch
        log.warning(
            "node watch showed no progress (no event or bookmark) for %.0fs, deadline %gs: dropping it "
            "and listing again; the view is stale until then",
            age,
            self._config.progress_deadline,
        )
        if watch is not None:
            watch.close()
        return True

    def _open_gap(self, why: str) -> None:
        with self._lock:
            if self._gap is None:
                self._gap = why
                self._stale_count += 1

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
        with self._pause_lock:
            self._paused.notify_all()
        with self._lock:
            watch = self._watch
        if watch is not None:
            watch.close()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout)

    def _must_list(self) -> str | None:
        """Why the next step is a list rather than a watch (``None``: resume the watch)."""
        with self._lock:
            if self._gap is not None:
                return self._gap
            if self._requested > self._served:
                return "a fresh list was asked for"
        if (age := self.progress_age()) > self._config.progress_deadline:
            why = f"no watch progress for {age:.0f}s"
            self._open_gap(why)
            return why
        return None

    def run(self) -> None:
        """The loop; returns only after :meth:`stop`. Never raises."""
        while not self._stop.is_set():
            try:
                why = self._must_list()
                if why is not None:
                    log.debug("node reflector lists: %s", why)
                    self._list()
                if self._stop.is_set():
                    break
                if self._watch_once():
                    self._backoff.forget(ONE)
                else:
                    self._pause("the watch ended at once without an event")
            except TooLarge as exc:
                self._open_gap("the server's store is behind the watch's resourceVersion")
                log.warning(
                    "node watch from resourceVersion %s: the API server's store is behind it (%s): "
                    "etcd restored or emptied; listing again from the present",
                    self.resource_version,
                    exc,
                )
                self._pause("resource version too large")
            except Gone as exc:
                self._open_gap("the watch expired (410)")
                log.info("node watch expired (%s); listing again", exc)
                if self._gone_right_after_list:
                    self._pause("the watch expired right after a list")
            except Exception as exc:  # the loop must survive anything, including bugs in a cluster
                age = self.progress_age()
                if age >= self._config.watch_timeout[0] + WATCH_READ_SLACK and self._watch_was_open:
                    log.warning(
                        "node watch showed no progress (no event or bookmark) for %.0fs and was dropped "
                        "(%s); listing again, the view is stale until then",
                        age,
                        exc,
                    )
                else:
                    log.warning("node list/watch failed: %s", exc)
                self._open_gap(f"the watch or list failed: {exc}")
                self._pause(str(exc))
        log.debug("node reflector stopped")

    def _pause(self, why: str) -> None:
        delay = self._backoff.when(ONE)
        log.debug("node reflector backs off %.2fs: %s", delay, why)
        # The end said and the wait from one reading of the clock, under the lock ``backing_off`` takes
        # (docs/architecture.md, "Time").
        with self._pause_lock:
            resume_at = self._resume_at = self._clock() + delay
            try:
                wait_until(self._paused, self._clock, resume_at, self._stop.is_set)
            finally:
                self._resume_at = None

    def backing_off(self) -> bool:
        """Waiting out a backoff after a failure, until the clock reaches its end."""
        with self._pause_lock:
            resume_at = self._resume_at
        return resume_at is not None and self._clock() < resume_at

    # -- list -------------------------------------------------------------------------------------------

    def _list(self) -> None:
        """A full paged list, then the difference against the store goes to the handler.

        A fresh list asked for while this one is read (a term that starts during the first list) makes
        it start over, once: its consumer would have to wait past the list anyway, and being handed it
        would have the consumer decide every Node twice, holding two lists' garbage meanwhile. A Node the
        store holds as listed stays the store's object, a changed one shares its unchanged strings
        (:func:`_sharing`): a relist holds one copy of the Nodes, not two."""
        items: dict[str, NodeSnapshot] = {}
        token: str | None = None
        resource_version = ""
        may_restart = True
        with self._lock:
            serves = self._requested  # a list serves the fresh lists asked for before it started
        self._watch_was_open = False
        while True:
            self.list_pages += 1
            page = self._cluster.list_nodes(
                label_selector=self._config.label_selector,
                limit=self._config.page_size,
                continue_token=token,
            )
            if not resource_version:
                resource_version = page.resource_version
            keep, known = self._keep, self._store  # only this thread replaces or changes the store
            for node in page.items:
                kept = node if keep is None else keep(node)
                if (old := known.get(node.name)) is not None:
                    kept = old if old == kept else _sharing(old, kept)
                items[node.name] = kept
            token = page.continue_token
            if may_restart:
                with self._lock:
                    requested = self._requested
                if requested > serves:
                    log.debug("node reflector lists again from the start: a fresh list was asked for")
                    items, token, resource_version, serves, may_restart = {}, None, "", requested, False
                    continue
            if not token:
                break
            if self._stop.is_set():
                return
        relisted = self.lists > 0
        self.lists += 1
        if (listed := rv_number(resource_version)) is not None:
            if listed < self._highest_rv:
                self.store_rewinds += 1
                log.warning(
                    "node list at resourceVersion %s is behind resourceVersion %d seen before: the API "
                    "server's store moved backwards (etcd restored or emptied); the list replaces the cache",
                    resource_version,
                    self._highest_rv,
                )
            self._highest_rv = listed
        self._apply_list(items)
        self.resource_version = resource_version
        self._gone_right_after_list = True
        self.last_progress = self._wire()
        with self._lock:
            self._gap = None
            self._served = max(self._served, serves)
            self._delivering = True  # listing_due() until the handler has been told
        self._synced.set()
        try:
            self._notify(self._handler.on_synced, relisted=relisted)
        finally:
            with self._lock:
                self._delivering = False

    def _apply_list(self, items: dict[str, NodeSnapshot]) -> None:
        with self._lock:
            old_store, self._store = self._store, items
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
        if not self._probe():
            return True  # the store is behind what was seen: the loop lists
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
        self._watch_was_open = True
        try:
            if self._closing():
                return True
            for event in watch:
                if self._closing():
                    return True  # closed for a fresh list: what it still delivers waits for it
                self._apply(event)
                delivered = True
                self._gone_right_after_list = False
        finally:
            with self._lock:
                self._watch = None
            watch.close()
        return delivered or self._closing() or self._clock() - started >= self._config.min_watch_duration

    def _closing(self) -> bool:
        """The loop stops, or a list is due: asked for, or a gap (only :meth:`check_progress` opens one
        while a watch is open: it drops the watch for its silence)."""
        with self._lock:
            return self._stop.is_set() or self._requested > self._served or self._gap is not None

    def _probe(self) -> bool:
        """A consistent read of one Node before each watch (``limit=1``, ``resourceVersion=""``), so the
        server's watch cache catches up with etcd and sends a BOOKMARK (a cache of quiet Nodes sends none
        newer than the watch's start). Its resourceVersion equal to the one the watch resumes from: nothing
        was written since, which is progress. Lower than one seen: the store moved backwards; returns False
        (the caller lists)."""
        probe = self._cluster.list_nodes(label_selector=self._config.label_selector, limit=1)
        self.probes += 1
        now, resumes = rv_number(probe.resource_version), rv_number(self.resource_version)
        if now is not None and now < self._highest_rv:
            self._open_gap(f"the store is at resourceVersion {now}, behind {self._highest_rv} seen before")
            return False
        if now is not None and resumes is not None and now <= resumes:
            self.last_progress = self._wire()
        return True

    def _apply(self, event: WatchEvent) -> None:
        self.resource_version = event.resource_version
        self.last_progress = self._wire()
        seen = rv_number(event.resource_version)
        if seen is not None and seen > self._highest_rv:
            self._highest_rv = seen
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

    def _notify(self, call: Callable[..., None], *args: NodeSnapshot | None, **kwargs: bool) -> None:
        try:
            call(*args, **kwargs)
        except Exception:
            log.exception("node event handler failed in %s; the reflector carries on", call.__name__)


def _sharing(old: NodeSnapshot, new: NodeSnapshot) -> NodeSnapshot:
    """``new``, holding the very objects of ``old``'s name, uid and annotation values that did not change
    (for ``PackedStrings``, the compressed ones): every watch event parses a Node afresh, and a consumer
    that keeps a value (the scheduler keeps the name and uid as keys) would otherwise keep a second copy of
    it alive once the store moves on."""
    before, after = old.annotations, new.annotations
    annotations: Mapping[str, str]
    if not before or not after:
        annotations = after
    elif isinstance(after, PackedStrings):  # the compressed values compared, and shared, as they are kept
        annotations = after.sharing(before)
    else:
        annotations = {
            key: before[key] if before.get(key) == value else value for key, value in after.items()
        }
    return attrs.evolve(
        new, annotations=annotations, name=old.name, uid=old.uid if old.uid == new.uid else new.uid
    )
