"""The daemon's worker stepped by hand on the in-memory cluster: the order of leadership and evaluations."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pytest
from harness.scheduler_world import wait_for

from hami_core.kube.memory import MemoryCluster
from hami_core.plugins.manager import load_drivers
from hami_core.scheduler.config import SchedulerConfig
from hami_core.scheduler.daemon import Scheduler

T0 = datetime(2026, 11, 29, 18, 0, 0, tzinfo=timezone(timedelta(hours=8)))
REGISTER = "hami.io/node-mlu-register"
MLU = "MLU-1,10,23308,0,MLU-MLU370-X4,0,true:"


@pytest.fixture
def scheduler() -> Iterator[Scheduler]:
    _, drivers = load_drivers(["mlu"])
    cluster = MemoryCluster()
    s = Scheduler(cluster, [d.rules() for d in drivers], SchedulerConfig(http_port=None, identity="a"),
                  clock=lambda: T0)
    s.reflector.start()  # the worker and the elector are stepped by the test
    yield s
    s.reflector.stop(5)
    s.writer.close(5)


def drain(s: Scheduler) -> None:
    while (name := s.queue.get(0.05)) is not None:
        s._evaluate(name)
    s.writer.wait_idle(5)


def test_an_evaluation_between_winning_the_lease_and_the_term_start_writes_nothing(
    scheduler: Scheduler,
) -> None:
    cluster = scheduler.cluster
    cluster.create_node("n1", annotations={REGISTER: MLU})
    wait_for("watched", lambda: scheduler.reflector.snapshot("n1") is not None)
    scheduler.elector.step()  # the lease is won; the worker has not taken the change in yet
    assert scheduler.elector.is_leader()
    scheduler._evaluate("n1")
    scheduler.writer.wait_idle(5)
    assert cluster.request_count("patch", "nodes") == 0  # type: ignore[attr-defined]
    # The term starts (in-flight stamps forgotten, every node queued): one stamp, written once.
    scheduler._start_term_if_due()
    drain(scheduler)
    drain(scheduler)  # a resync before the watch shows the stamp: still in flight, not written again
    assert cluster.request_count("patch", "nodes") == 1  # type: ignore[attr-defined]
    stamp = cluster.get_node("n1").annotations["hami.io/node-handshake-mlu"]  # type: ignore[attr-defined]
    assert stamp == "Requesting_2026-11-29 18:00:00"
