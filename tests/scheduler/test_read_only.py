"""Read-only mode: beside another registrar (HAMi's scheduler), it decides as a leader would and writes
nothing at all: no Lease, no patch, no Event."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from harness import rbac
from harness.scheduler_world import CountingCluster, World
from prometheus_client.parser import text_string_to_metric_families

from hami_core.kube.client import KubeCluster
from hami_core.scheduler.cache import DeviceCache
from hami_core.scheduler.registrar import Registrar

MLU = "MLU-1,10,23308,0,MLU-MLU370-X4,0,true,0,hami-core:"
DCU = "DCU-1,4,16384,100,DCU-Z100,0,true,0,hami:"
NVIDIA = '[{"id":"GPU-0","count":10,"devmem":24576,"devcore":100,"type":"NVIDIA-A10","health":true}]'
WRITES = (
    "patch_node_annotations",
    "patch_node_status",
    "merge_patch_node",
    "create_node",
    "delete_node",
    "create_lease",
    "update_lease",
    "get_lease",
    "create_event",
)
OBSERVER = "hami-observer"
#: API servers (by URL) that already have the observer identity and its RBAC.
_PROVISIONED: set[str] = set()


def _observer_cluster(world: World) -> CountingCluster:
    """The read-only replica's way in: on the real server an identity with the chart's read-only rules
    (charts/hami-core/rbac/scheduler-nodes-read-only.yaml): it may only read Nodes."""
    if world.kind == "memory":
        return world.cluster()
    server = world.server
    if server.url not in _PROVISIONED:
        server.add_identity(OBSERVER)
        rbac_api = "/apis/rbac.authorization.k8s.io/v1"
        role = {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": OBSERVER},
            "rules": rbac.read_only_scheduler_rules(),
        }
        binding = {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": OBSERVER},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": OBSERVER},
            "subjects": [{"kind": "User", "name": OBSERVER, "apiGroup": "rbac.authorization.k8s.io"}],
        }
        for path, body in ((f"{rbac_api}/clusterroles", role), (f"{rbac_api}/clusterrolebindings", binding)):
            status, answer = server.request("POST", path, body)
            assert status in (201, 409), answer
        _PROVISIONED.add(server.url)
    return CountingCluster(KubeCluster.from_kubeconfig(server.kubeconfig(OBSERVER)))


def _refused_writes(world: World) -> float:
    """Write requests the real API server refused (403), by its own count: any write the observer
    identity tried would be one of them."""
    server = world.server
    status, text = server.request("GET", "/metrics")
    assert status == 200
    total = 0.0
    for family in text_string_to_metric_families(text):
        if family.name == "apiserver_request":
            for sample in family.samples:
                labels = sample.labels
                if (
                    sample.name == "apiserver_request_total"
                    and labels.get("code") == "403"
                    and labels.get("verb") in ("PATCH", "POST", "PUT", "DELETE", "UPDATE", "CREATE")
                ):
                    total += sample.value
    return total


@pytest.fixture
def cluster_state(world: World) -> dict[str, str]:
    """Nodes as HAMi's scheduler and plugins leave them."""
    old = "Requesting_2025-12-31 23:50:00"  # ten minutes before the fake clock starts: expired
    return {
        "needs-stamp": world.node("ro-mlu", {"hami.io/node-mlu-register": MLU}, {"cambricon.com/mlu": "1"}),
        "registered": world.node(
            "ro-gpu",
            {"hami.io/node-nvidia-register": NVIDIA, "hami.io/node-handshake": old},
            {"nvidia.com/gpu": "10"},
        ),
        "dead": world.node("ro-dcu", {"hami.io/node-dcu-register": DCU, "hami.io/node-handshake-dcu": old}),
        "hami-stamp-only": world.node("ro-cpu", {"hami.io/node-handshake-dcu": old}),
        "null": world.node("ro-null", {"hami.io/node-nvidia-register": "[null]"}, {"nvidia.com/gpu": "1"}),
        "dotted": world.node(
            "ro-dot",
            {
                "hami.io/node-mlu-register": MLU,
                "hami.io/node-handshake-mlu": "Requesting_2024.01.10 04:06:57",
            },
            {"cambricon.com/mlu": "1"},
        ),
    }


def test_read_only_decides_as_a_leader_would_and_writes_nothing(
    world: World, cluster_state: dict[str, str]
) -> None:
    refused_before = _refused_writes(world) if world.kind == "apiserver" else 0.0
    cluster = _observer_cluster(world)
    observer = world.scheduler("mlu", "dcu", "nvidia", cluster=cluster, read_only=True, identity="observer")
    world.run_until("ready once synced", observer.ready)
    assert observer.status()["read_only"] is True and not observer.elector.is_leader()
    would = {name: observer.would_writes().get(name, {}) for name in cluster_state.values()}

    # What a leader decides on the same Nodes at the same moment.
    leader_registrar = Registrar(
        world.rules("mlu", "dcu", "nvidia"), DeviceCache(), selector=observer.config.node_selector
    )
    now = world.clock.now()
    decided = {
        name: dict(leader_registrar.evaluate(name, observer.view.get(name), now=now).patch)
        for name in cluster_state.values()
    }
    assert would == decided
    stamp = f"Requesting_{now:%Y-%m-%d %H:%M:%S}"
    assert would[cluster_state["needs-stamp"]] == {"hami.io/node-handshake-mlu": stamp}
    assert would[cluster_state["dotted"]] == {}  # a real, fresh-enough stamp here (HAMi cannot parse it)
    assert would[cluster_state["registered"]] == {}
    null = observer.cache.vendor(cluster_state["null"], "NVIDIA")
    assert null is not None and null.state == "degraded"
    pending = {
        (sample.labels["vendor"], sample.labels["kind"]): sample.value
        for family in text_string_to_metric_families(observer.metrics_text())
        if family.name == "hami_scheduler_read_only_pending_writes"
        for sample in family.samples
    }
    assert pending[("MLU", "stamp")] == sum(
        1 for patch in would.values() if "hami.io/node-handshake-mlu" in patch
    )
    assert pending[("MLU", "stamp")] >= 1 and pending[("DCU", "delete")] == 0

    # HAMi's scheduler and plugins keep writing for a while: reports, stamps, cleanups, bad values.
    for second in range(30):
        world.advance(1.0)
        at = world.clock.now()
        mlu = cluster_state["needs-stamp"]
        value = f"Reported_{at:%Y.%m.%d %H:%M:%S}" if second % 2 else f"Requesting_{at:%Y-%m-%d %H:%M:%S}"
        world.admin.patch_node_annotations(mlu, {"hami.io/node-handshake-mlu": value})
        if second == 10:
            world.admin.patch_node_annotations(cluster_state["dead"], {"hami.io/node-handshake-dcu": None})
        if second == 20:
            world.admin.patch_node_annotations(
                cluster_state["registered"], {"hami.io/node-nvidia-register": NVIDIA[:-3]}
            )
    world.settle()
    calls: Counter[str] = cluster.calls
    assert sum(calls[name] for name in WRITES) == 0, calls
    assert observer.status()["counters"]["events_posted"] == 0
    registered = observer.cache.vendor(cluster_state["registered"], "NVIDIA")
    assert registered is not None and registered.state == "degraded"
    if world.kind == "apiserver":
        assert _refused_writes(world) == refused_before  # nothing was even tried
        status, lease = world.server.request(
            "GET", f"/apis/coordination.k8s.io/v1/namespaces/{world.namespace}/leases/hami-scheduler"
        )
        assert status == 404, lease

    # A leader started now sends what the observer says a leader would send, wherever the observer's
    # memory plays no part (a vendor it saw dead waits for a sign of life; a fresh leader does not know).
    sent: dict[str, dict[str, Any]] = {}

    class Recording(CountingCluster):
        def patch_node_annotations(self, name: str, changes: Any, **kw: Any) -> Any:
            sent[name] = dict(changes)
            return super().__getattr__("patch_node_annotations")(name, changes, **kw)

    def kinds(patch: dict[str, Any]) -> dict[str, str]:
        return {key: "delete" if value is None else "stamp" for key, value in patch.items()}

    def remembered(name: str) -> bool:
        return any(
            observer.registrar.memory(name, v.vendor_key).awaiting_sign_of_life
            for v in observer.registrar.vendors
        )

    expected = {
        name: kinds(patch)
        for name in cluster_state.values()
        if (patch := observer.would_writes().get(name, {})) and not remembered(name)
    }
    leader = world.scheduler(
        "mlu", "dcu", "nvidia", cluster=Recording(world._make_cluster(None)), identity="leader"
    )
    world.run_until("the leader is ready", leader.ready)
    assert {name: kinds(patch) for name, patch in sent.items() if not remembered(name)} == expected
    assert expected  # the comparison is about something
