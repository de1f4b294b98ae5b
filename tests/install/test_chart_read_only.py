"""``scheduler.readOnly=true`` on the real API server: the chart applied (server side, into a fresh
namespace), its scheduler ServiceAccount asked what it may do, and ``hami scheduler run --read-only``
run with the chart's arguments and that account's token beside what HAMi writes: it becomes ready and
writes nothing, as the API server counts."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from harness.admin import AdminKubeCluster
from harness.apiserver import ApiServer
from harness.fixtures import unique_node_name
from harness.poll import wait_for
from install.kit import (
    MERGE_PATCH,
    Applied,
    allowed,
    applied_chart,
    find,
    http_status,
    listening_port,
    refused_writes,
)
from prometheus_client.parser import text_string_to_metric_families

from hami_core.kube.port import Lease

HAMI = str(Path(sys.executable).with_name("hami"))
DCU = "DCU-1,4,16384,100,DCU-Z100,0,true,0,hami:"
LEASES = "coordination.k8s.io"


@pytest.fixture(scope="module")
def read_only(
    apiserver: ApiServer, helm: Path, kubectl: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Applied]:
    """The chart with ``scheduler.readOnly=true``, applied into a namespace of its own."""
    directory = tmp_path_factory.mktemp("chart-read-only")
    with applied_chart(
        apiserver, helm, kubectl, directory, "--set", "scheduler.readOnly=true", prefix="ro"
    ) as applied:
        yield applied


def test_only_the_read_only_objects_exist(read_only: Applied, apiserver: ApiServer) -> None:
    for obj in read_only.objects:
        kind, meta = obj["kind"], obj["metadata"]
        group_version = obj["apiVersion"]
        base = f"/apis/{group_version}" if "/" in group_version else f"/api/{group_version}"
        plural = {"PodDisruptionBudget": "poddisruptionbudgets"}.get(kind, kind.lower() + "s")
        where = f"/namespaces/{meta['namespace']}" if "namespace" in meta else ""
        status, stored = apiserver.request("GET", f"{base}{where}/{plural}/{meta['name']}")
        assert status == 200, (kind, meta["name"], stored)
    # No Role or RoleBinding of this release anywhere (the Lease, Event and HAMi-Lease ones are gone).
    selector = f"labelSelector=app.kubernetes.io/instance%3D{read_only.release}"
    for plural in ("roles", "rolebindings"):
        path = f"/apis/rbac.authorization.k8s.io/v1/{plural}?{selector}"
        status, listed = apiserver.request("GET", path)
        assert status == 200 and listed["items"] == [], listed
    status, role = apiserver.request(
        "GET", f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{read_only.scheduler}"
    )
    assert status == 200 and role["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]}
    ]


def test_the_read_only_account_may_read_nodes_and_write_nothing(
    read_only: Applied, apiserver: ApiServer
) -> None:
    me = apiserver.add_token_identity(
        f"{read_only.scheduler}@{read_only.namespace}",
        apiserver.token_request(read_only.namespace, read_only.scheduler),
    )
    ns = read_only.namespace
    may = {
        "get a node": allowed(apiserver, me, "get", "nodes", name="any-node"),
        "list nodes": allowed(apiserver, me, "list", "nodes"),
        "watch nodes": allowed(apiserver, me, "watch", "nodes"),
    }
    assert [what for what, ok in may.items() if not ok] == []
    may_not = {
        "patch nodes": allowed(apiserver, me, "patch", "nodes", name="any-node"),
        "update nodes": allowed(apiserver, me, "update", "nodes", name="any-node"),
        "create nodes": allowed(apiserver, me, "create", "nodes"),
        "delete nodes": allowed(apiserver, me, "delete", "nodes", name="any-node"),
        "patch nodes/status": allowed(apiserver, me, "patch", "nodes", name="any-node", subresource="status"),
        "create its lease": allowed(apiserver, me, "create", "leases", group=LEASES, namespace=ns),
        "get its lease": allowed(apiserver, me, "get", "leases", group=LEASES, namespace=ns),
        "update its lease": allowed(apiserver, me, "update", "leases", group=LEASES, namespace=ns),
        "get HAMi's lease": allowed(
            apiserver, me, "get", "leases", group=LEASES, namespace="kube-system", name="hami-scheduler"
        ),
        "create events in default": allowed(apiserver, me, "create", "events", namespace="default"),
        "create events.k8s.io events": allowed(
            apiserver, me, "create", "events", group="events.k8s.io", namespace="default"
        ),
        "read secrets": allowed(apiserver, me, "get", "secrets", namespace=ns),
        "list pods": allowed(apiserver, me, "list", "pods"),
    }
    assert [what for what, ok in may_not.items() if ok] == []
    # And the calls themselves.
    node = unique_node_name("ro-rbac")
    status, body = apiserver.request("POST", "/api/v1/nodes", {"metadata": {"name": node}})
    assert status == 201, body
    try:
        assert apiserver.request("GET", f"/api/v1/nodes/{node}", identity=me)[0] == 200
        assert apiserver.request("GET", "/api/v1/nodes?limit=1", identity=me)[0] == 200
        watched = apiserver.request("GET", "/api/v1/nodes?watch=1&timeoutSeconds=1", identity=me)
        assert watched[0] == 200
        patch = {"metadata": {"annotations": {"hami.io/node-handshake-dcu": "Requesting_x"}}}
        refused = {
            "patch a node": apiserver.request(
                "PATCH", f"/api/v1/nodes/{node}", patch, identity=me, content_type=MERGE_PATCH
            ),
            "create a lease": apiserver.request(
                "POST", f"/apis/coordination.k8s.io/v1/namespaces/{ns}/leases",
                {"metadata": {"name": "hami-core-scheduler"}, "spec": {"holderIdentity": "me"}}, identity=me,
            ),
            "create an event": apiserver.request(
                "POST", "/api/v1/namespaces/default/events",
                {"metadata": {"generateName": "ro-"}, "involvedObject": {"kind": "Node", "name": node},
                 "reason": "Test", "message": "m", "type": "Warning"}, identity=me,
            ),
        }  # fmt: skip
        assert {what: status for what, (status, _) in refused.items()} == dict.fromkeys(refused, 403)
        for what, (_, answer) in refused.items():
            assert f"system:serviceaccount:{ns}:{read_only.scheduler}" in answer["message"], what
    finally:
        apiserver.request("DELETE", f"/api/v1/nodes/{node}")


def _evaluations(port: int) -> float:
    """The scheduler's own count of node evaluations (``hami_scheduler_evaluations_total``, all labels)."""
    status, text = _get(port, "/metrics")
    assert status == 200
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == "hami_scheduler_evaluations_total"
    )


def _get(port: int, path: str) -> tuple[int, str]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
        return int(response.status), response.read().decode()


def test_the_read_only_scheduler_runs_beside_hami_and_writes_nothing(
    read_only: Applied, apiserver: ApiServer, tmp_path: Path
) -> None:
    admin = AdminKubeCluster.from_kubeconfig(apiserver.kubeconfig())
    label = uuid.uuid4().hex[:12]
    needs_stamp, cpu_only = unique_node_name("ro-dcu"), unique_node_name("ro-cpu")
    # A DCU node as HAMi's device plugin leaves it, before any scheduler stamped it: a leader stamps it.
    admin.create_node(
        needs_stamp, labels={"hami-test": label}, annotations={"hami.io/node-dcu-register": DCU}
    )
    admin.patch_node_status(needs_stamp, {"hygon.com/dcunum": "4"})
    # HAMi's scheduler is running: its Lease is held and fresh.
    now = datetime.now(UTC)
    hami = Lease(name="hami-scheduler", namespace="kube-system", holder_identity="hami-scheduler-0_abc",
                 lease_duration_seconds=3600, acquire_time=now, renew_time=now)  # fmt: skip
    admin.create_lease(hami)
    identity = f"{read_only.scheduler}@run"
    token = apiserver.token_request(read_only.namespace, read_only.scheduler)
    kubeconfig = apiserver.kubeconfig(apiserver.add_token_identity(identity, token))
    (container,) = find(read_only.objects, "Deployment")["spec"]["template"]["spec"]["containers"]
    args = list(container["args"])
    assert args[:2] == ["scheduler", "run"] and "--read-only" in args
    # Local stand-ins for what only a pod has: a free port, and this test's nodes only.
    args = [a for a in args if not a.startswith("--http-listen=")] + [
        "--http-listen=127.0.0.1:0", "--kubeconfig", kubeconfig, "--node-selector", f"hami-test={label}",
    ]  # fmt: skip
    refused_before = refused_writes(apiserver)
    log = tmp_path / "scheduler.log"
    env = {**os.environ, "POD_NAME": f"{read_only.scheduler}-0"}
    with log.open("w") as out:
        proc = subprocess.Popen([HAMI, *args], stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        port = listening_port(log)
        wait_for("the read-only scheduler to be ready", lambda: http_status(port, "/readyz") == 200,
                 timeout=60)  # fmt: skip
        status = json.loads(_get(port, "/status")[1])
        assert (status["read_only"], status["leader"], status["ready"]) == (True, False, True), status
        # Ready means its first pass is done: the node a leader would have stamped is as it was.
        node = admin.get_node(needs_stamp)
        assert node.annotations == {"hami.io/node-dcu-register": DCU}

        # HAMi's scheduler and plugins go on writing; the read-only scheduler sees each write.
        def hami_writes(name: str, annotations: dict[str, str | None]) -> str:
            seen = _evaluations(port)
            version = admin.patch_node_annotations(name, annotations).resource_version
            wait_for(f"the read-only scheduler to evaluate {annotations}",
                     lambda: _evaluations(port) > seen, timeout=30)  # fmt: skip
            return str(version)

        stamp = f"Requesting_{datetime.now():%Y-%m-%d %H:%M:%S}"
        report = f"Reported_{datetime.now():%Y-%m-%d %H:%M:%S}"
        hami_writes(needs_stamp, {"hami.io/node-handshake-dcu": stamp})  # HAMi's scheduler stamps
        hami_writes(needs_stamp, {"hami.io/node-handshake-dcu": report})  # its plugin answers
        hami_writes(needs_stamp, {"hami.io/node-handshake-dcu": None})  # HAMi's cleanup
        last = hami_writes(needs_stamp, {"hami.io/node-dcu-register": "DCU-1,4"})  # does not decode
        # A CPU-only node with HAMi's stamp for a vendor it does not have.
        seen = _evaluations(port)
        created = admin.create_node(cpu_only, labels={"hami-test": label},
                                    annotations={"hami.io/node-handshake-dcu": stamp})  # fmt: skip
        wait_for("the read-only scheduler to evaluate the new node", lambda: _evaluations(port) > seen,
                 timeout=30)  # fmt: skip
        assert http_status(port, "/readyz") == 200

        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        admin.delete_lease("kube-system", "hami-scheduler")
    try:
        # Every node holds exactly what HAMi's side wrote, at the version of its last write.
        node = admin.get_node(needs_stamp)
        assert node.annotations == {"hami.io/node-dcu-register": "DCU-1,4"}
        assert node.resource_version == last
        other = admin.get_node(cpu_only)
        assert (other.annotations, other.resource_version) == (
            {"hami.io/node-handshake-dcu": stamp},
            created.resource_version,
        )
        # Nothing was even tried: the account may only read, so any write would have been a 403.
        assert refused_writes(apiserver) == refused_before
        leases = f"/apis/coordination.k8s.io/v1/namespaces/{read_only.namespace}/leases"
        assert apiserver.request("GET", leases)[1]["items"] == []
        for name in (needs_stamp, cpu_only):
            selector = f"fieldSelector=involvedObject.name%3D{name}"
            events = apiserver.request("GET", f"/api/v1/namespaces/default/events?{selector}")
            assert events[1]["items"] == [], events
    finally:
        admin.delete_node(needs_stamp)
        admin.delete_node(cpu_only)
    text = log.read_text()
    assert "read-only" in text
    assert "forbidden" not in text.lower(), text
    assert "HAMi's scheduler seems active" not in text  # it runs beside HAMi on purpose: no check, no grant
