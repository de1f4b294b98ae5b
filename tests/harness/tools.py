"""Where scripts/build-tools.sh puts helm, kubectl and promtool, computed the same way (same pins, same key).

The install tests run the real tools: ``helm lint`` and ``helm template`` of ``charts/hami-core``,
``kubectl apply --server-side`` of the result against the harness API server, and ``promtool test rules``
on the chart's alert rules.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from harness.apiserver import REPO_ROOT

RECIPE = 1  # keep equal to RECIPE in scripts/build-tools.sh
MODULES = {"helm": "tests/k8s/helm", "kubectl": "tests/k8s/kubectl", "promtool": "tests/k8s/promtool"}
PINNED = {
    "helm": "helm.sh/helm/v3",
    "kubectl": "k8s.io/kubernetes",
    "promtool": "github.com/prometheus/prometheus",
}


class ToolError(RuntimeError):
    """A tool is not built, or its pins are inconsistent."""


def pinned_version(tool: str, root: Path = REPO_ROOT) -> str:
    """The version of the module ``tool`` is built from, read from its wrapper module's go.mod."""
    go_mod = root / MODULES[tool] / "go.mod"
    module = re.escape(PINNED[tool])
    match = re.search(rf"^\s*(?:require\s+)?{module}\s+(v\S+)", go_mod.read_text(), re.MULTILINE)
    if match is None:
        raise ToolError(f"{go_mod}: no '{PINNED[tool]} vX.Y.Z' requirement")
    return match.group(1)


def tool_path(tool: str, root: Path = REPO_ROOT) -> Path:
    """``<cache>/<tool>-<version>-<key>/<tool>``, as ``bash scripts/build-tools.sh --print TOOL`` says."""
    module = root / MODULES[tool]
    digest = hashlib.sha256(f"recipe {RECIPE}\n".encode())
    for name in ("go.mod", "go.sum"):
        digest.update((module / name).read_bytes())
    cache = os.environ.get("HAMI_TOOLS_CACHE") or str(Path.home() / ".cache" / "hami-core" / "tools")
    return Path(cache) / f"{tool}-{pinned_version(tool, root)}-{digest.hexdigest()[:12]}" / tool


def find_tool(tool: str) -> Path:
    """The built ``tool``; a missing one is a ``ToolError`` naming the script that builds it."""
    path = tool_path(tool)
    if not (os.access(path, os.X_OK) and (path.parent / ".complete").is_file()):
        raise ToolError(f"{tool} not found at {path}; run `bash scripts/build-tools.sh` to build it")
    return path
