"""One PATCH per stamp: two replicas, plugins reporting every second, a takeover and a handover.

The case that broke it before the write path had one owner: the new leader's first full pass sent the same
stamp twice to nodes whose plugins were writing ``Reported_`` while the stamp was in flight.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from harness.scheduler_world import World

MLU = "MLU-45013011,10,23308,0,MLU-MLU370-X4,0,true,0,hami-core:"
HANDSHAKE = "hami.io/node-handshake-mlu"
TIMINGS: dict[str, Any] = dict(
    resync=1.0, handshake_window=4.0, lease_duration=4.0, renew_deadline=3.0, retry_period=1.0
)

#: node -> [(resourceVersion, what)], what is "stamp" (a replica's PATCH) or "report" (the plugin's)
History = dict[str, list[tuple[int, str]]]


class StampLog:
    """Passes every call through and records each successful annotation PATCH with its resourceVersion."""

    def __init__(self, inner: Any, history: History) -> None:
        self._inner = inner
        self._history = history

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def patch_node_annotations(self, name: str, changes: Any, **kw: Any) -> Any:
        reply = self._inner.patch_node_annotations(name, changes, **kw)
        self._history[name].append((int(reply.resource_version), "stamp"))
        return reply


def _report_every_second(world: World, nodes: list[str], seconds: int, history: History) -> None:
    for _ in range(seconds):
        world.advance(1.0, step=0.5)
        stamp = world.clock.now().strftime("%Y.%m.%d %H:%M:%S")
        for node in nodes:
            reply = world.admin.patch_node_annotations(node, {HANDSHAKE: f"Reported_{stamp}"})
            history[node].append((int(reply.resource_version), "report"))


def test_every_stamp_is_sent_once_across_terms(world: World) -> None:
    nodes = [
        world.node(f"p{i}", {"hami.io/node-mlu-register": MLU}, {"cambricon.com/mlu": "1"}) for i in range(6)
    ]
    history: History = defaultdict(list)

    def replica(identity: str) -> Any:
        cluster = StampLog(world.cluster(), history)
        return world.scheduler("mlu", cluster=cluster, identity=identity, **TIMINGS)

    first, second = replica("one"), replica("two")
    world.run_until("a leader", lambda: first.ready() or second.ready())
    _report_every_second(world, nodes, 8, history)
    leader, follower = (first, second) if first.ready() else (second, first)
    world.stop(leader, release=False)  # a crash: the follower takes over once the Lease expires
    _report_every_second(world, nodes, 8, history)
    assert follower.ready()
    third = replica("three")
    _report_every_second(world, nodes, 3, history)
    world.stop(follower)  # a handover: released, the third takes over at its next try
    _report_every_second(world, nodes, 8, history)
    assert third.ready()
    world.settle()
    for node in nodes:
        events = [what for _, what in sorted(history[node])]
        # A stamp is only ever sent over a report: never two stamps without a report between them.
        doubled = [i for i in range(1, len(events)) if events[i] == events[i - 1] == "stamp"]
        assert not doubled, f"{node}: a stamp sent over our own stamp at {doubled}: {events}"
        assert events[0] == "stamp" and events[-1] == "stamp"  # every report was answered in the end
        assert world.annotations(node)[HANDSHAKE].startswith("Requesting_")
