"""scripts/build-tools.sh and the tests agree on where helm and kubectl are, and kubectl speaks the API
server's release."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from harness.apiserver import REPO_ROOT, k8s_version
from harness.tools import pinned_version, tool_path
from install.kit import run


def script(*args: str, cwd: Path = REPO_ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "scripts/build-tools.sh", *args], cwd=cwd, capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize("tool", ["helm", "kubectl", "promtool"])
def test_the_script_and_the_tests_name_the_same_path(tool: str) -> None:
    done = script("--print", tool)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(tool_path(tool))


def test_kubectl_is_built_from_the_api_servers_release() -> None:
    assert pinned_version("kubectl") == k8s_version()
    assert pinned_version("helm").startswith("v3.")


def test_built_tools_report_their_pins(helm: Path, kubectl: Path) -> None:
    assert run([helm, "version", "--short"]).stdout.startswith(pinned_version("helm"))
    assert f"Client Version: {k8s_version()}" in run([kubectl, "version", "--client"]).stdout


def test_a_kubectl_pin_that_drifts_from_the_api_server_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "repo"
    for path in ("scripts/build-tools.sh", "tests/k8s/apiserver/go.mod", "tests/k8s/helm/go.mod",
                 "tests/k8s/helm/go.sum", "tests/k8s/kubectl/go.sum"):  # fmt: skip
        (copy / path).parent.mkdir(parents=True, exist_ok=True)
        (copy / path).write_bytes((REPO_ROOT / path).read_bytes())
    go_mod = (REPO_ROOT / "tests/k8s/kubectl/go.mod").read_text()
    drifted = go_mod.replace(f"k8s.io/kubernetes {k8s_version()}", "k8s.io/kubernetes v1.36.0")
    assert drifted != go_mod
    (copy / "tests/k8s/kubectl/go.mod").write_text(drifted)
    done = script(cwd=copy)
    assert done.returncode == 1
    assert done.stderr.strip().splitlines() == [
        f"[build-tools] error: tests/k8s/kubectl pins k8s.io/kubernetes v1.36.0 but tests/k8s/apiserver pins "
        f"{k8s_version()}; move both (see docs/testing.md)"
    ]


def test_an_unknown_tool_is_one_error_line() -> None:
    done = script("--print", "kustomize")
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "[build-tools] error: unknown tool 'kustomize' (known: helm, kubectl, promtool)"
    )
