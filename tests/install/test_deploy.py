"""deploy/: the chart rendered with default values, committed, kept up to date, and installable as is."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import yaml
from harness.apiserver import REPO_ROOT, ApiServer
from install.kit import run, template

DEPLOY = REPO_ROOT / "deploy" / "hami-core.yaml"
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


def test_they_are_the_charts_defaults_plus_the_namespace(helm: Path) -> None:
    objects = [doc for doc in yaml.safe_load_all(DEPLOY.read_text()) if doc]
    assert objects[0] == {
        "apiVersion": "v1",
        "kind": "Namespace",
        "metadata": {"name": "hami-core", "labels": {"app.kubernetes.io/part-of": "hami-core"}},
    }
    assert objects[1:] == template(helm)


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


def test_kubectl_apply_of_deploy_creates_everything(apiserver: ApiServer, kubectl: Path) -> None:
    admin = [kubectl, "--kubeconfig", apiserver.kubeconfig()]
    applied = run([*admin, "apply", "--server-side", "-f", REPO_ROOT / "deploy"]).stdout
    try:
        expected = [doc for doc in yaml.safe_load_all(DEPLOY.read_text()) if doc]
        assert len(applied.strip().splitlines()) == len(expected)
        listed = json.loads(run([*admin, "get", "-f", DEPLOY, "-o", "json"]).stdout)["items"]
        assert [(o["kind"], o["metadata"]["name"]) for o in listed] == [
            (o["kind"], o["metadata"]["name"]) for o in expected
        ]
        deployment = next(o for o in listed if o["kind"] == "Deployment")
        assert deployment["metadata"]["namespace"] == "hami-core"
        assert deployment["spec"]["replicas"] == 2
        # Applying again changes nothing (server-side apply is idempotent with the same manager).
        again = run([*admin, "apply", "--server-side", "-f", REPO_ROOT / "deploy"]).stdout
        assert all(line.endswith("serverside-applied") for line in again.strip().splitlines())
    finally:
        run([*admin, "delete", "--ignore-not-found", "--wait=false", "-f", REPO_ROOT / "deploy"], check=False)
