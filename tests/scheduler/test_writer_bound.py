"""The patch writer holds no pool task per waiting node: a cold start decides a write for every node at
once, and the nodes wait in the writer's own queue, drained by at most ``max_in_flight`` pool tasks."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from harness.poll import wait_for

from hami_core.kube.memory import MemoryCluster
from hami_core.kube.port import NodeSnapshot
from hami_core.kube.ratelimit import TokenBucket
from hami_core.scheduler.view import PendingWrite
from hami_core.scheduler.writer import PatchWriter

NODES = 60
IN_FLIGHT = 4
STAMP = "hami.io/node-handshake"


class GatedCluster:
    """The in-memory cluster whose patches wait until the gate opens; records the order they were sent."""

    def __init__(self) -> None:
        self.memory = MemoryCluster()
        self.gate = threading.Event()
        self.entered: list[str] = []
        self.sent: list[str] = []
        self._lock = threading.Lock()

    def patch_node_annotations(
        self, name: str, changes: Mapping[str, str | None], **kwargs: Any
    ) -> NodeSnapshot:
        with self._lock:
            self.entered.append(name)
        self.gate.wait(10)
        with self._lock:
            self.sent.append(name)
        return self.memory.patch_node_annotations(name, changes, **kwargs)


def test_every_waiting_node_is_sent_in_order_by_at_most_max_in_flight_pool_tasks() -> None:
    cluster = GatedCluster()
    names = [f"n{i:03d}" for i in range(NODES)]
    for name in names:
        cluster.memory.create_node(name)
    applied: list[tuple[str, str]] = []
    writer = PatchWriter(
        cluster,  # type: ignore[arg-type]  # a Cluster as far as the writer goes: it only patches
        limiter=TokenBucket(1000, 1000),
        is_leader=lambda: True,
        on_applied=lambda w, reply: applied.append((w.node, reply.annotations[STAMP])),
        on_failed=lambda w, e: None,
        max_in_flight=IN_FLIGHT,
    )
    tasks: list[object] = []
    submit = writer._pool.submit

    def counted(*a: Any, **k: Any) -> Any:
        tasks.append(a)
        return submit(*a, **k)

    writer._pool.submit = counted  # type: ignore[method-assign]
    try:
        for seq, name in enumerate(names):
            writer.submit(PendingWrite(node=name, uid="", patch={STAMP: "first"}, seq=seq))
        # a second write for a node still waiting joins its first in one request
        writer.submit(PendingWrite(node=names[-1], uid="", patch={STAMP: "second"}, seq=NODES))
        assert len(tasks) == IN_FLIGHT  # not one per node
        assert not writer.idle()
        wait_for("the first requests", lambda: len(cluster.entered) == IN_FLIGHT)
        assert sorted(cluster.entered) == names[:IN_FLIGHT]  # the nodes in the order their writes came
        cluster.gate.set()
        assert writer.wait_idle(10)
    finally:
        writer.close(5)
    assert sorted(cluster.sent) == names  # one request per node
    assert dict(applied) == {**dict.fromkeys(names, "first"), names[-1]: "second"}
    assert len(applied) == NODES + 1  # both writes of the last node answered by its one reply
