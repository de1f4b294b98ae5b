"""The world the scheduler's end-to-end tests run in: in memory and on the real kube-apiserver alike.

A ``World`` gives a test an admin view for setting nodes up (created with a label unique to the test,
which the scheduler selects on, since Nodes are cluster-scoped), and makes scheduler replicas that
reach the cluster as the ``hami-scheduler`` identity with its RBAC only.
"""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from hami_core.kube.client import KubeCluster
from hami_core.kube.memory import MemoryCluster
from hami_core.plugins.manager import load_drivers
from hami_core.protocol.decide import VendorRules
from hami_core.scheduler.config import SchedulerConfig
from hami_core.scheduler.daemon import Scheduler
from hami_core.scheduler.selector import NodeSelector
from harness.tcpproxy import TcpProxy

#: Shrunk protocol timings: stamps have one-second resolution, so the window stays a few seconds.
WINDOW = 3.0
FAST = dict(handshake_window=WINDOW, resync=1.0, lease_duration=2.0, renew_deadline=1.5, retry_period=0.2,
            http_port=0)


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


def wait_for(what: str, predicate: Callable[[], Any], timeout: float = 20.0, interval: float = 0.05) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(interval)


class World:
    def __init__(self, kind: str, admin: Any, namespace: str, make_cluster: Callable[..., Any]) -> None:
        self.kind = kind
        self.admin = admin
        self.namespace = namespace
        self.label = {"hami-test": uuid.uuid4().hex[:12]}
        self._make_cluster = make_cluster
        self.replicas: list[Scheduler] = []
        _, drivers = load_drivers()
        self.drivers = {d.name: d for d in drivers}

    def rules(self, *names: str) -> list[VendorRules]:
        return [self.drivers[n].rules() for n in (names or sorted(self.drivers))]

    def node(self, suffix: str, annotations: Mapping[str, str] | None = None,
             allocatable: Mapping[str, str] | None = None) -> str:
        name = f"{suffix}-{uuid.uuid4().hex[:8]}"
        self.admin.create_node(name, labels=self.label, annotations=dict(annotations or {}))
        if allocatable:
            self.admin.patch_node_status(name, dict(allocatable))
        return name

    def annotations(self, name: str) -> Mapping[str, str]:
        return dict(self.admin.get_node(name).annotations)

    def cluster(self, *, proxy: TcpProxy | None = None) -> CountingCluster:
        return CountingCluster(self._make_cluster(proxy))

    def scheduler(
        self, *vendors: str, cluster: Any = None, start: bool = True, **overrides: Any
    ) -> Scheduler:
        options: dict[str, Any] = {**FAST, "lease_namespace": self.namespace,
                                   "node_selector": NodeSelector(self.label),
                                   **overrides}
        replica = Scheduler(cluster if cluster is not None else self.cluster(), self.rules(*vendors),
                            SchedulerConfig(**options))
        self.replicas.append(replica)
        if start:
            replica.start()
        return replica

    def stop_all(self) -> None:
        for replica in self.replicas:
            replica.stop(5)


def _world(kind: str, request: pytest.FixtureRequest) -> World:
    if kind == "memory":
        memory = MemoryCluster()
        namespace = f"t-{uuid.uuid4().hex[:8]}"
        memory.create_namespace(namespace)
        w = World("memory", memory, namespace, lambda proxy: memory)
    else:
        server = request.getfixturevalue("apiserver")
        namespace = request.getfixturevalue("apiserver_namespace")
        admin = KubeCluster.from_kubeconfig(server.kubeconfig("admin"))

        def make(proxy: TcpProxy | None) -> KubeCluster:
            path = server.kubeconfig("hami-scheduler")
            if proxy is not None:
                config = json.loads(Path(path).read_text())
                config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{proxy.port}"
                proxied = Path(path).with_name(f"proxy-{proxy.port}.kubeconfig")
                proxied.write_text(json.dumps(config))
                path = str(proxied)
            return KubeCluster.from_kubeconfig(path, request_timeout=5.0, connect_timeout=2.0)

        w = World("apiserver", admin, namespace, make)
        w.server = server  # type: ignore[attr-defined]
    return w


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
    url = urlsplit(real_world.server.url)  # type: ignore[attr-defined]
    p = TcpProxy(url.hostname or "127.0.0.1", url.port or 443)
    yield p
    p.cut()
