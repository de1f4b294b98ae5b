"""Helpers of the install tests: the built helm and kubectl, running commands, rendering the chart."""

from __future__ import annotations

import os
import subprocess
import sysconfig
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness.apiserver import REPO_ROOT
from harness.tools import ToolError, find_tool

CHART = REPO_ROOT / "charts" / "hami-core"


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


def run(argv: Sequence[str | Path], *, check: bool = True, **kwargs: Any) -> subprocess.CompletedProcess[str]:
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
