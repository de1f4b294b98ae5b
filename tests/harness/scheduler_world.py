"""The world the scheduler's end-to-end tests run in: in memory and on the real kube-apiserver alike.

A ``World`` gives a test an admin view for setting nodes up (created with a label unique to the test,
which the scheduler selects on, since Nodes are cluster-scoped), and makes scheduler replicas that
reach the cluster as the ``hami-scheduler`` identity with its RBAC only.

Time is a ``FakeClock`` the world owns and every replica runs on. ``settle()`` waits (in real time, for
something to *happen*) until every running replica has taken in every change the test made and has
nothing left to do until the clock moves; ``advance(seconds)`` moves the clock in small steps, settling
after each; ``run_until(what, predicate)`` advances until the predicate holds. So a test proves that
something did *not* happen by advancing the fake clock past the moment it would have, never by sleeping.
"""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from hami_core.kube.client import KubeCluster
from hami_core.plugins.manager import load_drivers
from hami_core.protocol.decide import VendorRules
from hami_core.scheduler.config import SchedulerConfig
from hami_core.scheduler.daemon import Scheduler
from hami_core.scheduler.selector import NodeSelector
from hami_core.simulate.settle import NodeWrites, wait_settled
from harness.admin import AdminKubeCluster, MemoryCluster
from harness.apiserver import ApiServer
from harness.clock import WatchedClock
from harness.poll import wait_for as wait_for  # re-exported: tests import it from here too
from harness.tcpproxy import TcpProxy

#: Protocol timings as in production (time is fake, so they cost nothing to wait out).
WINDOW = 60.0
FAST = dict(
    handshake_window=WINDOW,
    resync=15.0,
    lease_duration=15.0,
    renew_deadline=10.0,
    retry_period=2.0,
    http_host="127.0.0.1",  # a replica's /status: loopback only (see docs/testing.md)
    http_port=0,
)
#: How far the fake clock moves between two settles.
STEP = 1.0


class CountingCluster:
    """Passes every port call through and counts it by method name: the requests a replica made."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.calls: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if not callable(attr):
            return attr

        def counted(*args: Any, **kwargs: Any) -> Any:
            self.calls[name] += 1
            return attr(*args, **kwargs)

        return counted

    @staticmethod
    def of(replica: Scheduler) -> CountingCluster:
        """The counting cluster of a replica ``World.scheduler`` made without a cluster of its own."""
        cluster = replica.cluster
        assert isinstance(cluster, CountingCluster), type(cluster)
        return cluster


class TrackingAdmin:
    """The admin's cluster, remembering the latest state of every Node it wrote (``NodeWrites``), so
    ``World.settle`` knows when the replicas' watches have caught up."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.writes = NodeWrites()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def create_node(self, name: str, **kw: Any) -> Any:
        return self.writes.saw(self._inner.create_node(name, **kw))

    def patch_node_annotations(self, name: str, changes: Any, **kw: Any) -> Any:
        return self.writes.saw(self._inner.patch_node_annotations(name, changes, **kw))

    def patch_node_status(self, name: str, allocatable: Any, **kw: Any) -> Any:
        return self.writes.saw(self._inner.patch_node_status(name, allocatable, **kw))

    def merge_patch_node(self, name: str, patch: Any) -> Any:
        return self.writes.saw(self._inner.merge_patch_node(name, patch))

    def delete_node(self, name: str) -> None:
        self._inner.delete_node(name)
        self.writes.deleted(name)


class SkewedClock:
    """A fake clock whose wall time is ``skew`` seconds off another's (another machine's clock)."""

    def __init__(self, base: WatchedClock, skew: float) -> None:
        self._base = base
        self._skew = timedelta(seconds=skew)

    def now(self) -> datetime:
        return self._base.now() + self._skew

    def __getattr__(self, name: str) -> Any:
        return getattr(self._base, name)


class World:
    def __init__(
        self,
        kind: str,
        admin: Any,
        namespace: str,
        make_cluster: Callable[..., Any],
        server: ApiServer | None = None,
    ) -> None:
        self.kind = kind
        self._server = server
        self.admin = TrackingAdmin(admin)
        self.namespace = namespace
        self.label = {"hami-test": uuid.uuid4().hex[:12]}
        self._make_cluster = make_cluster
        self.clock = WatchedClock()
        self.replicas: list[Scheduler] = []
        self._started: set[int] = set()
        self._stopped: set[int] = set()
        _, drivers = load_drivers()
        self.drivers = {d.name: d for d in drivers}

    @property
    def server(self) -> ApiServer:
        """The real API server the world runs on; only a test of that tier asks."""
        if self._server is None:
            raise AttributeError(f"the {self.kind} world runs on no API server")
        return self._server

    def rules(self, *names: str) -> list[VendorRules]:
        return [self.drivers[n].rules() for n in (names or sorted(self.drivers))]

    def node(
        self,
        suffix: str,
        annotations: Mapping[str, str] | None = None,
        allocatable: Mapping[str, str] | None = None,
        *,
        capacity: Mapping[str, str] | None = None,
    ) -> str:
        """A Node of the world; ``capacity`` (when given) differs from the allocatable, else is the same."""
        name = f"{suffix}-{uuid.uuid4().hex[:8]}"
        self.admin.create_node(name, labels=self.label, annotations=dict(annotations or {}))
        if allocatable or capacity:
            self.admin.patch_node_status(
                name, dict(allocatable or {}), capacity=None if capacity is None else dict(capacity)
            )
        return name

    def events_about(self, node: str) -> list[dict[str, Any]]:
        """The Events about ``node``, oldest first (Events about Nodes live in ``default``; the server may
        hold others there, about objects of any kind)."""
        found = [e for e in self.admin.events("default") if e.get("involvedObject", {}).get("name") == node]
        return sorted(found, key=lambda e: int(e["metadata"]["resourceVersion"]))

    def annotations(self, name: str) -> Mapping[str, str]:
        return dict(self.admin.get_node(name).annotations)

    def cluster(self, *, proxy: TcpProxy | None = None) -> CountingCluster:
        return CountingCluster(self._make_cluster(proxy))

    def scheduler(
        self,
        *vendors: str,
        cluster: Any = None,
        start: bool = True,
        wall_skew: float = 0.0,
        rules: Sequence[VendorRules] | None = None,
        **overrides: Any,
    ) -> Scheduler:
        """A replica on the world's clock (``wall_skew``: its wall clock that many seconds ahead, or
        behind when negative, as on another machine; its monotonic time and waits are the world's)."""
        options: dict[str, Any] = {
            **FAST,
            "lease_namespace": self.namespace,
            "node_selector": NodeSelector(self.label),
            **overrides,
        }
        clock: Any = SkewedClock(self.clock, wall_skew) if wall_skew else self.clock
        replica = Scheduler(
            cluster if cluster is not None else self.cluster(),
            list(rules) if rules is not None else self.rules(*vendors),
            SchedulerConfig(**options),
            clock=clock,
        )
        self.replicas.append(replica)
        if start:
            self.start(replica)
        return replica

    def start(self, replica: Scheduler) -> None:
        self._started.add(id(replica))
        replica.start()

    def stop(self, replica: Scheduler, *, release: bool = True) -> None:
        """Stop one replica (``release=False``: as if it crashed, leaving its Lease to expire)."""
        self._stopped.add(id(replica))
        replica.stop(5, release=release)

    def stop_all(self) -> None:
        for replica in self.replicas:
            if id(replica) not in self._stopped:
                self.stop(replica)

    def running(self) -> list[Scheduler]:
        return [r for r in self.replicas if id(r) in self._started and id(r) not in self._stopped]

    def settle(self, timeout: float = 120.0) -> None:
        """Wait until every running replica has seen every change made here and has nothing left to do
        until the clock moves. The bound only ends a wait that is stuck: on a busy machine a replica's
        Lease round trip on the real API server has taken most of 30 s, so it is generous."""
        wait_settled(self.running(), self.admin.writes, timeout=timeout)

    def advance(self, seconds: float, step: float = STEP) -> None:
        """Move the fake clock by ``seconds``, ``step`` at a time, settling before and after each step."""
        self.settle()
        remaining = seconds
        while remaining > 1e-9:
            moved = min(step, remaining)
            self.clock.advance(moved)
            remaining -= moved
            self.settle()

    def paced(self, seconds: float, until: Callable[[], Any] | None = None, step: float = STEP) -> Any:
        """Advance the fake clock by up to ``seconds``, never faster than real time passes (so the
        replicas' time does not run ahead of the wire's: the API server's watch timeouts and bookmarks,
        the clients' read timeouts), settling after each step; stops early once ``until()`` holds and
        returns its value (``None`` without one). For faults on the real API server only."""
        moved = 0.0
        while moved < seconds - 1e-9:
            if until is not None and (value := until()):
                return value
            started = time.monotonic()
            self.advance(min(step, seconds - moved), step=step)
            moved += step
            time.sleep(max(0.0, step - (time.monotonic() - started)))
        return until() if until is not None else None

    def run_until(
        self, what: str, predicate: Callable[[], Any], limit: float = 300.0, step: float = STEP
    ) -> Any:
        """Advance the fake clock until ``predicate`` holds; fails after ``limit`` fake seconds."""
        waited = 0.0
        while True:
            self.settle()
            value = predicate()
            if value:
                return value
            if waited >= limit:
                raise AssertionError(f"{what}: not after {limit:g} s of fake time")
            self.clock.advance(step)
            waited += step


def _world(kind: str, request: pytest.FixtureRequest) -> World:
    if kind == "memory":
        memory = MemoryCluster()
        namespace = f"t-{uuid.uuid4().hex[:8]}"
        memory.create_namespace(namespace)
        w = World("memory", memory, namespace, lambda proxy: memory)
    else:
        w = world_on(request.getfixturevalue("apiserver"), request.getfixturevalue("apiserver_namespace"))
    return w


def world_on(server: ApiServer, namespace: str) -> World:
    """A world on a real API server (``harness.apiserver.ApiServer``) and a namespace of it."""
    admin = AdminKubeCluster.from_kubeconfig(server.kubeconfig("admin"))

    def make(proxy: TcpProxy | None) -> KubeCluster:
        path = server.kubeconfig("hami-scheduler")
        if proxy is not None:
            config = json.loads(Path(path).read_text())
            config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{proxy.port}"
            proxied = Path(path).with_name(f"proxy-{proxy.port}.kubeconfig")
            proxied.write_text(json.dumps(config))
            path = str(proxied)
        return KubeCluster.from_kubeconfig(path, request_timeout=5.0, connect_timeout=2.0)

    return World("apiserver", admin, namespace, make, server)


def _running_world(kind: str, request: pytest.FixtureRequest) -> Iterator[World]:
    world = _world(kind, request)
    try:
        yield world
    finally:
        world.stop_all()


@pytest.fixture(params=["memory", "apiserver"])
def world(request: pytest.FixtureRequest) -> Iterator[World]:
    """The same test against the in-memory cluster and the real API server."""
    yield from _running_world(request.param, request)


@pytest.fixture
def memory_world(request: pytest.FixtureRequest) -> Iterator[World]:
    """The in-memory cluster only: for faults injected exactly (410 on demand, the next N patches)."""
    yield from _running_world("memory", request)


@pytest.fixture
def real_world(request: pytest.FixtureRequest) -> Iterator[World]:
    """The real API server only: for faults that need a real network path (see ``proxy``)."""
    yield from _running_world("apiserver", request)


@pytest.fixture
def proxy(real_world: World) -> Iterator[TcpProxy]:
    """A cuttable network path to the real API server."""
    url = urlsplit(real_world.server.url)
    p = TcpProxy(url.hostname or "127.0.0.1", url.port or 443)
    yield p
    p.cut()
