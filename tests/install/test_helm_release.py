"""A Helm release's whole life on the real API server: install, upgrade, uninstall."""

from __future__ import annotations

import uuid
from pathlib import Path

from harness.apiserver import ApiServer
from install.kit import CHART, helm_env, run


def test_install_upgrade_and_uninstall(apiserver: ApiServer, helm: Path, tmp_path: Path) -> None:
    env = helm_env(apiserver, tmp_path)
    namespace, release = f"h-{uuid.uuid4().hex[:10]}", f"h{uuid.uuid4().hex[:6]}"
    name = f"{release}-hami-core"
    deployment = f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}-scheduler"
    reporter = f"/apis/apps/v1/namespaces/{namespace}/daemonsets/{name}-reporter"
    policy = f"/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/{name}-reporter-own-node"
    cluster_scoped = [
        f"/apis/rbac.authorization.k8s.io/v1/clusterroles/{name}-scheduler",
        f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{name}-scheduler",
        f"/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles/{name}-scheduler-events",
        f"/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/roles/{name}-scheduler-check-hami",
    ]

    def status_of(path: str) -> int:
        return apiserver.request("GET", path)[0]

    install = [helm, "install", release, CHART, "--namespace", namespace, "--create-namespace"]
    installed = run(install, env=env)
    notes = installed.stdout.split("NOTES:", 1)[1]
    assert f"helm uninstall {release} -n {namespace}" in notes
    cleanup = f"hami cleanup --all --lease-namespace {namespace} --lease-name hami-core-scheduler"
    assert f"{cleanup} --dry-run" in notes
    assert "never run both at once" in notes
    status, body = apiserver.request("GET", deployment)
    assert (status, body["spec"]["replicas"]) == (200, 2)
    assert [status_of(path) for path in cluster_scoped] == [200] * 4
    assert status_of(reporter) == 404

    upgraded = run(
        [helm, "upgrade", release, CHART, "--namespace", namespace, "--reset-then-reuse-values",
         "--set", "scheduler.replicas=3", "--set", "reporter.enabled=true", "--set-json", 'vendors=["mlu"]'],
        env=env,
    )  # fmt: skip
    assert "has been upgraded" in upgraded.stdout
    assert "--vendors mlu" in upgraded.stdout.split("NOTES:", 1)[1]
    status, body = apiserver.request("GET", deployment)
    assert (status, body["spec"]["replicas"]) == (200, 3)
    assert "--vendors=mlu" in body["spec"]["template"]["spec"]["containers"][0]["args"]
    assert status_of(reporter) == 200
    assert status_of(policy) == 200
    history = run([helm, "history", release, "--namespace", namespace], env=env).stdout
    assert len(history.strip().splitlines()) == 3  # a header and two revisions

    uninstalled = run([helm, "uninstall", release, "--namespace", namespace], env=env)
    assert f'release "{release}" uninstalled' in uninstalled.stdout
    assert [status_of(path) for path in (deployment, reporter, policy, *cluster_scoped)] == [404] * 7
    apiserver.request("DELETE", f"/api/v1/namespaces/{namespace}")


def test_a_read_only_release_becomes_the_registrar_by_one_upgrade(
    apiserver: ApiServer, helm: Path, tmp_path: Path
) -> None:
    """docs/operations.md, "Moving to hami-core as the registrar", step 3: `helm upgrade
    --reset-then-reuse-values --set scheduler.readOnly=false` turns a read-only release into one that
    writes, Roles and all."""
    env = helm_env(apiserver, tmp_path)
    namespace, release = f"h-{uuid.uuid4().hex[:10]}", f"h{uuid.uuid4().hex[:6]}"
    name = f"{release}-hami-core-scheduler"
    rbac = "/apis/rbac.authorization.k8s.io/v1"
    deployment = f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}"
    roles = [
        f"{rbac}/namespaces/{namespace}/roles/{name}-leases",
        f"{rbac}/namespaces/default/roles/{name}-events",
        f"{rbac}/namespaces/kube-system/roles/{name}-check-hami",
    ]

    def args() -> list[str]:
        status, body = apiserver.request("GET", deployment)
        assert status == 200, body
        return list(body["spec"]["template"]["spec"]["containers"][0]["args"])

    def verbs() -> list[str]:
        status, body = apiserver.request("GET", f"{rbac}/clusterroles/{name}")
        assert status == 200, body
        return [verb for rule in body["rules"] for verb in rule["verbs"]]

    installed = run(
        [helm, "install", release, CHART, "--namespace", namespace, "--create-namespace",
         "--set", "scheduler.readOnly=true"],
        env=env,
    )  # fmt: skip
    notes = installed.stdout.split("NOTES:", 1)[1]
    assert "The scheduler is READ-ONLY" in notes
    assert "do NOT run `hami cleanup`" in notes and "hami cleanup --all" not in notes
    assert "--read-only" in args()
    assert verbs() == ["get", "list", "watch"]
    assert [apiserver.request("GET", path)[0] for path in roles] == [404] * 3

    upgraded = run(
        [helm, "upgrade", release, CHART, "--namespace", namespace, "--reset-then-reuse-values",
         "--set", "scheduler.readOnly=false"],
        env=env,
    )  # fmt: skip
    notes = upgraded.stdout.split("NOTES:", 1)[1]
    assert "READ-ONLY" not in notes and "never run both at once" in notes
    assert "--read-only" not in args() and "--lease-name=hami-core-scheduler" in args()
    assert verbs() == ["list", "watch", "patch"]
    assert [apiserver.request("GET", path)[0] for path in roles] == [200] * 3

    run([helm, "uninstall", release, "--namespace", namespace], env=env)
    apiserver.request("DELETE", f"/api/v1/namespaces/{namespace}")
