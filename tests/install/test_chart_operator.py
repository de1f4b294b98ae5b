"""The chart as an operator who runs HAMi's chart expects it: a subchart that honours Helm's ``global``
registry and pull secrets, a PodDisruptionBudget that never blocks a drain, a reporter that runs on
tainted accelerator nodes at node-critical priority, ServiceAccounts of one's own, image digests, tunable
probes; and the ones that matter applied to the real API server."""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness.apiserver import REPO_ROOT, ApiServer
from harness.fixtures import unique_node_name
from harness.poll import wait_for
from install.kit import (
    CHART,
    Applied,
    applied_chart,
    create_node,
    find,
    helm_env,
    kinds,
    patch_node,
    run,
    template,
)

DIGEST = "sha256:" + "0123456789abcdef" * 4


def pod_spec(obj: dict[str, Any]) -> dict[str, Any]:
    return dict(obj["spec"]["template"]["spec"])


def container(obj: dict[str, Any]) -> dict[str, Any]:
    (only,) = pod_spec(obj)["containers"]
    return dict(only)


def workloads(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] in ("Deployment", "DaemonSet")]


def parent_chart(tmp_path: Path, ours: dict[str, Any]) -> Path:
    """A chart "platform" with hami-core as its dependency (in its charts/), and HAMi-style globals."""
    parent = tmp_path / "platform"
    (parent / "charts").mkdir(parents=True)
    shutil.copytree(CHART, parent / "charts" / "hami-core")
    (parent / "Chart.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v2",
                "name": "platform",
                "version": "1.0.0",
                "dependencies": [{"name": "hami-core", "version": "*"}],
            }
        )
    )
    # A parent's global carries keys of its own (HAMi's chart has imageTag, labels, ...): accepted.
    (parent / "values.yaml").write_text(
        yaml.safe_dump(
            {
                "global": {
                    "imageRegistry": "registry.corp.example:5000",
                    "imagePullSecrets": ["corp-pull", {"name": "mirror-pull"}],
                    "imageTag": "v2.10.0",
                    "labels": {"team": "gpu"},
                },
                "hami-core": ours,
            }
        )
    )
    return parent


def test_as_a_subchart_the_parents_global_registry_and_pull_secrets_reach_both_daemons(
    helm: Path, tmp_path: Path
) -> None:
    ours = {"reporter": {"enabled": True}, "imagePullSecrets": [{"name": "corp-pull"}, "own"]}
    parent = parent_chart(tmp_path, ours)
    out = run([helm, "template", "platform", parent, "--namespace", "gpu"]).stdout
    objects = [d for d in yaml.safe_load_all(out) if d]
    assert {o["kind"] for o in workloads(objects)} == {"Deployment", "DaemonSet"}
    for obj in workloads(objects):
        assert container(obj)["image"] == "registry.corp.example:5000/hami-core:0.1.0", obj["kind"]
        # global first, then the chart's own, each once.
        assert pod_spec(obj)["imagePullSecrets"] == [
            {"name": "corp-pull"},
            {"name": "mirror-pull"},
            {"name": "own"},
        ]
    assert run([helm, "lint", "--strict", parent]).returncode == 0


def test_a_subchart_release_without_a_scheduler_installs_and_uninstalls(
    apiserver: ApiServer, helm: Path, tmp_path: Path
) -> None:
    """``helm install`` of the parent on the real API server: a reporter-only hami-core (replicas 0)."""
    env = helm_env(apiserver, tmp_path)
    parent = parent_chart(tmp_path, {"reporter": {"enabled": True}, "scheduler": {"replicas": 0}})
    namespace, release = f"p-{uuid.uuid4().hex[:8]}", f"p{uuid.uuid4().hex[:6]}"
    base = f"/apis/apps/v1/namespaces/{namespace}"
    install = [helm, "install", release, parent, "--namespace", namespace, "--create-namespace"]
    done = run([*install, "--render-subchart-notes"], env=env)  # a dependency's notes are left out else
    try:
        assert "No scheduler (scheduler.replicas: 0)" in done.stdout.split("NOTES:", 1)[1]
        status, daemonset = apiserver.request("GET", f"{base}/daemonsets/{release}-hami-core-reporter")
        assert status == 200, daemonset
        assert container(daemonset)["image"] == "registry.corp.example:5000/hami-core:0.1.0"
        assert apiserver.request("GET", f"{base}/deployments/{release}-hami-core-scheduler")[0] == 404
    finally:
        run([helm, "uninstall", release, "--namespace", namespace, "--wait=false"], env=env, check=False)
    assert apiserver.request("GET", f"{base}/daemonsets/{release}-hami-core-reporter")[0] == 404


def test_image_registry_and_digest(helm: Path) -> None:
    def image(*values: str) -> str:
        return str(container(find(template(helm, *values), "Deployment"))["image"])

    assert image() == "hami-core:0.1.0"
    assert image("--set", "image.registry=quay.io/acme") == "quay.io/acme/hami-core:0.1.0"
    assert image("--set", "image.registry=quay.io/acme", "--set", "global.imageRegistry=mirror.local") == (
        "mirror.local/hami-core:0.1.0"
    )  # global wins, as in HAMi's chart
    assert image("--set", "image.tag=9.9.9", "--set", f"image.digest={DIGEST}") == f"hami-core@{DIGEST}"
    assert "imagePullSecrets" not in pod_spec(find(template(helm), "Deployment"))


@pytest.mark.parametrize(("replicas", "budget"), [(1, False), (2, True), (3, True)])
def test_the_disruption_budget_never_blocks_a_drain(helm: Path, replicas: int, budget: bool) -> None:
    objects = template(helm, "--set", f"scheduler.replicas={replicas}")
    pdbs = [o for o in objects if o["kind"] == "PodDisruptionBudget"]
    if not budget:  # one replica: any budget would hold its node's drain forever
        assert pdbs == []
        return
    (pdb,) = pdbs
    assert pdb["spec"]["maxUnavailable"] == 1
    assert "minAvailable" not in pdb["spec"]


def test_no_replica_renders_no_scheduler_object(helm: Path) -> None:
    everything = [
        "--set",
        "scheduler.serviceMonitor.enabled=true",
        "--set",
        "scheduler.prometheusRule.enabled=true",
    ]
    assert template(helm, "--set", "scheduler.replicas=0", *everything) == []
    objects = template(helm, "--set", "scheduler.replicas=0", "--set", "reporter.enabled=true", *everything)
    assert {o["metadata"]["labels"]["app.kubernetes.io/component"] for o in objects} == {"reporter"}
    assert kinds(objects) == sorted(
        [
            "ClusterRole",
            "ClusterRoleBinding",
            "DaemonSet",
            "ServiceAccount",
            "ValidatingAdmissionPolicy",
            "ValidatingAdmissionPolicyBinding",
        ]
    )


def test_the_reporter_tolerates_accelerator_taints_at_node_critical_priority(helm: Path) -> None:
    daemonset = find(template(helm, "--set", "reporter.enabled=true"), "DaemonSet")
    spec = pod_spec(daemonset)
    assert spec["priorityClassName"] == "system-node-critical"  # as HAMi's device plugin
    tolerated = {t["key"]: t for t in spec["tolerations"]}
    for key in ("nvidia.com/gpu", "CriticalAddonsOnly", "hygon.com/dcunum", "cambricon.com/mlu"):
        # Exists, no effect: NoSchedule and NoExecute taints alike.
        assert tolerated[key] == {"key": key, "operator": "Exists"}
    own = find(
        template(
            helm,
            "--set",
            "reporter.enabled=true",
            "--set-json",
            "reporter.tolerations=[]",
            "--set",
            "reporter.priorityClassName=",
        ),
        "DaemonSet",
    )
    assert "tolerations" not in pod_spec(own) and "priorityClassName" not in pod_spec(own)


def test_the_reporter_has_its_own_vendors(helm: Path) -> None:
    objects = template(
        helm,
        "--set",
        "reporter.enabled=true",
        "--set-json",
        'vendors=["nvidia","dcu"]',
        "--set-json",
        'reporter.vendors=["dcu"]',
    )
    assert "--vendors=dcu" in container(find(objects, "DaemonSet"))["args"]
    assert "--vendors=nvidia,dcu" in container(find(objects, "Deployment"))["args"]
    # The admission policy lets the reporter write its own drivers' annotations, not the scheduler's.
    policy = find(objects, "ValidatingAdmissionPolicy")
    variables = {v["name"]: v["expression"] for v in policy["spec"]["variables"]}
    assert variables["registerKeys"] == '["hami.io/node-dcu-register"]'
    assert variables["handshakeKeys"] == '["hami.io/node-handshake-dcu"]'
    inherited = template(helm, "--set", "reporter.enabled=true", "--set-json", 'vendors=["nvidia"]')
    assert "--vendors=nvidia" in container(find(inherited, "DaemonSet"))["args"]


def test_the_reporter_pod_monitor(helm: Path) -> None:
    objects = template(
        helm,
        "--set",
        "reporter.enabled=true",
        "--set",
        "reporter.podMonitor.enabled=true",
        "--set",
        "reporter.podMonitor.labels.release=prom",
        "--set",
        "reporter.http.port=9500",
        release="gpu",
        namespace="accel",
    )
    monitor = find(objects, "PodMonitor", "gpu-hami-core-reporter")
    assert monitor["metadata"]["labels"]["release"] == "prom"
    daemonset = find(objects, "DaemonSet")
    assert monitor["spec"]["selector"]["matchLabels"] == daemonset["spec"]["selector"]["matchLabels"]
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": ["accel"]}
    assert monitor["spec"]["podMetricsEndpoints"] == [{"port": "http", "path": "/metrics", "interval": "30s"}]
    assert container(daemonset)["ports"] == [{"name": "http", "containerPort": 9500, "protocol": "TCP"}]
    assert not [o for o in template(helm, "--set", "reporter.enabled=true") if o["kind"] == "PodMonitor"]


def test_service_accounts_of_ones_own(helm: Path) -> None:
    objects = template(
        helm,
        "--set",
        "reporter.enabled=true",
        "--set",
        "scheduler.serviceAccount.create=false",
        "--set",
        "scheduler.serviceAccount.name=registrar",
        "--set",
        "reporter.serviceAccount.name=gpu-agent",
        "--set",
        "reporter.serviceAccount.annotations.iam\\.example\\.com/role=agent",
        namespace="gpu",
    )
    accounts = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ServiceAccount"}
    assert set(accounts) == {"gpu-agent"}  # the scheduler's exists already
    assert accounts["gpu-agent"]["metadata"]["annotations"] == {"iam.example.com/role": "agent"}
    assert pod_spec(find(objects, "Deployment"))["serviceAccountName"] == "registrar"
    assert pod_spec(find(objects, "DaemonSet"))["serviceAccountName"] == "gpu-agent"
    for binding in (o for o in objects if o["kind"] in ("RoleBinding", "ClusterRoleBinding")):
        component = binding["metadata"]["labels"]["app.kubernetes.io/component"]
        name = {"scheduler": "registrar", "reporter": "gpu-agent"}[component]
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": name, "namespace": "gpu"}]
    policy = find(objects, "ValidatingAdmissionPolicy")
    assert policy["spec"]["matchConditions"][0]["expression"] == (
        "request.userInfo.username == 'system:serviceaccount:gpu:gpu-agent'"
    )


def test_probe_timings_are_values(helm: Path) -> None:
    objects = template(
        helm,
        "--set",
        "reporter.enabled=true",
        "--set",
        "scheduler.probes.liveness.periodSeconds=30",
        "--set",
        "scheduler.probes.readiness.failureThreshold=9",
        "--set",
        "reporter.probes.liveness.timeoutSeconds=2",
    )
    scheduler = container(find(objects, "Deployment"))
    assert scheduler["livenessProbe"] == {
        "httpGet": {"path": "/livez", "port": "http"},
        "initialDelaySeconds": 5,
        "periodSeconds": 30,
        "timeoutSeconds": 5,
        "failureThreshold": 6,
    }
    assert scheduler["readinessProbe"]["failureThreshold"] == 9
    assert container(find(objects, "DaemonSet"))["livenessProbe"]["timeoutSeconds"] == 2


def test_a_custom_reporter_account_is_the_one_the_admission_policy_holds_to_its_node(
    apiserver: ApiServer, helm: Path, kubectl: Path, tmp_path: Path
) -> None:
    """With ``reporter.serviceAccount.create=false`` the policy must follow the name, or a reporter's
    token could patch every Node: applied to the real API server, a token of that account bound to a Pod
    on one node may change that Node's hami.io/ annotations and not another Node's."""
    account = "gpu-agent"
    values = ["--set", "scheduler.replicas=0", "--set", "reporter.enabled=true"]
    values += [
        "--set",
        "reporter.serviceAccount.create=false",
        "--set",
        f"reporter.serviceAccount.name={account}",
    ]

    def own_account(applied: Applied) -> list[dict[str, Any]]:
        return [
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": account, "namespace": applied.namespace},
            }
        ]

    mine, other = unique_node_name("sa-own"), unique_node_name("sa-other")
    with applied_chart(
        apiserver, helm, kubectl, tmp_path, *values, prefix="sa", extra=own_account
    ) as applied:
        for node in (mine, other):
            create_node(apiserver, node)
        try:
            pod = apiserver.pod_on_node(applied.namespace, account, mine)
            identity = apiserver.add_token_identity(
                f"{account}@{mine}", apiserver.token_request(applied.namespace, account, pod=pod)
            )
            annotate = {"metadata": {"annotations": {"hami.io/node-mlu-register": "[]"}}}

            def refused_elsewhere() -> tuple[int, str] | None:
                answer = patch_node(apiserver, other, annotate, identity)
                return answer if answer[0] == 403 else None

            # Admission policies load asynchronously: wait until this one refuses the foreign node.
            refused = wait_for(
                "the policy to hold the custom account to its node",
                refused_elsewhere,
                timeout=60,
                interval=0.2,
            )
            assert f"this token is bound to a Pod on node {mine}, not {other}" in refused[1]
            assert patch_node(apiserver, mine, annotate, identity)[0] == 200
        finally:
            for node in (mine, other):
                apiserver.request("DELETE", f"/api/v1/nodes/{node}")


def test_the_reporters_pod_as_the_daemonset_makes_it_is_admitted_at_node_critical_priority(
    apiserver: ApiServer, helm: Path
) -> None:
    """The DaemonSet's pod template, as its controller would create it on a tainted GPU node outside
    kube-system: the real API server admits it and resolves system-node-critical to its priority."""
    namespace = f"pc-{uuid.uuid4().hex[:8]}"
    assert apiserver.request("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})[0] == 201
    daemonset = find(template(helm, "--set", "reporter.enabled=true", namespace=namespace), "DaemonSet")
    node = unique_node_name("tainted-gpu")
    taints = [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]
    status, body = apiserver.request(
        "POST", "/api/v1/nodes", {"metadata": {"name": node}, "spec": {"taints": taints}}
    )
    assert status == 201, body
    try:
        template_ = daemonset["spec"]["template"]
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "reporter-0", "labels": template_["metadata"]["labels"]},
            "spec": {**template_["spec"], "nodeName": node},
        }
        status, stored = apiserver.request("POST", f"/api/v1/namespaces/{namespace}/pods", pod)
        assert status == 201, stored
        assert stored["spec"]["priorityClassName"] == "system-node-critical"
        assert stored["spec"]["priority"] == 2_000_001_000  # Kubernetes' system-node-critical
        tolerated = {t["key"] for t in stored["spec"]["tolerations"]}
        assert "nvidia.com/gpu" in tolerated
    finally:
        apiserver.request("DELETE", f"/api/v1/nodes/{node}")
        apiserver.request("DELETE", f"/api/v1/namespaces/{namespace}")


def test_the_documented_helm_upgrade_takes_a_new_charts_new_defaults(
    apiserver: ApiServer, helm: Path, tmp_path: Path
) -> None:
    """docs/operations.md's ``helm upgrade`` line, run as written (release, namespace and chart path
    replaced) from this chart to a next version that adds a value its templates read. Helm's
    ``--reuse-values`` would keep the old chart's defaults, without the new value, and fail to render."""
    text = (REPO_ROOT / "docs" / "operations.md").read_text()
    (line,) = [ln for ln in text.splitlines() if ln.startswith("helm upgrade hami-core charts/hami-core ")]
    documented = line.split()
    assert documented[:6] == [
        "helm",
        "upgrade",
        "hami-core",
        "charts/hami-core",
        "--namespace",
        "hami-system",
    ]
    flags = documented[6:]
    assert "--reuse-values" not in flags
    next_chart = tmp_path / "next" / "hami-core"
    shutil.copytree(CHART, next_chart)
    (next_chart / "templates" / "knob.yaml").write_text(
        "{{- if .Values.knob.enabled }}\n# knob\n{{- end }}\n"
    )
    with (next_chart / "values.yaml").open("a") as values:
        values.write("knob:\n  enabled: true\n")
    schema = json.loads((next_chart / "values.schema.json").read_text())
    schema["properties"]["knob"] = {"type": "object"}
    (next_chart / "values.schema.json").write_text(json.dumps(schema))

    env = helm_env(apiserver, tmp_path)
    namespace, release = f"u-{uuid.uuid4().hex[:8]}", f"u{uuid.uuid4().hex[:6]}"
    where = ["--namespace", namespace]
    run(
        [helm, "install", release, CHART, *where, "--create-namespace", "--set", "scheduler.replicas=3"],
        env=env,
    )
    try:
        stale = run([helm, "upgrade", release, next_chart, *where, "--reuse-values"], env=env, check=False)
        assert stale.returncode != 0 and "knob" in stale.stderr, stale.stderr  # the trap the docs avoid
        run([helm, "upgrade", release, next_chart, *where, *flags], env=env)
        status, deployment = apiserver.request(
            "GET", f"/apis/apps/v1/namespaces/{namespace}/deployments/{release}-hami-core-scheduler"
        )
        assert status == 200, deployment
        assert deployment["spec"]["replicas"] == 3  # the release's own values are kept
        assert container(deployment)["image"] == "hami-core:0.1.1"  # the line's --set
    finally:
        run([helm, "uninstall", release, *where, "--wait=false"], env=env, check=False)
