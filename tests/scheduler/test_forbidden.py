"""Refusals inside the running scheduler, from the real API server's RBAC: a patch, an Event and the Lease
each say which permission is missing, and are counted."""

from __future__ import annotations

import logging
import uuid
from typing import Any

import pytest
from harness import rbac
from harness.scheduler_world import World

from hami_core.kube.client import KubeCluster
from hami_core.scheduler.metrics import total

HINT = "the chart's RBAC grants each daemon what it needs (charts/hami-core)"
READ_NODES = {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]}


def identity(server: Any, name: str, rules: list[dict[str, Any]]) -> str:
    """A client-certificate user bound to a ClusterRole of ``rules``."""
    user = str(server.add_identity(f"hami-test-{name}-{uuid.uuid4().hex[:6]}"))
    role = {"apiVersion": rbac.RBAC_V1, "kind": "ClusterRole", "metadata": {"name": user}, "rules": rules}
    for path, body in (
        ("/apis/rbac.authorization.k8s.io/v1/clusterroles", role),
        ("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", rbac.binding(user, rbac.user(user))),
    ):
        status, answer = server.request("POST", path, body)
        assert status == 201, answer
    return user


def messages(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]


def test_a_refused_patch_and_event_name_the_missing_permission(
    real_world: World, caplog: pytest.LogCaptureFixture
) -> None:
    world = real_world
    server = world.server
    leases = {
        "apiGroups": ["coordination.k8s.io"],
        "resources": ["leases"],
        "verbs": ["get", "create", "update"],
    }
    user = identity(server, "no-writes", [READ_NODES, leases])  # may lead, may not patch Nodes or post Events
    cluster = KubeCluster.from_kubeconfig(server.kubeconfig(user), request_timeout=5.0)
    caplog.set_level(logging.WARNING, logger="hami_core")
    node = world.node("refused", {"hami.io/node-mlu-register": "MLU-1,10"})  # stamped, and degraded
    replica = world.scheduler("mlu", cluster=cluster)
    world.run_until("ready", replica.ready)
    failed = replica.metrics.events_dropped
    world.run_until(
        "both refused",
        lambda: (
            replica.metrics.patch_requests()["4xx"] >= 1
            and total(failed, reason="HamiRegisterAnnotationInvalid", cause="failed") == 1
        ),
    )
    assert replica.cache.vendor(node, "MLU") is not None  # the cache is kept all the same
    patch = [m for m in messages(caplog) if m.startswith("patch of hami.io/node-handshake-mlu failed: ")]
    assert patch and patch[0].endswith(
        f"missing RBAC permission: user '{user}' may not patch nodes cluster-wide; {HINT}"
    ), patch
    event = [m for m in messages(caplog) if m.startswith("could not post the HamiRegisterAnnotationInvalid")]
    assert len(event) == 1 and event[0].endswith(
        f"missing RBAC permission: user '{user}' may not create events in namespace default; {HINT}"
    ), event
    assert total(replica.metrics.api_requests, verb="create", resource="events", result="4xx") == 1


def test_a_refused_lease_names_the_missing_permission(
    real_world: World, caplog: pytest.LogCaptureFixture
) -> None:
    world = real_world
    server = world.server
    leases = {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get"]}
    user = identity(server, "no-lease", [READ_NODES, leases])
    cluster = KubeCluster.from_kubeconfig(server.kubeconfig(user), request_timeout=5.0)
    caplog.set_level(logging.WARNING, logger="hami_core")
    lease = f"refused-{uuid.uuid4().hex[:6]}"
    replica = world.scheduler("mlu", cluster=cluster, lease_name=lease)
    line = world.run_until(
        "the refusal logged",
        lambda: next((m for m in messages(caplog) if m.startswith("leader election: ")), None),
    )
    assert line.endswith(
        f"missing RBAC permission: user '{user}' may not create leases (API group "
        f"coordination.k8s.io) in namespace {world.namespace}; {HINT}"
    ), line
    assert not replica.elector.is_leader()
    assert total(replica.metrics.api_requests, verb="create", resource="leases", result="4xx") >= 1
