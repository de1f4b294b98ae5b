"""Where the scheduler's leader Lease is: found by name in any namespace, or in the one given.

The chart puts the Lease in the release namespace (``hami-system``, say), a plain ``hami scheduler run``
in ``kube-system``: ``hami cleanup`` and ``hami doctor`` look for it by name everywhere unless told the
namespace, and say plainly when there is none, so a guard against a running scheduler is never skipped
without a word.
"""

from __future__ import annotations

import attrs

from hami_core.kube.access import describe_error
from hami_core.kube.port import AdminCluster, ClusterError, Lease, NotFound

__all__ = ["LeaseSearch", "find_scheduler_leases"]


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

    def none_found(self) -> str:
        """The sentence for a search that found nothing."""
        return (
            f"no Lease {self.name} {self.where}: no hami-core scheduler with leader election runs here "
            "(or it uses another --lease-name)"
        )


def find_scheduler_leases(cluster: AdminCluster, name: str, namespace: str | None) -> LeaseSearch:
    """The Leases called ``name`` in ``namespace`` (``None``: in every namespace). A failure is a fact
    to report (``error``), never raised: the caller decides whether it may go on without knowing."""
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
