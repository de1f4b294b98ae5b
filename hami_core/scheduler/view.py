"""The read-your-writes view of Nodes (client-go's ``MutationCache``): the watched Node with this
replica's writes not yet seen back laid over it, keeping the server's resourceVersion; the write's life
and why: docs/architecture.md, "The write path, with one owner".
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Mapping

import attrs

from hami_core.kube.port import NodeSnapshot, rv_number
from hami_core.scheduler.trim import shared_short

__all__ = ["NodeView", "PendingWrite", "newer"]

Patch = Mapping[str, str | None]


@attrs.define(eq=False)
class PendingWrite:
    """One annotation merge patch this replica decided to send to one Node."""

    node: str
    uid: str
    patch: Patch
    #: Orders the writes of one node (they are sent in this order).
    seq: int
    #: The Node as the PATCH reply showed it; ``None`` while the request is in flight.
    reply: NodeSnapshot | None = None
    #: The resourceVersion the Node must still have for the write to land (``None``: unconditional).
    precondition: str | None = None


def newer(seen: str, than: str) -> bool:
    """resourceVersion ``seen`` is newer than ``than``: numerically, as etcd's revisions are; a version that
    is not a number is only known to differ."""
    a, b = rv_number(seen), rv_number(than)
    return a > b if a is not None and b is not None else seen != than


def _not_older(seen: NodeSnapshot, reply: NodeSnapshot) -> bool:
    """``seen`` is at least as new as ``reply`` (the same object; another object: the write was about one
    that is gone)."""
    return seen.uid != reply.uid or not newer(reply.resource_version, seen.resource_version)


def _overlay(node: NodeSnapshot, patch: Patch) -> NodeSnapshot:
    annotations = dict(node.annotations)
    for key, value in patch.items():
        if value is None:
            annotations.pop(key, None)
        else:
            annotations[key] = value
    return attrs.evolve(node, annotations=annotations)


class NodeView:
    """``get(node)`` = the watched Node ⊕ this replica's writes not yet seen back. Thread-safe."""

    def __init__(self, watched: Callable[[str], NodeSnapshot | None]) -> None:
        self._watched = watched
        self._lock = threading.Lock()
        self._pending: dict[str, list[PendingWrite]] = {}
        self._seq = itertools.count()

    def get(self, name: str) -> NodeSnapshot | None:
        """The Node as it is once this replica's writes land; ``None`` when the watch shows no Node."""
        with self._lock:  # both read under the lock: a confirmation cannot fall between them
            node = self._watched(name)
            writes = list(self._pending.get(name, ()))
        if node is None or not writes:
            return node
        for write in (w for w in writes if w.uid == node.uid):
            if write.reply is None:
                node = _overlay(node, write.patch)
            elif not _not_older(node, write.reply):
                node = write.reply
        return node

    def expect(self, node: NodeSnapshot, patch: Patch, *, conditional: bool = False) -> PendingWrite:
        """A write to ``node`` (as ``get`` showed it) was decided: show it from now on; ``conditional``: it
        may land only on the version ``node`` shows. Returns the handle for the outcome."""
        # a stamp value is the same for every node decided within one second: one string for all
        shared = {key: None if value is None else shared_short(value) for key, value in patch.items()}
        write = PendingWrite(
            node=node.name,
            uid=node.uid,
            patch=shared,
            seq=next(self._seq),
            precondition=node.resource_version if conditional and node.resource_version else None,
        )
        with self._lock:
            self._pending.setdefault(node.name, []).append(write)
        return write

    def applied(self, write: PendingWrite, reply: NodeSnapshot) -> bool:
        """The PATCH of ``write`` answered with ``reply``: show the reply until the watch catches up. True
        when the watch had shown the Node past the reply already: evaluations made while the request was
        in flight judged the patch laid over newer changes, so the caller evaluates the node again."""
        with self._lock:
            if write not in self._pending.get(write.node, ()):
                return False
            current = self._watched(write.node)
            if current is not None and _not_older(current, reply):
                self._drop(write)
                return True
            write.reply = reply
            return False

    def failed(self, write: PendingWrite) -> None:
        """The PATCH of ``write`` failed or was never sent: the view stops showing it."""
        with self._lock:
            self._drop(write)

    def observed(self, node: NodeSnapshot) -> None:
        """The watch shows ``node``: drop the writes it confirms (replied, and not newer than it)."""
        with self._lock:
            for write in list(self._pending.get(node.name, ())):
                if write.uid != node.uid or (write.reply is not None and _not_older(node, write.reply)):
                    self._drop(write)

    def deleted(self, name: str) -> None:
        """The Node is gone: its writes are moot."""
        with self._lock:
            self._pending.pop(name, None)

    def pending(self) -> int:
        """Writes decided and not yet confirmed by the watch (nor failed)."""
        with self._lock:
            return sum(len(w) for w in self._pending.values())

    def _drop(self, write: PendingWrite) -> None:
        writes = self._pending.get(write.node, [])
        if write in writes:
            writes.remove(write)
        if not writes:
            self._pending.pop(write.node, None)
