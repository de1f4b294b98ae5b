"""Never delete on a view the scheduler cannot vouch for: a cleanup is conditional on the Node as judged,
and the "cleaned up, waiting for a sign of life" fact outlives the process that cleaned (spec 4.2, 5b).

In memory and on the real API server alike; on the real one the oracle is the server's audit log (who
wrote what, and what the server answered), not the daemon's own account."""

from __future__ import annotations

from typing import Any

from harness.rbac import SCHEDULER_USER
from harness.scheduler_world import WINDOW, CountingCluster, World

from hami_core.kube.port import NodeSnapshot
from hami_core.protocol.marker import fingerprint, parse_marker
from hami_core.scheduler.metrics import total

MLU_REG = "hami.io/node-mlu-register"
MLU_VALUE = "MLU-45013011,10,23308,0,MLU-MLU370-X4,0,true,0,hami-core:"
MLU_HS = "hami.io/node-handshake-mlu"
MLU_MARKER = "cleaned.hami-core.io/MLU"
DCU_REG = "hami.io/node-dcu-register"
DCU_VALUE = "DCU-1,4,16384,100,DCU-Z100,0,true,0,hami:"
DCU_HS = "hami.io/node-handshake-dcu"
DCU_MARKER = "cleaned.hami-core.io/DCU"


def reasons(world: World, node: str) -> list[str]:
    """The reasons of the Events posted about ``node``."""
    return [e["reason"] for e in world.events_about(node)]


def registered(replica: Any, node: str) -> set[str]:
    return {k for k, e in replica.cache.node(node).items() if e.state == "registered"}


class ReportFirst:
    """A replica's cluster on which a plugin's report lands on the Node right before the replica's first
    conditional patch reaches the server: the race of a report arriving between a cleanup's decision and
    its delete, made deterministic (the report is written, and answered, before the patch is sent)."""

    def __init__(self, inner: Any, admin: Any, key: str, value: str) -> None:
        self._inner = inner
        self._admin = admin
        self._key, self._value = key, value
        #: (node, the resourceVersion the patch was conditional on, the report's resourceVersion)
        self.raced: list[tuple[str, str, str]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def patch_node_annotations(
        self, name: str, changes: Any, *, resource_version: str | None = None, **more: Any
    ) -> NodeSnapshot:
        if resource_version is not None and not self.raced:
            report: NodeSnapshot = self._admin.patch_node_annotations(name, {self._key: self._value})
            self.raced.append((name, resource_version, report.resource_version))
        reply: NodeSnapshot = self._inner.patch_node_annotations(
            name, changes, resource_version=resource_version, **more
        )
        return reply


def test_a_report_landing_between_the_cleanup_decision_and_its_delete_survives(world: World) -> None:
    node = world.node("race", {MLU_REG: MLU_VALUE})  # no allocatable count: the handshake alone judges
    report = "Reported_2026-01-01 00:01:30"
    racing = ReportFirst(world.cluster(), world.admin, MLU_HS, report)
    replica = world.scheduler("mlu", cluster=racing)
    world.run_until("registered", lambda: registered(replica, node) == {"MLU"})
    world.run_until("stamped", lambda: world.annotations(node).get(MLU_HS, "").startswith("Requesting_"))
    # No report for a window: the stamp expires and the cleanup is decided; the report lands first.
    world.run_until("the race ran", lambda: racing.raced, limit=2 * WINDOW)
    ((raced_node, judged_rv, report_rv),) = racing.raced
    assert raced_node == node and int(report_rv) > int(judged_rv)
    # The delete was refused; the node was decided again on what it held: a report, a sign of life.
    world.run_until("readmitted", lambda: registered(replica, node) == {"MLU"})
    world.run_until(
        "stamped again", lambda: world.annotations(node).get(MLU_HS, "").startswith("Requesting_")
    )
    world.settle()
    assert replica.metrics.totals()["patch_conflicts"] == 1
    assert total(replica.metrics.api_requests, verb="patch", resource="nodes", result="4xx") == 1
    annotations = world.annotations(node)
    assert MLU_MARKER not in annotations and annotations[MLU_REG] == MLU_VALUE
    # the cleanup did not happen: no Event says it did (the readmission is news, and said)
    world.run_until("the readmission Event", lambda: "HamiVendorReadmitted" in reasons(world, node))
    assert "HamiVendorCleanedUp" not in reasons(world, node)
    if world.kind == "apiserver":
        from harness.audit import deleted_values, node_states

        events = world.server.audit_events(name=node, resource="nodes")
        ours = [e for e in events if e.user == SCHEDULER_USER and e.verb == "patch"]
        refused = [e for e in ours if e.code == 409]
        assert len(refused) == 1, [(e.code, e.request) for e in ours]
        (conflict,) = refused
        assert conflict.request["metadata"]["resourceVersion"] == judged_rv
        assert conflict.request["metadata"]["annotations"][MLU_HS] is None
        # the server's account: the scheduler never removed the report (nor anything else); the report
        # stood until the scheduler's stamp acknowledged it
        assert deleted_values(events, node, user=SCHEDULER_USER) == []
        states = [s.annotations.get(MLU_HS) for s in node_states(events, node)]
        assert report in states and states[-1] is not None and states[-1].startswith("Requesting_")
        assert None not in states[states.index(report) :]


def test_a_cleanup_patch_carries_the_judged_version_and_the_marker(world: World) -> None:
    node = world.node("dead", {DCU_REG: DCU_VALUE}, {"hygon.com/dcunum": "4"})
    replica = world.scheduler("dcu")
    world.run_until("registered", lambda: registered(replica, node) == {"DCU"})
    stamp = world.run_until("stamped", lambda: world.annotations(node).get(DCU_HS))
    world.admin.patch_node_status(node, {"hygon.com/dcunum": "0"})  # the plugin is gone
    world.run_until("cleaned up", lambda: DCU_MARKER in world.annotations(node))
    annotations = world.annotations(node)
    assert DCU_HS not in annotations and annotations[DCU_REG] == DCU_VALUE
    marker = parse_marker(annotations[DCU_MARKER])
    assert marker is not None
    world.run_until(
        "the cleanup Event, once the patch landed", lambda: "HamiVendorCleanedUp" in reasons(world, node)
    )
    assert (marker.register, marker.handshake) == (fingerprint(DCU_VALUE), fingerprint(stamp))
    if world.kind == "apiserver":
        events = world.server.audit_events(name=node, resource="nodes", user=SCHEDULER_USER, verbs={"patch"})
        cleanups = [e for e in events if (e.request_annotations or {}).get(DCU_HS, "") is None]
        (cleanup,) = cleanups
        assert cleanup.code == 200 and cleanup.request["metadata"]["resourceVersion"]
        assert set(cleanup.request["metadata"]["annotations"]) == {DCU_HS, DCU_MARKER}
        stamps = [e for e in events if e is not cleanup]
        assert stamps and all("resourceVersion" not in e.request["metadata"] for e in stamps)


def test_a_restarted_scheduler_does_not_readmit_a_cleaned_vendor(world: World) -> None:
    """The first process cleans a dead vendor up and stops; the next one starts with no memory, finds the
    marker, and neither stamps nor registers the vendor for a window or ten, until a sign of life."""
    node = world.node("restart", {DCU_REG: DCU_VALUE}, {"hygon.com/dcunum": "4"})
    first = world.scheduler("dcu", identity="first")
    world.run_until("registered", lambda: registered(first, node) == {"DCU"})
    world.admin.patch_node_status(node, {"hygon.com/dcunum": "0"})
    world.run_until("cleaned up", lambda: DCU_MARKER in world.annotations(node))
    marker = world.annotations(node)[DCU_MARKER]
    world.stop(first)
    second = world.scheduler("dcu", identity="second")
    world.run_until("ready", second.ready)
    world.advance(WINDOW * 3)
    assert not second.cache.node(node)
    assert second.registrar.memory(node, "DCU").awaiting_sign_of_life
    annotations = world.annotations(node)
    assert DCU_HS not in annotations and annotations[DCU_MARKER] == marker
    assert CountingCluster.of(second).calls["patch_node_annotations"] == 0  # a dead node costs no writes
    # A sign of life readmits it, and the marker goes.
    world.admin.patch_node_annotations(node, {DCU_HS: "Reported_2026-01-01 00:10:00"})
    world.run_until("readmitted", lambda: registered(second, node) == {"DCU"})
    world.run_until("marker removed", lambda: DCU_MARKER not in world.annotations(node))
    assert world.annotations(node)[DCU_HS].startswith("Requesting_")


def test_a_follower_that_took_over_does_not_readmit_the_leaders_cleanup(memory_world: World) -> None:
    world = memory_world
    node = world.node("takeover", {DCU_REG: DCU_VALUE}, {"hygon.com/dcunum": "4"})
    leader = world.scheduler("dcu", identity="leader")
    world.run_until("leading", leader.ready)
    follower = world.scheduler("dcu", identity="follower")
    world.run_until("warm", lambda: registered(follower, node) == {"DCU"})
    world.admin.patch_node_status(node, {"hygon.com/dcunum": "0"})
    world.run_until("cleaned up", lambda: DCU_MARKER in world.annotations(node))
    world.run_until("the follower saw it", lambda: not follower.cache.node(node))
    world.stop(leader, release=False)  # as if it crashed: the follower takes over once the Lease expires
    world.run_until("taken over", follower.ready)
    world.advance(WINDOW * 2)
    assert not follower.cache.node(node) and DCU_HS not in world.annotations(node)
    assert CountingCluster.of(follower).calls["patch_node_annotations"] == 0


def test_a_cleanup_refused_for_an_unrelated_change_is_made_again_and_said_once(world: World) -> None:
    """Any write to the Node (here one of another component's annotations) between the cleanup's decision
    and its patch refuses the patch; the cleanup is decided again on the newer Node and lands, and its
    Event is posted once, when it does."""
    node = world.node("unrelated", {DCU_REG: DCU_VALUE}, {"hygon.com/dcunum": "4"})
    racing = ReportFirst(world.cluster(), world.admin, "example.com/other", "changed")
    replica = world.scheduler("dcu", cluster=racing)
    world.run_until("registered", lambda: registered(replica, node) == {"DCU"})
    world.admin.patch_node_status(node, {"hygon.com/dcunum": "0"})  # the plugin is gone
    world.run_until("cleaned up", lambda: DCU_MARKER in world.annotations(node))
    assert len(racing.raced) == 1 and replica.metrics.totals()["patch_conflicts"] == 1
    assert DCU_HS not in world.annotations(node)
    world.run_until("the cleanup Event", lambda: "HamiVendorCleanedUp" in reasons(world, node))
    world.advance(WINDOW)
    assert reasons(world, node).count("HamiVendorCleanedUp") == 1
