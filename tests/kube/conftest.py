"""Fixtures of the cluster layer's tests: one ``cluster`` fixture, run against both implementations."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from harness.admin import AdminKubeCluster, MemoryCluster

CLUSTER_KINDS = ["memory", "apiserver"]


@pytest.fixture(params=CLUSTER_KINDS)
def cluster(request: pytest.FixtureRequest) -> Iterator[Any]:
    """A ``MemoryCluster`` or a ``KubeCluster`` on the real kube-apiserver (admin identity)."""
    if request.param == "memory":
        yield MemoryCluster()
        return
    server = request.getfixturevalue("apiserver")
    kube = AdminKubeCluster.from_kubeconfig(server.kubeconfig("admin"))
    try:
        yield kube
    finally:
        kube.close()


@pytest.fixture
def namespace(request: pytest.FixtureRequest, cluster: Any) -> str:
    """A fresh namespace for Leases and Events, on either cluster."""
    if isinstance(cluster, MemoryCluster):
        made = f"t-{uuid.uuid4().hex[:12]}"
        cluster.create_namespace(made)
        return made
    name: str = request.getfixturevalue("apiserver_namespace")
    return name


@pytest.fixture
def test_label() -> dict[str, str]:
    """A label unique to this test: Nodes are cluster-scoped, so tests select their own by it."""
    return {"hami-test": uuid.uuid4().hex[:12]}
