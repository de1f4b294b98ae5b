"""Helpers of the install tests: the built helm and kubectl, running commands, rendering the chart and
applying it to the real API server (``applied_chart``), helm's environment for a release (``helm_env``)."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sysconfig
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness.apiserver import REPO_ROOT
from harness.poll import wait_for
from harness.tools import ToolError, find_tool
from prometheus_client.parser import text_string_to_metric_families

CHART = REPO_ROOT / "charts" / "hami-core"
MERGE_PATCH = "application/merge-patch+json"
WRITE_VERBS = ("POST", "PUT", "PATCH", "DELETE", "DELETECOLLECTION", "APPLY")


def tool_or_fail(tool: str) -> Path:
    """The built tool; missing, the test fails naming the build script (a local run may skip with
    HAMI_SKIP_TOOLS=1, never CI)."""
    try:
        return find_tool(tool)
    except ToolError as err:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{err} (CI=true: never skipped)", pytrace=False)
        if os.environ.get("HAMI_SKIP_TOOLS") == "1":
            pytest.skip(f"HAMI_SKIP_TOOLS=1: {err}")
        pytest.fail(f"{err} (or set HAMI_SKIP_TOOLS=1 to skip locally)", pytrace=False)


def run(argv: Sequence[object], *, check: bool = True, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """Run a command; on an unexpected exit status the test fails with its output."""
    done = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=300, **kwargs)
    if check and done.returncode != 0:
        pytest.fail(
            f"{' '.join(str(a) for a in argv)} exited {done.returncode}\nstdout:\n{done.stdout}\n"
            f"stderr:\n{done.stderr}",
            pytrace=False,
        )
    return done


def template(
    helm: Path, *args: str, release: str = "hami-core", namespace: str = "hami-core"
) -> list[dict[str, Any]]:
    """``helm template`` of the chart, as a list of objects."""
    out = run([helm, "template", release, CHART, "--namespace", namespace, *args]).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


@dataclass(frozen=True)
class Applied:
    """The chart as ``applied_chart`` rendered and applied it."""

    namespace: str
    release: str
    manifest: Path
    #: The chart's objects as rendered (without the test's ``extra`` ones).
    objects: list[dict[str, Any]]

    @property
    def scheduler(self) -> str:
        return f"{self.release}-hami-core-scheduler"

    @property
    def reporter(self) -> str:
        return f"{self.release}-hami-core-reporter"

    def container_args(self, kind: str) -> list[str]:
        (container,) = find(self.objects, kind)["spec"]["template"]["spec"]["containers"]
        return list(container["args"])


@contextlib.contextmanager
def applied_chart(
    apiserver: Any,
    helm: Path,
    kubectl: Path,
    directory: Path,
    *values: str,
    prefix: str = "i",
    extra: Callable[[Applied], Sequence[dict[str, Any]]] = lambda applied: (),
) -> Iterator[Applied]:
    """``helm template`` of the chart with ``values`` into a fresh namespace (``<prefix>-<random>``),
    written to ``directory`` with the ``extra`` objects the test adds and applied as the admin
    (``kubectl apply --server-side``); deleted again afterwards, with the namespace."""
    namespace, release = f"{prefix}-{uuid.uuid4().hex[:10]}", f"r{uuid.uuid4().hex[:6]}"
    status, body = apiserver.request("POST", "/api/v1/namespaces", {"metadata": {"name": namespace}})
    assert status == 201, body
    admin = [kubectl, "--kubeconfig", apiserver.kubeconfig()]
    manifest = directory / "hami-core.yaml"
    try:
        applied = Applied(
            namespace, release, manifest, template(helm, *values, release=release, namespace=namespace)
        )
        manifest.write_text(yaml.safe_dump_all([*applied.objects, *extra(applied)]))
        run([*admin, "apply", "--server-side", "-f", manifest])
        yield applied
    finally:
        if manifest.exists():
            run([*admin, "delete", "--wait=false", "--ignore-not-found", "-f", manifest], check=False)
        apiserver.request("DELETE", f"/api/v1/namespaces/{namespace}")


def helm_env(apiserver: Any, directory: Path) -> dict[str, str]:
    """The environment for ``helm install`` / ``upgrade`` / ``uninstall`` on ``apiserver`` as its admin,
    with helm's cache, configuration and data under ``directory`` (nothing of the user's)."""
    env = {**os.environ, "KUBECONFIG": str(apiserver.kubeconfig())}
    env.update({f"HELM_{kind}_HOME": str(directory / kind.lower()) for kind in ("CACHE", "CONFIG", "DATA")})
    return env


def find(objects: Sequence[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    """The one object of ``kind`` (and ``name``); the test fails when there is not exactly one."""
    found = [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    assert len(found) == 1, f"{len(found)} {kind} {name or ''} in {[o['kind'] for o in objects]}"
    return found[0]


def kinds(objects: Sequence[dict[str, Any]]) -> list[str]:
    return sorted(o["kind"] for o in objects)


def allowed(
    apiserver: Any,
    identity: str,
    verb: str,
    resource: str,
    *,
    group: str = "",
    namespace: str | None = None,
    name: str | None = None,
    subresource: str | None = None,
) -> bool:
    """What the API server answers when ``identity`` asks "may I?" (a SelfSubjectAccessReview)."""
    attributes: dict[str, str] = {"verb": verb, "resource": resource, "group": group}
    for key, value in (("namespace", namespace), ("name", name), ("subresource", subresource)):
        if value is not None:
            attributes[key] = value
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": attributes},
    }
    status, body = apiserver.request(
        "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", review, identity=identity
    )
    assert status == 201, body
    return bool(body["status"]["allowed"])


def dependencies_only(target: Path) -> Path:
    """The project venv's site-packages without anything of hami's (symlinks)."""
    shared = Path(sysconfig.get_paths()["purelib"])
    target.mkdir()
    for entry in shared.iterdir():
        name = entry.name.lower()
        if name.startswith(("hami", "__editable__")) or name.endswith(".pth"):
            continue
        (target / entry.name).symlink_to(entry)
    return target


def create_node(apiserver: Any, name: str, **metadata: Any) -> None:
    status, body = apiserver.request("POST", "/api/v1/nodes", {"metadata": {"name": name, **metadata}})
    assert status == 201, body


def patch_node(apiserver: Any, node: str, body: dict[str, Any], identity: str) -> tuple[int, str]:
    """A merge patch of ``node`` as ``identity``: (status, the refusal's message or '')."""
    status, answer = apiserver.request(
        "PATCH", f"/api/v1/nodes/{node}", body, identity=identity, content_type=MERGE_PATCH
    )
    return status, answer.get("message", "") if isinstance(answer, dict) else str(answer)


def http_status(port: int, path: str) -> int:
    """What a local daemon's endpoint answers for ``path`` (0: no answer), as a kubelet probe sees it."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=2) as response:
            return int(response.status)
    except urllib.error.HTTPError as err:
        return int(err.code)
    except OSError:
        return 0


def listening_port(log: Path, timeout: float = 20) -> int:
    """The port a daemon started with ``--http-listen=127.0.0.1:0`` logged that it serves on."""
    found = wait_for(
        f"the endpoint's address in {log.name}",
        lambda: re.search(r"http://127\.0\.0\.1:(\d+)", log.read_text()),
        timeout=timeout,
        interval=0.05,
    )
    return int(found.group(1))


def refused_writes(apiserver: Any) -> float:
    """Write requests the API server refused with 403, by its own count (``apiserver_request_total``):
    a write tried by an identity that may only read is one of them."""
    status, text = apiserver.request("GET", "/metrics")
    assert status == 200, text
    total = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if (
                sample.name == "apiserver_request_total"
                and sample.labels.get("code") == "403"
                and sample.labels.get("verb") in WRITE_VERBS
            ):
                total += sample.value
    return total


#: Every driver of the packages under vendors/ (the default build installs them all).
IN_TREE = [
    "amd", "ascend310p", "ascend910a", "ascend910b2", "ascend910b3", "ascend910b4", "ascend910b4-1",
    "ascend910c", "awsneuron", "biren", "dcu", "enflame-drs", "enflame-gcu", "iluvatar-bi-v100",
    "iluvatar-bi-v150", "iluvatar-mr-v100", "iluvatar-mr-v50", "kunlun", "kunlun-card", "metax-gpu",
    "metax-sgpu", "mlu", "mthreads", "nvidia", "vastai",
]  # fmt: skip
