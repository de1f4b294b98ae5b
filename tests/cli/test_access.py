"""Reaching the cluster: a kubeconfig that cannot be used says which file and why (exit 2); a refusal by
the real API server says which permission is missing and points to the chart's RBAC (exit 1)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from harness import rbac
from harness.fixtures import unique_node_name

from hami_core.cli.cluster import kubeconfig_problem
from hami_core.kube.access import REPORTER_POLICY_HINT, explain
from hami_core.kube.port import Forbidden

HAMI = str(Path(sys.executable).with_name("hami"))
VALID_SHAPE = (
    "apiVersion: v1\nkind: Config\n"
    "clusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
    "users: [{name: u, user: {token: t}}]\n"
    "contexts: [{name: x, context: {cluster: c, user: u}}]\n"
)


def last_error(result: subprocess.CompletedProcess[str], code: int) -> str:
    """The error line a ``--once`` pass ends with (its log records come before it)."""
    assert result.returncode == code, result
    line = result.stderr.strip().splitlines()[-1]
    assert line.startswith("error: "), result.stderr
    return line


def hami(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [HAMI, *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
        stdin=subprocess.DEVNULL,
    )


def one_error(result: subprocess.CompletedProcess[str], code: int) -> str:
    assert result.returncode == code, result
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("content", "why"),
    [
        (None, "not found"),
        ("", "not a kubeconfig: the file is empty"),
        (b"\x7fELF\x02\x01\x01\x00\xd0\xff", "not a kubeconfig: not UTF-8 text"),
        ("- a\n- b\n", "not a kubeconfig: it holds a YAML list, not a mapping"),
        ("clusters: [\n", "not a kubeconfig: not valid YAML at line 2"),
        ("hello: world\n", "not a kubeconfig: it has no clusters, contexts, users or current-context"),
    ],
)
def test_a_kubeconfig_that_cannot_be_used_names_the_file_and_why(
    content: str | bytes | None, why: str, tmp_path: Path
) -> None:
    path = tmp_path / "config"
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif content is not None:
        path.write_text(content)
    for command in (["scheduler", "run", "--http-listen", "off"], ["reporter", "run", "--node-name", "n"]):
        line = one_error(hami(*command, "--kubeconfig", str(path)), 2)
        assert line.startswith(f"error: kubeconfig {path}: {why}"), line


def test_a_directory_a_dangling_link_and_what_the_loader_refuses(tmp_path: Path) -> None:
    assert (
        one_error(hami("reporter", "run", "--node-name", "n", "--kubeconfig", str(tmp_path)), 2)
        == f"error: kubeconfig {tmp_path}: not readable: it is a directory"
    )
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "gone")
    assert (
        one_error(hami("reporter", "run", "--node-name", "n", "--kubeconfig", str(link)), 2)
        == f"error: kubeconfig {link}: not found: a symbolic link to {tmp_path / 'gone'}, "
        "which does not exist"
    )
    # The right shape, but no current context: the loader's own words, still naming the file.
    config = tmp_path / "no-context"
    config.write_text(VALID_SHAPE)
    line = one_error(hami("reporter", "run", "--node-name", "n", "--kubeconfig", str(config)), 2)
    assert line.startswith(f"error: kubeconfig {config}: ") and "current-context" in line
    line = one_error(
        hami("reporter", "run", "--node-name", "n", "--kubeconfig", str(config), "--context", "nope"), 2
    )
    assert line.startswith(f"error: kubeconfig {config}: ") and "nope" in line


def test_the_kubeconfig_variable_may_list_files(tmp_path: Path) -> None:
    missing = f"{tmp_path / 'a'}{os.pathsep}{tmp_path / 'b'}"
    line = one_error(hami("reporter", "run", "--node-name", "n", env={"KUBECONFIG": missing}), 2)
    assert line == f"error: kubeconfig {missing}: none of these files exists"
    (tmp_path / "b").write_text("- not a kubeconfig\n")
    assert (
        kubeconfig_problem(missing)
        == f"{tmp_path / 'b'}: not a kubeconfig: it holds a YAML list, not a mapping"
    )


def test_no_kubeconfig_at_all_says_where_it_looked(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "KUBECONFIG": "", "HAMI_KUBECONFIG": "", "KUBERNETES_SERVICE_HOST": ""}
    line = one_error(hami("reporter", "run", "--node-name", "n", env=env), 2)
    assert (
        line == "error: kubeconfig ~/.kube/config: not found (no --kubeconfig given and not running in a Pod)"
    )


def test_an_unreadable_kubeconfig(tmp_path: Path) -> None:
    # Root reads any file, so the check runs as nobody when the tests run as root.
    shared = Path(tempfile.mkdtemp(prefix="hami-access-"))
    try:
        shared.chmod(0o755)
        path = shared / "config"
        path.write_text(VALID_SHAPE)
        path.chmod(0o000)
        code = (
            f"from hami_core.cli.cluster import kubeconfig_problem; print(kubeconfig_problem({str(path)!r}))"
        )
        as_user = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if os.geteuid() == 0 else []
        result = subprocess.run(
            [*as_user, sys.executable, "-c", code], capture_output=True, text=True, timeout=60
        )
        assert result.stdout.strip() == f"{path}: not readable: Permission denied", result
    finally:
        path.unlink(missing_ok=True)
        shared.rmdir()


# -- refusals of the real API server ---------------------------------------------------------------------


def _identity(apiserver: Any, name: str, rules: list[dict[str, Any]] | None = None) -> str:
    """A client-certificate user bound to a ClusterRole of ``rules`` (none: no rights at all)."""
    user = apiserver.add_identity(f"hami-test-{name}-{uuid.uuid4().hex[:6]}")
    if rules is not None:
        role = {"apiVersion": rbac.RBAC_V1, "kind": "ClusterRole", "metadata": {"name": user}, "rules": rules}
        for path, body in (
            ("/apis/rbac.authorization.k8s.io/v1/clusterroles", role),
            ("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", rbac.binding(user, rbac.user(user))),
        ):
            status, answer = apiserver.request("POST", path, body)
            assert status == 201, answer
    return str(user)


@pytest.fixture
def node(apiserver: Any) -> Iterator[str]:
    name = unique_node_name("access")
    status, _ = apiserver.request("POST", "/api/v1/nodes", {"metadata": {"name": name}})
    assert status == 201
    yield name
    apiserver.request("DELETE", f"/api/v1/nodes/{name}")


def _scheduler(apiserver: Any, identity: str, namespace: str) -> subprocess.CompletedProcess[str]:
    return hami(
        "scheduler",
        "run",
        "--kubeconfig",
        apiserver.kubeconfig(identity),
        "--http-listen",
        "off",
        "--lease-namespace",
        namespace,
        "--vendors",
        "mlu",
    )


def test_the_scheduler_without_list_on_nodes_says_so_at_start(
    apiserver: Any, node: str, apiserver_namespace: str
) -> None:
    reporter = apiserver.reporter(node)  # may get and patch Nodes, not list them
    line = one_error(_scheduler(apiserver, reporter, apiserver_namespace), 1)
    # The reporter is the DaemonSet's ServiceAccount, as the API server names it.
    assert re.search(
        r"missing RBAC permission: user '[^']*hami-reporter' may not list nodes cluster-wide", line
    ), line
    assert line.endswith("the chart's RBAC grants each daemon what it needs (charts/hami-core)"), line


def test_the_scheduler_without_leases_names_the_namespace(apiserver: Any, apiserver_namespace: str) -> None:
    lister = _identity(apiserver, "lister", [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}])
    line = one_error(_scheduler(apiserver, lister, apiserver_namespace), 1)
    assert (
        f"missing RBAC permission: user '{lister}' may not get leases (API group coordination.k8s.io) "
        f"in namespace {apiserver_namespace}"
    ) in line, line
    assert "charts/hami-core" in line
    # Without leader election, no Lease is read: the same identity gets past the start (and is stopped).
    proc = subprocess.Popen(
        [
            HAMI,
            "scheduler",
            "run",
            "--kubeconfig",
            apiserver.kubeconfig(lister),
            "--http-listen",
            "off",
            "--lease-namespace",
            apiserver_namespace,
            "--vendors",
            "mlu",
            "--leader-elect=false",
            "--log-format",
            "json",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stderr is not None
        records: list[dict[str, Any]] = []
        while not any("starting" in r["msg"] for r in records):  # past the start; nothing above info
            records.append(json.loads(proc.stderr.readline()))
            assert records[-1]["level"] == "info", records
    finally:
        proc.terminate()
        proc.wait(30)


def test_the_reporter_without_rights_names_the_permission(apiserver: Any, node: str) -> None:
    nobody = _identity(apiserver, "nobody")
    result = hami(
        "reporter",
        "run",
        "--once",
        "--node-name",
        node,
        "--vendors",
        "mlu",
        "--kubeconfig",
        apiserver.kubeconfig(nobody),
    )
    line = last_error(result, 1)
    assert line.startswith(f"error: cannot read node {node}: get node '{node}': 403 ")
    assert f"missing RBAC permission: user '{nobody}' may not get nodes cluster-wide" in line
    assert "charts/hami-core" in line


def test_an_admission_policy_refusal_is_not_called_a_missing_permission(
    apiserver: Any, node: str, tmp_path: Path
) -> None:
    other = unique_node_name("access-other")
    apiserver.request("POST", "/api/v1/nodes", {"metadata": {"name": other}})
    devices = tmp_path / "devices.json"
    devices.write_text(json.dumps({"mlu": [{"id": "MLU-0", "count": 1, "health": True}]}))
    try:
        result = hami(
            "reporter",
            "run",
            "--once",
            "--node-name",
            other,
            "--vendors",
            "mlu",
            "--kubeconfig",
            apiserver.kubeconfig(apiserver.reporter(node)),
            env={"HAMI_FAKE_DEVICES": str(devices)},
        )
    finally:
        apiserver.request("DELETE", f"/api/v1/nodes/{other}")
    line = last_error(result, 1)
    assert line.startswith(f"error: cannot patch node {other}: ")
    assert (
        "refused by the admission policy 'hami-reporter-own-node', not for a missing RBAC permission" in line
    ), line
    assert line.endswith(f"; {REPORTER_POLICY_HINT}"), line


def test_credentials_the_server_does_not_know(
    apiserver: Any, tmp_path: Path, apiserver_namespace: str
) -> None:
    config = json.loads(Path(apiserver.kubeconfig("hami-scheduler")).read_text())
    config["users"][0]["user"] = {"token": "not-a-token"}
    path = tmp_path / "bad-token.kubeconfig"
    path.write_text(json.dumps(config))
    line = one_error(
        hami(
            "scheduler",
            "run",
            "--kubeconfig",
            str(path),
            "--http-listen",
            "off",
            "--lease-namespace",
            apiserver_namespace,
        ),
        1,
    )
    assert "401" in line and "the API server did not accept the credentials" in line, line


@pytest.mark.parametrize(
    ("policy", "hinted"),
    [("gpu-hami-core-reporter-own-node", True), ("hami-reporter-own-node", True), ("site-rules", False)],
)
def test_a_refusal_by_the_reporters_policy_says_what_it_allows(policy: str, hinted: bool) -> None:
    error = Forbidden(
        f"patch node n1: (403) ValidatingAdmissionPolicy '{policy}' with binding '{policy}' denied request: "
        "a reporter may only change its drivers' register and handshake annotations (...), not hami.io/x",
        status=403,
    )
    line = explain(error)
    assert line is not None and line.startswith(
        f"refused by the admission policy '{policy}', not for a missing"
    )
    assert line.endswith(REPORTER_POLICY_HINT) is hinted


@pytest.mark.parametrize("daemon", ["scheduler", "reporter"])
def test_a_server_certificate_that_cannot_be_verified_is_one_line_at_start(
    apiserver: Any, tmp_path: Path, apiserver_namespace: str, daemon: str
) -> None:
    config = json.loads(Path(apiserver.kubeconfig("hami-scheduler")).read_text())
    # the system's roots, which did not sign the harness's serving certificate
    config["clusters"][0]["cluster"]["certificate-authority"] = "/etc/ssl/certs/ca-certificates.crt"
    path = tmp_path / "other-ca.kubeconfig"
    path.write_text(json.dumps(config))
    args = ["--kubeconfig", str(path), "--http-listen", "off"]
    if daemon == "scheduler":
        args += ["--lease-namespace", apiserver_namespace]
    else:
        args += ["--node-name", "node-a"]
    line = one_error(hami(daemon, "run", *args, env={"HAMI_VENDORS": "nvidia"}), 1)
    assert "the API server's certificate cannot be verified" in line, line
    assert "CERTIFICATE_VERIFY_FAILED" in line and "certificate-authority" in line
