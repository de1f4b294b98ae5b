"""deploy/: the chart rendered with default values, committed, kept up to date, and installable as is."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml
from harness.apiserver import REPO_ROOT, ApiServer
from install.kit import run, template

DEPLOY = REPO_ROOT / "deploy" / "hami-core.yaml"
OPERATIONS = REPO_ROOT / "docs" / "operations.md"
COPIED = ["scripts/render-deploy.sh", "scripts/build-tools.sh", "charts", "deploy",
          "tests/k8s/helm", "tests/k8s/kubectl", "tests/k8s/apiserver"]  # fmt: skip


def render_deploy(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "scripts/render-deploy.sh", *args], cwd=root, capture_output=True, text=True, timeout=120
    )


def test_the_committed_manifests_are_up_to_date(helm: Path) -> None:
    done = render_deploy(REPO_ROOT, "--check")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "deploy/hami-core.yaml is up to date"


def as_applied_by_kubectl(obj: dict[str, Any]) -> dict[str, Any]:
    """What scripts/render-deploy.sh makes of a rendered object: no Helm labels."""
    labels = dict(obj["metadata"]["labels"])
    del labels["helm.sh/chart"]
    assert labels["app.kubernetes.io/managed-by"] == "Helm"
    labels["app.kubernetes.io/managed-by"] = "kubectl"
    return {**obj, "metadata": {**obj["metadata"], "labels": labels}}


def test_they_are_the_charts_defaults_plus_the_namespace_labelled_as_kubectls(helm: Path) -> None:
    objects = [doc for doc in yaml.safe_load_all(DEPLOY.read_text()) if doc]
    assert objects[0] == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "hami-core", "labels": {"app.kubernetes.io/part-of": "hami-core"}},
    }
    assert objects[1:] == [as_applied_by_kubectl(o) for o in template(helm)]
    assert "Helm" not in DEPLOY.read_text() and "helm.sh/" not in DEPLOY.read_text()


def test_a_stale_copy_is_caught(helm: Path, tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    for path in COPIED:
        source, target = REPO_ROOT / path, copy / path
        if source.is_dir():
            shutil.copytree(source, target)
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, target)
    values = copy / "charts" / "hami-core" / "values.yaml"
    values.write_text(values.read_text().replace("  replicas: 2\n", "  replicas: 3\n", 1))
    done = render_deploy(copy, "--check")
    assert done.returncode == 1
    assert "-  replicas: 2\n+  replicas: 3" in done.stderr
    assert done.stderr.strip().splitlines()[-1] == (
        "render-deploy: error: deploy/hami-core.yaml is out of date with charts/hami-core; "
        "run 'bash scripts/render-deploy.sh' and commit it"
    )
    assert render_deploy(copy).returncode == 0
    assert render_deploy(copy, "--check").returncode == 0
    assert "  replicas: 3\n" in (copy / "deploy" / "hami-core.yaml").read_text()


def test_bad_usage_is_one_line(helm: Path) -> None:
    done = render_deploy(REPO_ROOT, "--write")
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "render-deploy: error: unknown argument '--write' (usage: render-deploy.sh [--check])"
    )


def documented_block(after: str) -> str:
    """The first ```bash block of docs/operations.md after the line ``after``."""
    text = OPERATIONS.read_text()
    start = text.index(after)
    match = re.search(r"```bash\n(.*?)```", text[start:], re.DOTALL)
    assert match, f"no bash block after {after!r} in {OPERATIONS}"
    return match.group(1)


def test_the_documented_install_and_upgrade_work_as_written(
    apiserver: ApiServer, kubectl: Path, tmp_path: Path
) -> None:
    """docs/operations.md's plain-manifest install and upgrade, run as written by bash with the built
    kubectl on PATH, against the real API server; the release "0.1.1" is the same file, retagged."""
    workdir = tmp_path / "checkout"
    shutil.copytree(REPO_ROOT / "deploy", workdir / "deploy")
    env = {**os.environ, "PATH": f"{kubectl.parent}{os.pathsep}{os.environ['PATH']}",
           "KUBECONFIG": str(apiserver.kubeconfig())}  # fmt: skip
    admin = [kubectl, "--kubeconfig", apiserver.kubeconfig()]

    def follow(block: str) -> str:
        return run(["bash", "-euo", "pipefail", "-c", block], cwd=workdir, env=env).stdout

    def deployment() -> dict[str, Any]:
        got = run([*admin, "get", "-n", "hami-core", "deployment/hami-core-scheduler", "-o", "json"]).stdout
        return dict(json.loads(got))

    install = documented_block("## Install with plain manifests")
    upgrade = documented_block("With the plain manifests, copy the new release's")
    try:
        applied = follow(install)
        expected = [doc for doc in yaml.safe_load_all(DEPLOY.read_text()) if doc]
        assert len(applied.strip().splitlines()) == len(expected)
        assert all(line.endswith("serverside-applied") for line in applied.strip().splitlines())
        listed = json.loads(run([*admin, "get", "-f", DEPLOY, "-o", "json"]).stdout)["items"]
        assert sorted((o["kind"], o["metadata"]["name"]) for o in listed) == sorted(
            (o["kind"], o["metadata"]["name"]) for o in expected
        )
        for obj in listed:
            labels = obj["metadata"].get("labels", {})
            assert "helm.sh/chart" not in labels, obj["metadata"]["name"]
            assert labels.get("app.kubernetes.io/managed-by") in (None, "kubectl"), obj["metadata"]["name"]
        first = deployment()
        assert first["metadata"]["namespace"] == "hami-core"
        assert first["spec"]["replicas"] == 2
        (container,) = first["spec"]["template"]["spec"]["containers"]
        assert container["image"] == "registry.example.com/hami-core:0.1.0"

        follow(upgrade)
        (container,) = deployment()["spec"]["template"]["spec"]["containers"]
        assert container["image"] == "registry.example.com/hami-core:0.1.1"
        # Applying again changes nothing (server-side apply is idempotent with the same manager).
        again = follow("kubectl apply --server-side -k hami-core-deploy/")
        assert all(line.endswith("serverside-applied") for line in again.strip().splitlines())
        assert deployment()["metadata"]["generation"] == 2  # the install, the upgrade; not the re-apply
    finally:
        run([*admin, "delete", "--ignore-not-found", "--wait=false", "-f", REPO_ROOT / "deploy"], check=False)
