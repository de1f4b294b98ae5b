"""The daemon's worker stepped by hand on the in-memory cluster: the order of leadership and evaluations."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from typing import Any

import pytest
from harness.admin import MemoryCluster
from harness.poll import wait_for

from hami_core.clock import FakeClock
from hami_core.kube.elector import LeaderElector
from hami_core.plugins.manager import load_drivers
from hami_core.scheduler.config import SchedulerConfig
from hami_core.scheduler.daemon import Scheduler

T0 = datetime(2026, 11, 29, 18, 0, 0, tzinfo=timezone(timedelta(hours=8)))
REGISTER = "hami.io/node-mlu-register"
HANDSHAKE = "hami.io/node-handshake-mlu"
MLU = "MLU-1,10,23308,0,MLU-MLU370-X4,0,true:"


@pytest.fixture
def scheduler() -> Iterator[Scheduler]:
    _, drivers = load_drivers(["mlu"])
    cluster = MemoryCluster()
    s = Scheduler(
        cluster,
        [d.rules() for d in drivers],
        SchedulerConfig(http_port=None, identity="a"),
        clock=FakeClock(T0),
    )
    s.reflector.start()  # the worker and the elector are stepped by the test
    yield s
    s.reflector.stop(5)
    s.writer.close(5)


def won(s: Scheduler) -> None:
    """The elector wins the lease; the term's fresh list (spec 5b) comes back before the test goes on."""
    assert isinstance(s.elector, LeaderElector)
    s.elector.step()
    assert s.elector.is_leader()
    wait_for("the term's fresh list", lambda: not s.reflector.listing_due())


def drain(s: Scheduler) -> None:
    """Run the worker until its queue is empty, as its thread would."""
    while (key := s.queue.get(0)) is not None:
        try:
            if key == " term":
                s._start_term()
            elif key:
                s._evaluate(key)
        finally:
            s.queue.done(key)
    s.writer.wait_idle(5)


def test_an_evaluation_between_winning_the_lease_and_the_term_start_writes_nothing(
    scheduler: Scheduler,
) -> None:
    cluster: Any = scheduler.cluster  # the in-memory one
    cluster.create_node("n1", annotations={REGISTER: MLU})
    wait_for("watched", lambda: scheduler.reflector.snapshot("n1") is not None)
    won(scheduler)  # the lease is won; the worker has not taken the change in yet
    scheduler._evaluate("n1")
    scheduler.writer.wait_idle(5)
    assert cluster.request_count("patch", "nodes") == 0
    # The term starts (every node queued): one stamp, written once.
    drain(scheduler)
    assert cluster.request_count("patch", "nodes") == 1
    stamp = cluster.get_node("n1").annotations[HANDSHAKE]
    assert stamp == "Requesting_2026-11-29 18:00:00"


def test_a_resync_before_the_watch_shows_a_stamp_does_not_write_it_again(scheduler: Scheduler) -> None:
    """The view shows the stamp from the moment it is decided: no evaluation can decide it again."""
    cluster: MemoryCluster = scheduler.cluster  # type: ignore[assignment]
    cluster.create_node("n1", annotations={REGISTER: MLU})
    wait_for("watched", lambda: scheduler.reflector.snapshot("n1") is not None)
    won(scheduler)
    scheduler.queue.add(" term")
    key = scheduler.queue.get(0)
    assert key == " term"
    scheduler._start_term()
    scheduler.queue.done(key)
    assert scheduler.queue.get(0) == "n1"
    scheduler._evaluate("n1")  # decides the stamp: shown by the view before any reply
    scheduler.queue.done("n1")
    assert (
        getattr(scheduler.view.get("n1"), "annotations", {}).get(HANDSHAKE)
        == "Requesting_2026-11-29 18:00:00"
    )
    for _ in range(3):  # a resync, a term start, a timer: all read through the view
        scheduler._evaluate("n1")
    drain(scheduler)
    assert cluster.request_count("patch", "nodes") == 1


def test_a_failed_patch_leaves_the_view_and_the_node_is_decided_again(scheduler: Scheduler) -> None:
    cluster: MemoryCluster = scheduler.cluster  # type: ignore[assignment]
    cluster.create_node("n1", annotations={REGISTER: MLU})
    wait_for("watched", lambda: scheduler.reflector.snapshot("n1") is not None)
    won(scheduler)
    cluster.fail_next(1, verb="patch")
    drain(scheduler)  # the term starts; the stamp fails and leaves the view
    assert scheduler.view.pending() == 0
    assert HANDSHAKE not in getattr(scheduler.view.get("n1"), "annotations", {HANDSHAKE: "no node"})
    assert scheduler.queue.delayed() == 1  # the node, after its backoff
    assert cluster.request_count("patch", "nodes") == 1
