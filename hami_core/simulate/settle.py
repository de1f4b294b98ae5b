"""Before fake time moves, every replica must have *settled*: seen each Node write (``NodeWrites``) with
nothing left to do until the clock moves. The real-time wait is for what will happen, never for time."""

from __future__ import annotations

import sys
import threading
import traceback
from collections.abc import Callable, Iterable

from hami_core.clock import SYSTEM
from hami_core.kube.port import NodeSnapshot, rv_number
from hami_core.scheduler.daemon import Scheduler

__all__ = ["NodeWrites", "SettleTimeout", "wait_settled"]


class SettleTimeout(AssertionError):
    """The replicas did not settle in time; the message says what each was still doing."""


def _rv(value: str) -> int:
    number = rv_number(value)
    return -1 if number is None else number


class NodeWrites:
    """The latest state of every Node the driver wrote: its resourceVersion, or ``None`` once deleted."""

    def __init__(self) -> None:
        self.expected: dict[str, int | None] = {}

    def saw(self, node: NodeSnapshot) -> NodeSnapshot:
        self.expected[node.name] = _rv(node.resource_version)
        return node

    def deleted(self, name: str) -> None:
        self.expected[name] = None

    def caught_up(self, replica: Scheduler) -> bool:
        """The replica's watch shows every one of these writes."""
        for name, rv in self.expected.items():
            seen = replica.reflector.snapshot(name)
            if rv is None:
                if seen is not None:
                    return False
            elif seen is None or _rv(seen.resource_version) < rv:
                return False
        return True


def _settled(replica: Scheduler, writes: NodeWrites) -> bool:
    reflector = replica.reflector
    watching = reflector.backing_off() or (reflector.has_synced and writes.caught_up(replica))
    return watching and replica.settled()


#: What the timeout reports of a replica, by part: how to read it, the threads behind it (by name prefix),
#: and whether it keeps them busy while true (a count: above 0) rather than while false.
_PARTS: dict[str, tuple[Callable[[Scheduler, NodeWrites], object], str, bool]] = {
    "identity": (lambda r, w: r.config.identity, "", False),
    "backing_off": (lambda r, w: r.reflector.backing_off(), "", False),
    "synced": (lambda r, w: r.reflector.has_synced, "hami-node-reflector", False),
    "caught_up": (lambda r, w: w.caught_up(r), "hami-node-reflector", False),
    "listing_due": (lambda r, w: r.reflector.listing_due(), "hami-node-reflector", True),
    "queue_idle": (lambda r, w: r.queue.idle(), "hami-worker", False),
    "writer_idle": (lambda r, w: r.writer.idle(), "hami-patch", False),
    "pending_writes": (lambda r, w: r.view.pending(), "hami-node-reflector", True),
    "events_idle": (lambda r, w: r.events.idle(), "hami-events", False),
    "elector_idle": (lambda r, w: r.elector.idle(), "hami-elector", False),
}


def _busy_stacks(states: list[dict[str, object]]) -> str:
    """The stack of every thread behind a part not idle (each replica names its threads alike)."""
    prefixes = {
        _PARTS[part][1]
        for state in states
        for part, value in state.items()
        if _PARTS[part][1] and (bool(value) if _PARTS[part][2] else value is False)
    }
    frames = sys._current_frames()
    blocks = [
        f"--- thread {thread.name} ({thread.ident}):\n{''.join(traceback.format_stack(frames[thread.ident]))}"
        for thread in sorted(threading.enumerate(), key=lambda t: t.name)
        if thread.ident in frames and any(thread.name.startswith(p) for p in prefixes)
    ]
    return "\n".join(blocks) if blocks else "(no thread of theirs is alive)"


def wait_settled(replicas: Iterable[Scheduler], writes: NodeWrites, *, timeout: float = 30.0) -> None:
    """Block until every replica has settled; ``SettleTimeout`` after ``timeout`` real seconds."""
    pending = list(replicas)
    deadline = SYSTEM.monotonic() + timeout
    delay = 0.0002
    while True:
        pending = [r for r in pending if not _settled(r, writes)]
        if not pending:
            return
        if SYSTEM.monotonic() > deadline:
            states = [{part: read(r, writes) for part, (read, _, _) in _PARTS.items()} for r in pending]
            raise SettleTimeout(
                f"the replicas did not settle in {timeout:g}s: {states}\n"
                f"the stacks of the threads not idle:\n{_busy_stacks(states)}"
            )
        SYSTEM.sleep(delay)
        delay = min(0.005, delay * 2)
