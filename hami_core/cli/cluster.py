"""How the daemons reach Kubernetes: the shared ``--kubeconfig``/``--context`` options, the connection,
and the first reads that tell an operator at once which permission is missing.

A kubeconfig that cannot be used is one line naming the file and why (not found, not readable, not a
kubeconfig, or what the loader said), exit 2. A 403 at start is one line naming the permission and
pointing to the chart's RBAC, exit 1; so is a server certificate that cannot be verified (it would not
be verified on the next try either).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click
import yaml  # type: ignore[import-untyped]  # the kubernetes client's own YAML parser; no stubs installed

from hami_core.kube.access import describe_error
from hami_core.kube.port import ClusterError, Forbidden, NotFound, Untrusted

if TYPE_CHECKING:  # the kubernetes client is imported by connect(), not by every command's parsing
    from hami_core.kube.client import KubeCluster

__all__ = ["ConfigError", "check_access", "cluster_options", "connect", "kubeconfig_problem"]

F = TypeVar("F", bound=Callable[..., object])

#: The kubeconfig used when neither ``--kubeconfig`` nor an in-cluster config is there.
DEFAULT_KUBECONFIG = "~/.kube/config"
#: Keys of which a kubeconfig has at least one.
_KUBECONFIG_KEYS = ("clusters", "contexts", "users", "current-context")


class ConfigError(click.ClickException):
    """The configuration to reach the cluster cannot be used: a usage error, exit 2."""

    exit_code = 2


def cluster_options(command: F) -> F:
    """``--kubeconfig`` and ``--context``, each also from the environment."""
    command = click.option("--context", envvar="HAMI_CONTEXT", help="Kubeconfig context. Env: HAMI_CONTEXT.")(
        command
    )
    command = click.option(
        "--kubeconfig",
        envvar=["HAMI_KUBECONFIG", "KUBECONFIG"],
        metavar="FILE",
        help="Kubeconfig file (KUBECONFIG may list several, separated by ':'). Default: in-cluster config "
        "when running in a Pod, else ~/.kube/config. Env: HAMI_KUBECONFIG, KUBECONFIG.",
    )(command)
    return command


def _one_file_problem(path: str) -> str | None:
    """Why the file at ``path`` is not a kubeconfig one could load, or ``None``."""
    if not os.path.lexists(path):
        return "not found"
    if not os.path.exists(path):
        return f"not found: a symbolic link to {os.readlink(path)}, which does not exist"
    if os.path.isdir(path):
        return "not readable: it is a directory"
    try:
        with open(path, "rb") as stream:
            raw = stream.read(16 * 1024 * 1024)
    except OSError as exc:
        return f"not readable: {exc.strerror or exc}"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return "not a kubeconfig: not UTF-8 text"
    try:
        data: Any = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        return f"not a kubeconfig: not valid YAML{yaml_error_detail(exc)}"
    except RecursionError:
        return "not a kubeconfig: nested too deeply"
    if data is None:
        return "not a kubeconfig: the file is empty"
    if not isinstance(data, dict):
        return f"not a kubeconfig: it holds a YAML {type(data).__name__}, not a mapping"
    if not any(key in data for key in _KUBECONFIG_KEYS):
        return "not a kubeconfig: it has no clusters, contexts, users or current-context"
    return None


def yaml_error_detail(exc: yaml.YAMLError) -> str:
    """Where and why YAML failed to parse, as `` at line N (problem)`` (the line when the parser knows it)."""
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}" if mark is not None else ""
    return f"{where} ({getattr(exc, 'problem', None) or type(exc).__name__})"


def _paths(value: str) -> list[str]:
    return [os.path.expanduser(p) for p in value.split(os.pathsep) if p]


def kubeconfig_problem(value: str) -> str | None:
    """Why ``value`` (a path, or several separated by ``os.pathsep`` as in ``KUBECONFIG``) cannot be
    loaded, as ``"FILE: why"``; ``None`` when it can be tried. Of a list, files that do not exist are
    skipped as kubectl does, unless none exists."""
    paths = _paths(value)
    if not paths:
        return f"{value}: names no file"
    present = [p for p in paths if os.path.lexists(p)]
    if not present:
        return f"{value}: not found" if len(paths) == 1 else f"{value}: none of these files exists"
    for path in present:
        problem = _one_file_problem(path)
        if problem is not None:
            return f"{path}: {problem}"
    return None


def connect(
    kubeconfig: str | None, context: str | None, *, request_timeout: float, pool_size: int = 32
) -> KubeCluster:
    """The cluster from the options; a configuration that cannot be used is a ``ConfigError`` (exit 2)
    naming the file and why. ``pool_size``: connections kept open (at least the requests sent at once)."""
    from hami_core.kube.client import KubeCluster

    timeouts: dict[str, Any] = {
        "request_timeout": request_timeout,
        "connect_timeout": min(10.0, request_timeout),
        "pool_size": pool_size,
    }
    if not kubeconfig and os.environ.get("KUBERNETES_SERVICE_HOST"):
        try:
            return KubeCluster.in_cluster(**timeouts)
        except ClusterError as exc:
            raise ConfigError(str(exc)) from None
    path = kubeconfig or DEFAULT_KUBECONFIG
    problem = kubeconfig_problem(path)
    if problem is not None:
        hint = "" if kubeconfig else " (no --kubeconfig given and not running in a Pod)"
        raise ConfigError(f"kubeconfig {problem}{hint}")
    try:
        return KubeCluster.from_kubeconfig(os.pathsep.join(_paths(path)), context=context, **timeouts)
    except ClusterError as exc:
        raise ConfigError(str(exc)) from None


def check_access(
    reads: Sequence[Callable[[], object]], *, fatal: tuple[type[ClusterError], ...] = (Forbidden, Untrusted)
) -> None:
    """Make the first reads a daemon will make; a refusal is a ``ClickException`` (exit 1) that names
    the missing permission and the chart's RBAC, as is a server certificate that cannot be verified. A
    read of an object not there yet is fine; any other
    failure is left to the daemon, which retries (the API server may come up later)."""
    for read in reads:
        try:
            read()
        except fatal as exc:
            raise click.ClickException(describe_error(exc)) from None
        except NotFound:
            continue
        except ClusterError:
            return
