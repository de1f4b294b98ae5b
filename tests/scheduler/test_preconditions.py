"""The precondition a conditional write carries is the server's version of the Node the decision read,
never a version of this replica's own overlay; one request carries one precondition; a conflict is
decided again once the watch shows the Node past it."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from harness.admin import MemoryCluster
from harness.scheduler_world import WINDOW, World, wait_for

from hami_core.kube.port import Conflict, NodeSnapshot
from hami_core.kube.ratelimit import TokenBucket
from hami_core.scheduler.view import NodeView, PendingWrite
from hami_core.scheduler.writer import PatchWriter

HS = "hami.io/node-handshake-dcu"
MARKER = "cleaned.hami-core.io/DCU"


def snapshot(rv: str, **annotations: str) -> NodeSnapshot:
    return NodeSnapshot(name="n1", uid="u1", resource_version=rv, annotations=annotations)


def test_the_precondition_is_the_servers_version_under_the_overlay() -> None:
    watched = {"n1": snapshot("10", **{HS: "Requesting_1"})}
    view = NodeView(watched.get)
    stamp = view.expect(view.get("n1"), {HS: "Requesting_2"})  # type: ignore[arg-type]
    assert stamp.precondition is None  # a stamp is unconditional
    shown = view.get("n1")
    assert shown is not None and shown.annotations[HS] == "Requesting_2" and shown.resource_version == "10"
    # a cleanup decided over the stamp still unsent: conditional on the server's version 10, and sent in
    # the same request as the stamp (the writer merges them), so 10 is exactly what was judged
    cleanup = view.expect(shown, {HS: None, MARKER: "m"}, conditional=True)
    assert cleanup.precondition == "10"
    # the stamp's reply shows the server at 11: a write decided now is conditional on 11
    view.applied(stamp, snapshot("11", **{HS: "Requesting_2"}))
    view.failed(cleanup)
    again = view.get("n1")
    assert again is not None and again.resource_version == "11"
    assert view.expect(again, {HS: None}, conditional=True).precondition == "11"


class RecordingCluster:
    """The in-memory cluster, recording each patch request with its precondition; the first request
    waits at the gate (so that later writes queue behind it)."""

    def __init__(self) -> None:
        self.memory = MemoryCluster()
        self.gate = threading.Event()
        self.requests: list[tuple[dict[str, str | None], str | None]] = []

    def patch_node_annotations(
        self,
        name: str,
        changes: Mapping[str, str | None],
        *,
        resource_version: str | None = None,
        **more: Any,
    ) -> NodeSnapshot:
        self.requests.append((dict(changes), resource_version))
        self.gate.wait(10)
        return self.memory.patch_node_annotations(name, changes, resource_version=resource_version, **more)


def test_one_request_carries_one_precondition_and_a_conflict_is_reported_as_such() -> None:
    cluster = RecordingCluster()
    created = cluster.memory.create_node("n1")
    rv = created.resource_version
    failed: list[tuple[PendingWrite, Exception]] = []
    applied: list[PendingWrite] = []
    writer = PatchWriter(
        cluster,  # type: ignore[arg-type]
        limiter=TokenBucket(1000, 1000),
        is_leader=lambda: True,
        on_applied=lambda w, reply: applied.append(w),
        on_failed=lambda w, e: failed.append((w, e)),
    )
    try:
        writer.submit(PendingWrite(node="n1", uid="", patch={"a": "1"}, seq=0))
        wait_for("the first request", lambda: cluster.requests)
        # queued behind it: a stamp, a cleanup on the current version, a cleanup on an older one
        writer.submit(PendingWrite(node="n1", uid="", patch={"b": "1"}, seq=1))
        writer.submit(PendingWrite(node="n1", uid="", patch={HS: None}, seq=2, precondition=str(int(rv) + 1)))
        writer.submit(PendingWrite(node="n1", uid="", patch={MARKER: "m"}, seq=3, precondition=rv))
        cluster.gate.set()
        assert writer.wait_idle(10)
    finally:
        writer.close(5)
    assert cluster.requests == [
        ({"a": "1"}, None),
        ({"b": "1", HS: None}, str(int(rv) + 1)),  # the stamp goes with the first conditional write
        ({MARKER: "m"}, rv),  # another precondition: a request of its own
    ]
    assert [w.seq for w in applied] == [0, 1, 2]
    ((write, error),) = failed
    assert write.seq == 3 and isinstance(error, Conflict)
    assert writer.metrics.totals()["patch_conflicts"] == 1


class ChangeFirst:
    """A replica's cluster on which something the scheduler does not read (another component's
    annotation) changes the Node right before its first conditional patch: the conflict is about a
    version, not about anything the cleanup judged."""

    def __init__(self, inner: Any, admin: Any) -> None:
        self._inner, self._admin = inner, admin
        self.changed = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def patch_node_annotations(
        self, name: str, changes: Any, *, resource_version: str | None = None, **more: Any
    ) -> Any:
        if resource_version is not None and not self.changed:
            self.changed += 1
            self._admin.patch_node_annotations(name, {"example.com/inventory": "v2"})
        return self._inner.patch_node_annotations(name, changes, resource_version=resource_version, **more)


def test_a_conflict_over_an_unrelated_change_is_decided_again_and_the_cleanup_lands(world: World) -> None:
    """The change is trimmed away by the store (the registrar would not look again for it): the node is
    queued again because the watch shows it past the version that conflicted."""
    node = world.node("unrelated", {"hami.io/node-dcu-register": "DCU-1,4,16384,100,DCU-Z100,0,true,0,hami:"})
    cluster = ChangeFirst(world.cluster(), world.admin)
    replica = world.scheduler("dcu", cluster=cluster)
    world.run_until("stamped", lambda: HS in world.annotations(node))
    world.run_until("cleaned up", lambda: MARKER in world.annotations(node), limit=3 * WINDOW)
    assert cluster.changed == 1 and HS not in world.annotations(node)
    assert world.annotations(node)["example.com/inventory"] == "v2"
    world.settle()
    totals = replica.metrics.totals()
    assert totals["patch_conflicts"] == 1 and totals["cleanups"] == 1
