"""The chart applied to the real API server (``kubectl apply --server-side``, not a dry run, into a fresh
namespace), then the scheduler and the reporter run as the chart's ServiceAccounts, with the chart's
arguments and exactly the access the chart grants; the reporter's admission policy is tried the way a
DaemonSet's pod meets it, with a token bound to its Pod."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

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
    create_node,
    find,
    http_status,
    listening_port,
    patch_node,
    run,
)

from hami_core.kube.port import Lease
from hami_core.protocol.codecs import decode_any

HAMI = str(Path(sys.executable).with_name("hami"))
DCU = "DCU-1,4,16384,100,DCU-Z100,0,true,0,hami:"
DEVICES = {"mlu": [{"id": "MLU-0", "count": 10, "devmem": 23308, "type": "MLU-370", "health": True}]}


def kubectl_as_admin(kubectl: Path, apiserver: ApiServer, *args: object) -> subprocess.CompletedProcess[str]:
    return run([kubectl, "--kubeconfig", apiserver.kubeconfig(), *args])


def reporter_identity(apiserver: ApiServer, installed: Applied, node: str) -> str:
    """The credential the kubelet would mount into the chart's reporter pod on ``node``."""
    name = f"{installed.reporter}@{node}"
    if name not in apiserver.tokens:
        pod = apiserver.pod_on_node(installed.namespace, installed.reporter, node)
        apiserver.add_token_identity(
            name, apiserver.token_request(installed.namespace, installed.reporter, pod=pod)
        )
    return name


@pytest.fixture(scope="module")
def installed(
    apiserver: ApiServer, helm: Path, kubectl: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Applied]:
    """The chart with the reporter on, applied into a namespace of its own."""
    directory = tmp_path_factory.mktemp("chart")
    with applied_chart(apiserver, helm, kubectl, directory, "--set", "reporter.enabled=true") as applied:
        # Admission policies load asynchronously: wait until the chart's refuses a foreign-node patch.
        probe_own, probe_other = unique_node_name("probe"), unique_node_name("probe")
        for node in (probe_own, probe_other):
            create_node(apiserver, node)
        try:
            identity = reporter_identity(apiserver, applied, probe_own)
            foreign = {"metadata": {"annotations": {"hami.io/x": "1"}}}
            wait_for(
                "the chart's admission policy to be enforced",
                lambda: patch_node(apiserver, probe_other, foreign, identity)[0] == 403,
                timeout=60,
                interval=0.2,
            )
            yield applied
        finally:
            for node in (probe_own, probe_other):
                apiserver.request("DELETE", f"/api/v1/nodes/{node}")


def test_every_rendered_object_exists_as_applied(
    installed: Applied, apiserver: ApiServer, kubectl: Path
) -> None:
    get = ["get", "-f", installed.manifest, "-o", "json", "--show-managed-fields"]
    listed = json.loads(kubectl_as_admin(kubectl, apiserver, *get).stdout)
    stored = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]): o for o in listed["items"]}
    rendered = {(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in installed.objects}
    assert set(stored) == rendered
    assert {kind for kind, _, _ in rendered} == {
        "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Deployment",
        "PodDisruptionBudget", "Service", "DaemonSet", "ValidatingAdmissionPolicy",
        "ValidatingAdmissionPolicyBinding",
    }  # fmt: skip
    for obj in stored.values():
        managers = {(m["manager"], m["operation"]) for m in obj["metadata"]["managedFields"]}
        assert ("kubectl", "Apply") in managers, obj["metadata"]["name"]
    deployment = stored["Deployment", installed.namespace, installed.scheduler]
    assert deployment["spec"]["replicas"] == 2
    assert stored["ServiceAccount", installed.namespace, installed.scheduler]
    assert (
        stored["DaemonSet", installed.namespace, installed.reporter]["spec"]["template"]["spec"][
            "serviceAccountName"
        ]
        == installed.reporter
    )


def test_the_scheduler_account_may_do_its_job_and_nothing_more(
    installed: Applied, apiserver: ApiServer
) -> None:
    me = apiserver.add_token_identity(
        f"{installed.scheduler}@{installed.namespace}",
        apiserver.token_request(installed.namespace, installed.scheduler),
    )
    ns, lease_group = installed.namespace, "coordination.k8s.io"
    may = {
        "list nodes": allowed(apiserver, me, "list", "nodes"),
        "watch nodes": allowed(apiserver, me, "watch", "nodes"),
        "patch nodes": allowed(apiserver, me, "patch", "nodes", name="any-node"),
        "get its lease": allowed(apiserver, me, "get", "leases", group=lease_group, namespace=ns),
        "create its lease": allowed(apiserver, me, "create", "leases", group=lease_group, namespace=ns),
        "update its lease": allowed(apiserver, me, "update", "leases", group=lease_group, namespace=ns),
        "create events in default": allowed(apiserver, me, "create", "events", namespace="default"),
        # the Warning Event about its own Lease when HAMi's scheduler starts
        "create events here": allowed(apiserver, me, "create", "events", namespace=ns),
        "get HAMi's lease": allowed(
            apiserver, me, "get", "leases", group=lease_group, namespace="kube-system", name="hami-scheduler"
        ),
    }
    assert [what for what, ok in may.items() if not ok] == []
    may_not = {
        "get a node": allowed(apiserver, me, "get", "nodes", name="any-node"),
        "delete nodes": allowed(apiserver, me, "delete", "nodes", name="any-node"),
        "create nodes": allowed(apiserver, me, "create", "nodes"),
        "update nodes": allowed(apiserver, me, "update", "nodes", name="any-node"),
        "patch nodes/status": allowed(apiserver, me, "patch", "nodes", name="any-node", subresource="status"),
        "read secrets here": allowed(apiserver, me, "get", "secrets", namespace=ns),
        "list secrets anywhere": allowed(apiserver, me, "list", "secrets"),
        "list its leases": allowed(apiserver, me, "list", "leases", group=lease_group, namespace=ns),
        "delete its lease": allowed(apiserver, me, "delete", "leases", group=lease_group, namespace=ns),
        "create leases elsewhere": allowed(
            apiserver, me, "create", "leases", group=lease_group, namespace="default"
        ),
        "get other kube-system leases": allowed(
            apiserver, me, "get", "leases", group=lease_group, namespace="kube-system", name="kube-scheduler"
        ),
        "update HAMi's lease": allowed(
            apiserver,
            me,
            "update",
            "leases",
            group=lease_group,
            namespace="kube-system",
            name="hami-scheduler",
        ),
        "create events in kube-system": allowed(apiserver, me, "create", "events", namespace="kube-system"),
        "patch events": allowed(apiserver, me, "patch", "events", namespace="default"),
        "list pods": allowed(apiserver, me, "list", "pods"),
    }
    assert [what for what, ok in may_not.items() if ok] == []
    # And the calls themselves.
    node = unique_node_name("rbac")
    create_node(apiserver, node)
    try:
        assert apiserver.request("DELETE", f"/api/v1/nodes/{node}", identity=me)[0] == 403
        status, _ = apiserver.request(
            "PATCH", f"/api/v1/nodes/{node}/status", {"status": {"capacity": {"x.io/y": "1"}}}, identity=me,
            content_type=MERGE_PATCH,
        )  # fmt: skip
        assert status == 403
        assert apiserver.request("GET", f"/api/v1/namespaces/{ns}/secrets", identity=me)[0] == 403
        assert patch_node(apiserver, node, {"metadata": {"annotations": {"hami.io/x": "1"}}}, me)[0] == 200
    finally:
        apiserver.request("DELETE", f"/api/v1/nodes/{node}")


def test_the_scheduler_runs_with_the_charts_arguments_and_access(
    installed: Applied, apiserver: ApiServer, tmp_path: Path
) -> None:
    admin = AdminKubeCluster.from_kubeconfig(apiserver.kubeconfig())
    label = uuid.uuid4().hex[:12]
    node = unique_node_name("chart")
    admin.create_node(node, labels={"hami-test": label}, annotations={"hami.io/node-dcu-register": DCU})
    admin.patch_node_status(node, {"hygon.com/dcunum": "4"})
    # HAMi's scheduler is "active": its Lease is held and fresh.
    now = datetime.now(UTC)
    hami = Lease(name="hami-scheduler", namespace="kube-system", holder_identity="hami-scheduler-0_abc",
                 lease_duration_seconds=3600, acquire_time=now, renew_time=now)  # fmt: skip
    admin.create_lease(hami)
    identity = f"{installed.scheduler}@run"
    kubeconfig = apiserver.kubeconfig(
        apiserver.add_token_identity(
            identity, apiserver.token_request(installed.namespace, installed.scheduler)
        )
    )
    args = [
        a.replace("$(POD_NAMESPACE)", installed.namespace) for a in installed.container_args("Deployment")
    ]
    assert args[:2] == ["scheduler", "run"]
    # Local stand-ins for what only a pod has: a free port, and this test's nodes only.
    args = [a for a in args if not a.startswith("--http-listen=")] + [
        "--http-listen=127.0.0.1:0", "--kubeconfig", kubeconfig, "--node-selector", f"hami-test={label}",
        "--handshake-window", "30",
    ]  # fmt: skip
    log = tmp_path / "scheduler.log"
    env = {**os.environ, "POD_NAME": f"{installed.scheduler}-0"}
    with log.open("w") as out:
        proc = subprocess.Popen([HAMI, *args], stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        stamp = wait_for(
            "the chart's scheduler to stamp the node",
            lambda: (
                admin.get_node(node)
                .annotations.get("hami.io/node-handshake-dcu", "")
                .startswith("Requesting_")
            ),
            timeout=60,
        )
        assert stamp
        lease = admin.get_lease(installed.namespace, "hami-core-scheduler")
        assert str(lease.holder_identity).startswith(f"{installed.scheduler}-0_")
        port = listening_port(log)
        wait_for("ready", lambda: http_status(port, "/readyz") == 200, timeout=30)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        admin.delete_lease("kube-system", "hami-scheduler")
        admin.delete_node(node)
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    warnings = [entry for entry in lines if "HAMi's scheduler seems active" in json.dumps(entry)]
    assert len(warnings) == 1, log.read_text()
    assert "Lease kube-system/hami-scheduler is held by 'hami-scheduler-0_abc'" in json.dumps(warnings[0])
    assert not [entry for entry in lines if "forbidden" in json.dumps(entry).lower()], log.read_text()


def test_the_reporter_runs_with_the_charts_arguments_access_and_probes(
    installed: Applied, apiserver: ApiServer, tmp_path: Path
) -> None:
    """The DaemonSet's container as the kubelet would run it: its arguments (with --http-listen), a token
    bound to a Pod on the node, and its probes asked on the paths and port the DaemonSet names."""
    (container,) = find(installed.objects, "DaemonSet")["spec"]["template"]["spec"]["containers"]
    (http,) = [p for p in container["ports"] if p["name"] == "http"]
    args = list(container["args"])
    assert args[:2] == ["reporter", "run"] and "--node-name=$(NODE_NAME)" in args
    # The probes ask the port the reporter serves on, on paths it serves.
    assert f"--http-listen=:{http['containerPort']}" in args
    probes = {kind: container[kind]["httpGet"] for kind in ("livenessProbe", "readinessProbe")}
    assert probes == {
        "livenessProbe": {"path": "/livez", "port": "http"},
        "readinessProbe": {"path": "/readyz", "port": "http"},
    }
    node = unique_node_name("chart-reporter")
    create_node(apiserver, node)
    devices = tmp_path / "devices.json"
    devices.write_text(json.dumps(DEVICES))
    # Local stand-ins for what only a pod has: a free port, the node name, the mounted token.
    args = [a.replace("$(NODE_NAME)", node) for a in args if not a.startswith("--http-listen=")]
    kubeconfig = apiserver.kubeconfig(reporter_identity(apiserver, installed, node))
    log = tmp_path / "reporter.log"
    env = {**os.environ, "HAMI_FAKE_DEVICES": str(devices)}
    with log.open("w") as out:
        proc = subprocess.Popen(
            [HAMI, *args, "--http-listen=127.0.0.1:0", "--vendors", "mlu", "--kubeconfig", kubeconfig],
            stdout=out, stderr=subprocess.STDOUT, env=env,
        )  # fmt: skip
    try:
        port = listening_port(log)
        readiness, liveness = probes["readinessProbe"]["path"], probes["livenessProbe"]["path"]
        wait_for("the readiness probe to pass", lambda: http_status(port, readiness) == 200, timeout=60)
        assert http_status(port, liveness) == 200
        assert http_status(port, "/metrics") == 200
        assert http_status(port, "/not-served") == 404  # an answer of 200 means the path is served
        status, stored = apiserver.request("GET", f"/api/v1/nodes/{node}")
        assert status == 200, stored
        annotations = stored["metadata"]["annotations"]
        assert [d.id for d in decode_any(annotations["hami.io/node-mlu-register"])] == ["MLU-0"]
        assert annotations["hami.io/node-handshake-mlu"].startswith("Reported_")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(20) == 0, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        apiserver.request("DELETE", f"/api/v1/nodes/{node}")
    assert "forbidden" not in log.read_text().lower(), log.read_text()


def test_the_reporter_policy_allows_only_its_own_nodes_protocol_annotations(
    installed: Applied, apiserver: ApiServer
) -> None:
    mine, other = unique_node_name("own"), unique_node_name("other")
    for node in (mine, other):
        create_node(apiserver, node, labels={"t": "x"}, annotations={"vendor.io/keep": "1"})
    me = reporter_identity(apiserver, installed, mine)
    unbound = apiserver.add_token_identity(
        f"{installed.reporter}@nowhere-{uuid.uuid4().hex[:6]}",
        apiserver.token_request(installed.namespace, installed.reporter),
    )
    try:
        ok = patch_node(
            apiserver, mine, {"metadata": {"annotations": {"hami.io/node-mlu-register": "[]"}}}, me
        )
        assert ok[0] == 200, ok
        assert patch_node(apiserver, mine, {"metadata": {"annotations": {"hami.io/node-mlu-register": None}}},
                          me)[0] == 200  # fmt: skip
        refusals: dict[str, tuple[str, dict[str, Any], str]] = {
            "another node": (other, {"metadata": {"annotations": {"hami.io/node-mlu-register": "[]"}}}, me),
            "another annotation": (mine, {"metadata": {"annotations": {"vendor.io/other": "1"}}}, me),
            "deleting another annotation": (
                mine,
                {"metadata": {"annotations": {"vendor.io/keep": None}}},
                me,
            ),
            "a label": (mine, {"metadata": {"labels": {"t": "changed"}}}, me),
            "the spec": (mine, {"spec": {"unschedulable": True}}, me),
            "a token bound to no pod": (mine, {"metadata": {"annotations": {"hami.io/x": "1"}}}, unbound),
        }
        answers = {what: patch_node(apiserver, *case) for what, case in refusals.items()}
        assert {what: status for what, (status, _) in answers.items()} == dict.fromkeys(refusals, 403)
        reasons = {what: message for what, (_, message) in answers.items()}
        own_node = f"a reporter may only change its own Node: this token is bound to a Pod on node {mine}"
        assert f"{own_node}, not {other}" in reasons["another node"]
        keys_only = "a reporter may only change its drivers' register and handshake annotations"
        assert keys_only in reasons["another annotation"]
        assert keys_only in reasons["deleting another annotation"]
        assert "a reporter may not change a Node's labels" in reasons["a label"]
        assert "a reporter may not change a Node's spec or status" in reasons["the spec"]
        assert (
            "a reporter must use a ServiceAccount token bound to its Pod"
            in reasons["a token bound to no pod"]
        )
        for reason in reasons.values():
            assert f"ValidatingAdmissionPolicy '{installed.reporter}-own-node'" in reason
        # RBAC, before the policy: no delete, no list, no PUT (tests/install/test_reporter_policy.py
        # grants it to show that the policy holds on its own).
        assert apiserver.request("DELETE", f"/api/v1/nodes/{mine}", identity=me)[0] == 403
        status, node = apiserver.request("GET", f"/api/v1/nodes/{mine}")
        status, answer = apiserver.request("PUT", f"/api/v1/nodes/{mine}", node, identity=me)
        assert status == 403 and "cannot update resource" in answer["message"], answer
        assert apiserver.request("GET", "/api/v1/nodes", identity=me)[0] == 403
        status, stored = apiserver.request("GET", f"/api/v1/nodes/{mine}", identity=me)
        assert status == 200
        assert stored["metadata"]["annotations"] == {"vendor.io/keep": "1"}
        assert stored["metadata"]["labels"] == {"t": "x"}
    finally:
        for node in (mine, other):
            apiserver.request("DELETE", f"/api/v1/nodes/{node}")


def test_the_reporter_policy_binds_only_the_reporter(installed: Applied, apiserver: ApiServer) -> None:
    """The chart's scheduler may patch any part of a Node its RBAC allows: the policy is not about it."""
    scheduler = apiserver.add_token_identity(
        f"{installed.scheduler}@policy", apiserver.token_request(installed.namespace, installed.scheduler)
    )
    node = unique_node_name("not-reporter")
    create_node(apiserver, node)
    try:
        body = {"metadata": {"labels": {"t": "scheduler"}, "annotations": {"other.io/x": "1"}}}
        assert patch_node(apiserver, node, body, scheduler)[0] == 200
    finally:
        apiserver.request("DELETE", f"/api/v1/nodes/{node}")


def test_the_network_policy_is_accepted_as_rendered(
    apiserver: ApiServer, helm: Path, kubectl: Path, tmp_path: Path
) -> None:
    """The API server stores NetworkPolicy objects without a network plugin: this checks the object is
    valid and kept as the chart wrote it, not that any plugin enforces it."""
    peers = [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]
    values = [
        "--set", "scheduler.networkPolicy.enabled=true",
        "--set-json", f"scheduler.networkPolicy.from={json.dumps(peers)}",
    ]  # fmt: skip
    with applied_chart(apiserver, helm, kubectl, tmp_path, *values, prefix="np") as applied:
        rendered = find(applied.objects, "NetworkPolicy")
        name = rendered["metadata"]["name"]
        status, stored = apiserver.request(
            "GET", f"/apis/networking.k8s.io/v1/namespaces/{applied.namespace}/networkpolicies/{name}"
        )
        assert status == 200, stored
        assert stored["spec"] == rendered["spec"]
