"""Where the scheduler's leader Lease is: found by name in any namespace (the chart's release namespace,
or ``kube-system``) or in the one given; none found is said plainly."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import TypeVar

import attrs
import click

from hami_core.k8snames import is_dns_label, is_dns_subdomain
from hami_core.kube.access import describe_error
from hami_core.kube.port import AdminCluster, ClusterError, Lease, NotFound
from hami_core.scheduler.config import DEFAULT_LEASE_NAME

__all__ = ["LeaseSearch", "find_scheduler_leases", "lease_options"]

F = TypeVar("F", bound=Callable[..., object])


def _checked(
    check: Callable[[str], bool], what: str
) -> Callable[[click.Context, click.Parameter, str | None], str | None]:
    def callback(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
        if value is not None and not check(value):
            raise click.BadParameter(f"{value!r} is not a valid {what}")
        return value

    return callback


def lease_options(command: F) -> F:
    """``--lease-namespace`` and ``--lease-name`` of the scheduler's Lease, each also from the environment."""
    command = click.option(
        "--lease-name",
        envvar="HAMI_LEASE_NAME",
        default=DEFAULT_LEASE_NAME,
        show_default=True,
        callback=_checked(is_dns_subdomain, "Lease name (a lower-case DNS subdomain)"),
        help="Name of the scheduler's leader Lease. Env: HAMI_LEASE_NAME.",
    )(command)
    return click.option(
        "--lease-namespace",
        envvar="HAMI_LEASE_NAMESPACE",
        default=None,
        callback=_checked(is_dns_label, "namespace name (a lower-case DNS label)"),
        help="Namespace of the scheduler's leader Lease. Default: found by name in any namespace (the "
        "chart puts it in the release namespace). Env: HAMI_LEASE_NAMESPACE.",
    )(command)


@attrs.frozen(kw_only=True)
class LeaseSearch:
    """What a search for the scheduler's Lease found."""

    name: str
    #: The namespace searched (``None``: every namespace).
    namespace: str | None
    leases: tuple[Lease, ...] = ()
    #: Why the search could not be made (a refusal, the API server unreachable); ``None`` when it was.
    error: str | None = None

    @property
    def where(self) -> str:
        return f"in namespace {self.namespace}" if self.namespace else "in any namespace"

    @property
    def latest(self) -> Lease | None:
        """The Lease found last renewed (else acquired); ``None`` when none was found."""
        epoch = datetime.min.replace(tzinfo=UTC)
        return max(
            self.leases, key=lambda lease: lease.renew_time or lease.acquire_time or epoch, default=None
        )

    def none_found(self) -> str:
        """The sentence for a search that found nothing."""
        return (
            f"no Lease {self.name} {self.where}: no hami-core scheduler with leader election runs here "
            "(or it uses another --lease-name)"
        )


def find_scheduler_leases(cluster: AdminCluster, name: str, namespace: str | None) -> LeaseSearch:
    """The Leases called ``name`` in ``namespace`` (``None``: any); a failure is ``error``, not raised."""
    try:
        if namespace is not None:
            try:
                leases: tuple[Lease, ...] = (cluster.get_lease(namespace, name),)
            except NotFound:
                leases = ()
        else:
            leases = cluster.find_leases(name)
    except ClusterError as exc:
        hint = "" if namespace is not None else "; or give --lease-namespace"
        return LeaseSearch(name=name, namespace=namespace, error=f"{describe_error(exc)}{hint}")
    return LeaseSearch(name=name, namespace=namespace, leases=leases)
