"""How the daemons reach Kubernetes: the shared ``--kubeconfig``/``--context`` options and the connection."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TypeVar

import click

from hami_core.kube.client import KubeCluster
from hami_core.kube.port import ClusterError

__all__ = ["cluster_options", "connect"]

F = TypeVar("F", bound=Callable[..., object])


def cluster_options(command: F) -> F:
    """``--kubeconfig`` and ``--context``, each also from the environment."""
    command = click.option(
        "--context", envvar="HAMI_CONTEXT", help="Kubeconfig context. Env: HAMI_CONTEXT."
    )(command)
    command = click.option(
        "--kubeconfig", envvar=["HAMI_KUBECONFIG", "KUBECONFIG"], type=click.Path(dir_okay=False),
        help="Kubeconfig file. Default: in-cluster config when running in a Pod, else ~/.kube/config. "
        "Env: HAMI_KUBECONFIG, KUBECONFIG.",
    )(command)
    return command


def connect(kubeconfig: str | None, context: str | None, *, request_timeout: float) -> KubeCluster:
    """The cluster from the options; a bad or missing configuration is a one-line ``ClickException``."""
    timeouts = {"request_timeout": request_timeout, "connect_timeout": min(10.0, request_timeout)}
    try:
        if kubeconfig:
            return KubeCluster.from_kubeconfig(kubeconfig, context=context, **timeouts)
        if os.environ.get("KUBERNETES_SERVICE_HOST"):
            return KubeCluster.in_cluster(**timeouts)
        return KubeCluster.from_kubeconfig(os.path.expanduser("~/.kube/config"), context=context, **timeouts)
    except ClusterError as exc:
        raise click.ClickException(str(exc)) from None
