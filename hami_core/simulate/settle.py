"""Before fake time moves, every replica must have *settled*: seen each Node write (``NodeWrites``) with
nothing left to do until the clock moves. The real-time wait is for what will happen, never for time."""

from __future__ import annotations

import sys
import threading
import traceback
from collections.abc import Iterable

from hami_core.clock import SYSTEM
from hami_core.kube.port import NodeSnapshot
from hami_core.scheduler.daemon import Scheduler

__all__ = ["NodeWrites", "SettleTimeout", "wait_settled"]


class SettleTimeout(AssertionError):
    """The replicas did not settle in time; the message says what each was still doing."""


def _rv(value: str) -> int:
    return int(value) if value.isdigit() else -1


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


#: The threads behind each part of a replica that can keep it from settling, by name prefix.
_THREADS = {
    "synced": "hami-node-reflector",
    "caught_up": "hami-node-reflector",
    "listing_due": "hami-node-reflector",
    "queue_idle": "hami-worker",
    "writer_idle": "hami-patch",
    "pending_writes": "hami-node-reflector",
    "events_idle": "hami-events",
    "elector_idle": "hami-elector",
}
#: The parts that keep a replica busy while true (a count: above 0); the others while false.
_BUSY_WHILE_TRUE = {"listing_due", "pending_writes"}


def _busy_stacks(states: list[dict[str, object]]) -> str:
    """The stack of every thread behind a part not idle (each replica names its threads alike)."""
    prefixes = {
        _THREADS[part]
        for state in states
        for part, value in state.items()
        if part in _THREADS and (bool(value) if part in _BUSY_WHILE_TRUE else value is False)
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
            states = [
                dict(
                    identity=r.config.identity,
                    backing_off=r.reflector.backing_off(),
                    synced=r.reflector.has_synced,
                    caught_up=writes.caught_up(r),
                    listing_due=r.reflector.listing_due(),
                    queue_idle=r.queue.idle(),
                    writer_idle=r.writer.idle(),
                    pending_writes=r.view.pending(),
                    events_idle=r.events.idle(),
                    elector_idle=r.elector.idle(),
                )
                for r in pending
            ]
            raise SettleTimeout(
                f"the replicas did not settle in {timeout:g}s: {states}\n"
                f"the stacks of the threads not idle:\n{_busy_stacks(states)}"
            )
        SYSTEM.sleep(delay)
        delay = min(0.005, delay * 2)
