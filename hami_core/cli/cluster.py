"""How the commands reach Kubernetes: ``--kubeconfig``/``--context``, the connection (a bad kubeconfig:
one line, exit 2), and the first reads (a 403 or an untrusted certificate: one line, exit 1)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click
import yaml  # type: ignore[import-untyped]  # the kubernetes client's own YAML parser; no stubs installed

from hami_core.kube.access import describe_error
from hami_core.kube.port import AdminCluster, ClusterError, Forbidden, NodeSnapshot, NotFound, Untrusted

if TYPE_CHECKING:  # the kubernetes client is imported by connect(), not by every command's parsing
    from hami_core.kube.client import KubeCluster

__all__ = [
    "ConfigError",
    "all_nodes",
    "check_access",
    "cluster_options",
    "connect",
    "kubeconfig_problem",
    "read_mapping",
]

F = TypeVar("F", bound=Callable[..., object])

#: Nodes per list page.
PAGE = 500
#: The kubeconfig used when neither ``--kubeconfig`` nor an in-cluster config is there.
DEFAULT_KUBECONFIG = "~/.kube/config"
#: Keys of which a kubeconfig has at least one.
_KUBECONFIG_KEYS = ("clusters", "contexts", "users", "current-context")


class ConfigError(click.ClickException):
    """A configuration file that cannot be used (a kubeconfig, a device config): exit 2, in one line."""

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


def read_mapping(path: str, what: str, *, syntax: str = "YAML", shape: str = "a mapping") -> dict[str, Any]:
    """The mapping in the YAML file at ``path`` (``-``: stdin), or a ``ValueError`` that follows the path."""
    if path == "-":
        if sys.stdin is None:  # started with its standard input closed (``<&-``)
            raise ValueError("not readable: it is closed")
        text = sys.stdin.read()
    else:
        try:
            with open(path, "rb") as stream:
                raw = stream.read(64 * 1024 * 1024)
        except FileNotFoundError:
            link = os.path.islink(path) and f": a symbolic link to {os.readlink(path)}, which does not exist"
            raise ValueError(f"not found{link or ''}") from None
        except IsADirectoryError:
            raise ValueError("not readable: it is a directory") from None
        except OSError as exc:
            raise ValueError(f"not readable: {exc.strerror or exc}") from None
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise ValueError(f"not {what}: not UTF-8 text") from None
    try:
        data: Any = yaml.safe_load(text)
    except yaml.YAMLError as exc:  # where, when the parser knows it, and why
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or type(exc).__name__
        line = f" at line {mark.line + 1}" if mark is not None else ""
        raise ValueError(f"not {what}: not valid {syntax}{line} ({problem})") from None
    except RecursionError:
        raise ValueError(f"not {what}: nested too deeply") from None
    except ValueError as exc:  # a value YAML reads but Python will not hold (a 13th month, a huge integer)
        raise ValueError(f"not {what}: not valid {syntax} ({str(exc).split(';')[0]})") from None
    if data is None:
        raise ValueError(f"not {what}: the file is empty")
    if not isinstance(data, dict):
        raise ValueError(f"not {what}: it holds a YAML {type(data).__name__}, not {shape}")
    return data


def _paths(value: str) -> list[str]:
    return [os.path.expanduser(p) for p in value.split(os.pathsep) if p]


def kubeconfig_problem(value: str) -> str | None:
    """Why ``value`` (paths as in ``KUBECONFIG``; missing ones skipped as kubectl does, unless all are)
    cannot be loaded, as ``"FILE: why"``; ``None`` when it can be tried."""
    paths = _paths(value)
    if not paths:
        return f"{value}: names no file"
    present = [p for p in paths if os.path.lexists(p)]
    if not present:
        return f"{value}: not found" if len(paths) == 1 else f"{value}: none of these files exists"
    for path in present:
        try:
            if not any(key in read_mapping(path, "a kubeconfig") for key in _KUBECONFIG_KEYS):
                return f"{path}: not a kubeconfig: it has no clusters, contexts, users or current-context"
        except ValueError as exc:
            return f"{path}: {exc}"
    return None


def all_nodes(cluster: AdminCluster, limit: int = PAGE) -> Iterator[NodeSnapshot]:
    """Every Node, ``limit`` per list page; a failed page raises its ``ClusterError``."""
    token: str | None = None
    while True:
        page = cluster.list_nodes(limit=limit, continue_token=token)
        yield from page.items
        token = page.continue_token
        if not token:
            return


def connect(
    kubeconfig: str | None, context: str | None, *, request_timeout: float, pool_size: int | None = None
) -> KubeCluster:
    """The cluster from the options (``pool_size``: the client's own default when not given), or a
    ``ConfigError`` naming the file and why."""
    from hami_core.kube.client import KubeCluster

    timeouts: dict[str, Any] = {
        "request_timeout": request_timeout,
        "connect_timeout": min(10.0, request_timeout),
    }
    if pool_size is not None:
        timeouts["pool_size"] = pool_size
    path = kubeconfig or DEFAULT_KUBECONFIG
    try:
        if not kubeconfig and os.environ.get("KUBERNETES_SERVICE_HOST"):
            return KubeCluster.in_cluster(**timeouts)
        problem = kubeconfig_problem(path)
        if problem is not None:
            hint = "" if kubeconfig else " (no --kubeconfig given and not running in a Pod)"
            raise ConfigError(f"kubeconfig {problem}{hint}")
        return KubeCluster.from_kubeconfig(os.pathsep.join(_paths(path)), context=context, **timeouts)
    except ClusterError as exc:
        raise ConfigError(str(exc)) from None


def check_access(
    reads: Sequence[Callable[[], object]], *, fatal: tuple[type[ClusterError], ...] = (Forbidden, Untrusted)
) -> None:
    """The daemon's first reads: a ``fatal`` error exits 1 in one line; the rest is the daemon's to retry."""
    for read in reads:
        try:
            read()
        except fatal as exc:
            raise click.ClickException(describe_error(exc)) from None
        except NotFound:
            continue
        except ClusterError:
            return
