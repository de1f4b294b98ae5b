"""The leader elector on a fake clock: at no moment do two replicas both believe they lead."""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import UTC, datetime

from harness.busy_clock import BusyClock
from harness.poll import wait_for

from hami_core.clock import FakeClock
from hami_core.kube.elector import ElectionConfig, LeaderElector
from hami_core.kube.memory import MemoryCluster
from hami_core.kube.port import Lease, Unavailable


class Clock(FakeClock):
    """The fake clock, set by seconds since the test's start (the tests step electors by hand)."""

    def __init__(self) -> None:
        super().__init__(datetime(2026, 1, 1, tzinfo=UTC))
        self._origin = self.monotonic()

    @property
    def seconds(self) -> float:
        return self.monotonic() - self._origin

    @seconds.setter
    def seconds(self, value: float) -> None:
        self.advance(value - self.seconds)


class Path:
    """One replica's way to the API server: ``up``, ``down``, or ``slow`` (the next Lease update is
    applied by the server at once, but its reply arrives ``delay`` seconds later; then the path is down)."""

    def __init__(
        self,
        cluster: MemoryCluster,
        clock: Clock,
        *,
        on_applied: Callable[[], None] = lambda: None,
        delay: float = 0.0,
    ) -> None:
        self.cluster, self.clock, self.on_applied, self.delay = cluster, clock, on_applied, delay
        self.mode = "up"

    def _check(self) -> None:
        if self.mode == "down":
            raise Unavailable("connection refused")

    def get_lease(self, namespace: str, name: str) -> Lease:
        self._check()
        return self.cluster.get_lease(namespace, name)

    def create_lease(self, lease: Lease) -> Lease:
        self._check()
        return self.cluster.create_lease(lease)

    def update_lease(self, lease: Lease) -> Lease:
        self._check()
        result = self.cluster.update_lease(lease)
        if self.mode == "slow":
            self.on_applied()
            self.clock.seconds += self.delay
            self.mode = "down"
        return result


def elector(path: Path | MemoryCluster, clock: Clock, identity: str, **timings: float) -> LeaderElector:
    config = ElectionConfig(namespace="kube-system", name="hami-scheduler", identity=identity, **timings)
    return LeaderElector(path, config, clock=clock)  # type: ignore[arg-type]


def test_a_slow_renewal_reply_counts_from_when_it_was_sent() -> None:
    cluster, clock = MemoryCluster(), Clock()
    b = elector(cluster, clock, "b")
    path_a = Path(cluster, clock, on_applied=b.step, delay=8.0)  # b sees the renewal as it is applied
    a = elector(path_a, clock, "a")
    a.step()
    assert a.is_leader()
    clock.seconds = 2.0
    path_a.mode = "slow"
    a.step()  # applied at t=2, the reply reaches a at t=10, then a is cut off
    assert a.is_leader()
    for t in range(11, 30):
        clock.seconds = float(t)
        a.step()
        b.step()
        assert not (a.is_leader() and b.is_leader()), f"two leaders at t={t}"
    assert b.is_leader() and not a.is_leader()


def test_a_follower_waits_for_the_duration_the_holder_recorded() -> None:
    cluster, clock = MemoryCluster(), Clock()
    path_a = Path(cluster, clock)
    a = elector(path_a, clock, "a", lease_duration=60.0, renew_deadline=40.0, retry_period=2.0)
    b = elector(cluster, clock, "b")  # 15 s by default: configured differently, as during a rollout
    a.step()
    b.step()
    assert cluster.get_lease("kube-system", "hami-scheduler").lease_duration_seconds == 60
    path_a.mode = "down"
    took_over = None
    for t in range(2, 80, 2):
        clock.seconds = float(t)
        a.step()
        b.step()
        assert not (a.is_leader() and b.is_leader()), f"two leaders at t={t}"
        if took_over is None and b.is_leader():
            took_over = t
    assert took_over is not None and 60 <= took_over <= 62


def test_a_released_lease_is_taken_at_once() -> None:
    cluster, clock = MemoryCluster(), Clock()
    a, b = elector(cluster, clock, "a"), elector(cluster, clock, "b")
    a.step()
    b.step()
    assert a.is_leader() and not b.is_leader()
    a.release()
    clock.seconds = 2.0
    b.step()
    assert b.is_leader() and not a.is_leader()
    assert cluster.get_lease("kube-system", "hami-scheduler").lease_transitions == 1


def test_a_fractional_lease_duration_is_recorded_rounded_up() -> None:
    # 10.5 s recorded as 10 would let a follower take over before the holder's 10.2 s deadline ran out.
    timings = {"lease_duration": 10.5, "renew_deadline": 10.2, "retry_period": 1.0}
    cluster, clock = MemoryCluster(), Clock()
    path_a = Path(cluster, clock)
    a, b = elector(path_a, clock, "a", **timings), elector(cluster, clock, "b", **timings)
    a.step()
    b.step()
    assert cluster.get_lease("kube-system", "hami-scheduler").lease_duration_seconds == 11
    path_a.mode = "down"
    for step in range(1, 300):
        clock.seconds = step * 0.05
        a.step()
        b.step()
        assert not (a.is_leader() and b.is_leader()), f"two leaders at t={clock.seconds:.2f}"
    assert b.is_leader()


class Steps(MemoryCluster):
    """The in-memory cluster, noting the monotonic time of each step (each begins by reading the Lease)."""

    def __init__(self, clock: FakeClock) -> None:
        super().__init__()
        self.clock = clock
        self.steps: list[float] = []

    def get_lease(self, namespace: str, name: str) -> Lease:
        self.steps.append(self.clock.monotonic())
        return super().get_lease(namespace, name)


def test_a_driver_moving_the_clock_while_the_elector_is_idle_never_strands_its_step() -> None:
    # The harness and ``hami simulate`` move a fake clock only while every loop is idle. If the elector
    # could say when its step is due and then begin a wait measured from a later reading, the time
    # would stop at the moment it said, its wait would end later, and no one would move the clock again.
    clock = BusyClock("hami-elector")
    cluster = Steps(clock)
    config = ElectionConfig(namespace="kube-system", name="hami-scheduler", identity="a")
    a = LeaderElector(cluster, config, clock=clock)
    stop = clock.event()
    thread = threading.Thread(target=a.run, args=(stop,), name="hami-elector", daemon=True)
    thread.start()

    def drive() -> bool:
        if a.idle():
            clock.advance(1.0)
        return len(cluster.steps) >= 6

    try:
        wait_for("six steps, the clock moved only while the elector is idle", drive, interval=0)
        assert [at - cluster.steps[0] for at in cluster.steps[:6]] == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
        assert a.is_leader()
    finally:
        stop.set()
        a.wake()
        thread.join(20)
    assert not thread.is_alive()
