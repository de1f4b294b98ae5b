"""Is HAMi's own scheduler running in this cluster (its Lease held and fresh)? Checked at start and on
every resync; what follows from it: docs/architecture.md, "Leadership" (Beside HAMi).
"""

from __future__ import annotations

import logging
from datetime import datetime

import attrs

from hami_core.k8snames import is_dns_label, is_dns_subdomain
from hami_core.kube.port import Cluster, ClusterError, Lease, NotFound

__all__ = [
    "HAMI_LEASE",
    "PEER_ACTIVE_REASON",
    "PeerCheck",
    "lease_in_use",
    "parse_lease_ref",
    "peer_event_message",
]

log = logging.getLogger(__name__)

#: Where HAMi's chart puts its scheduler's Lease (namespace, name) when installed into kube-system.
HAMI_LEASE = ("kube-system", "hami-scheduler")
#: The Warning Event's reason (and the log record's) when HAMi's registrar is seen to start.
PEER_ACTIVE_REASON = "HamiPeerRegistrarActive"


def parse_lease_ref(text: str) -> tuple[str, str] | None:
    """``NAMESPACE/NAME`` -> (namespace, name); ``off`` (or empty) -> ``None``.

    Raises ``ValueError`` with a one-line message naming what is wrong.
    """
    if text.strip() in ("", "off", "none"):
        return None
    namespace, sep, name = text.partition("/")
    if not sep:
        raise ValueError(f"{text!r} is not NAMESPACE/NAME or 'off'")
    if not is_dns_label(namespace):
        raise ValueError(f"{text!r}: {namespace!r} is not a valid namespace name (a lower-case DNS label)")
    if not is_dns_subdomain(name):
        raise ValueError(f"{text!r}: {name!r} is not a valid Lease name (a lower-case DNS subdomain)")
    return namespace, name


def lease_in_use(lease: Lease | None, now: datetime) -> str | None:
    """Why a leader Lease read at ``now`` looks held by a live process (a description); ``None`` when not.

    In use: the Lease exists, has a holder, and its renew time (else its acquire time) is no older than
    its duration. A renewal "in the future" (clock skew between hosts) counts as in use. ``now`` must be
    aware.
    """
    if lease is None or not lease.holder_identity:
        return None
    duration, renewed = lease.lease_duration_seconds, lease.renew_time or lease.acquire_time
    if duration is None or duration <= 0 or renewed is None:
        return None
    age = (now - renewed).total_seconds()
    if age > duration:
        return None
    when = f"{age:.0f} s ago" if age >= 0 else f"{-age:.0f} s in the future by this host's clock"
    return (
        f"Lease {lease.namespace}/{lease.name} is held by {lease.holder_identity!r} and was renewed "
        f"{when} (duration {duration} s)"
    )


@attrs.frozen(kw_only=True)
class PeerState:
    """What one check found."""

    #: HAMi's registrar seems active (its Lease held and fresh).
    active: bool
    #: Why it seems active (``lease_in_use``'s words); ``None`` when not.
    reason: str | None = None
    #: It became active at this check (it was not at the one before, or this is the first).
    started: bool = False


class PeerCheck:
    """``where`` is HAMi's scheduler Lease (``None``: the check is off), ``own`` this scheduler's Lease:
    when they are the same, the check cannot tell the two apart and says so once instead. A start and an
    end are logged once each (a warning, then an info line), not at every check. A Lease that cannot be
    read (no access, unreachable) keeps the last answer and is logged at info level once until it can be
    read again; it is never fatal. Called from one thread (the daemon's worker).
    """

    def __init__(self, cluster: Cluster, where: tuple[str, str] | None, own: tuple[str, str]) -> None:
        self._cluster = cluster
        self.where = where
        self._own = own
        #: HAMi's registrar seemed active at the last check (the worker writes it, anyone reads it).
        self.active = False
        self._checked = False
        self._unreadable = False

    def check(self, now: datetime) -> PeerState:
        """Read HAMi's Lease once and say whether its registrar is active; ``now`` must be aware."""
        first, self._checked = not self._checked, True
        if self.where is None or self.where == self._own:
            if first and self.where is not None:
                log.warning(
                    "this scheduler's Lease %s/%s is the one HAMi's scheduler uses: cannot check whether "
                    "HAMi's scheduler is active; give hami-core its own Lease (--lease-name, "
                    "--lease-namespace)",
                    *self.where,
                )
            return PeerState(active=False)
        namespace, name = self.where
        try:
            lease: Lease | None = self._cluster.get_lease(namespace, name)
        except NotFound:
            lease = None
        except ClusterError as exc:
            if not self._unreadable:
                log.info(
                    "could not check whether HAMi's scheduler is active (Lease %s/%s): %s",
                    namespace,
                    name,
                    exc,
                )
            self._unreadable = True
            return PeerState(active=self.active)
        self._unreadable = False
        reason = lease_in_use(lease, now)
        was, self.active = self.active, reason is not None
        if reason is not None and not was:
            log.warning(
                "HAMi's scheduler seems active in this cluster: %s. It writes the same node annotations: "
                "never run two registrars at once; stop one of them (see docs/operations.md)",
                reason,
                extra={"reason": PEER_ACTIVE_REASON},
            )
        elif reason is None and was:
            log.info(
                "HAMi's scheduler no longer seems active: Lease %s/%s is %s",
                namespace,
                name,
                "gone" if lease is None else "released or expired",
            )
        return PeerState(active=reason is not None, reason=reason, started=reason is not None and not was)


def peer_event_message(state: PeerState, *, refusing: bool) -> str:
    """The Warning Event's message when HAMi's registrar starts (``PEER_ACTIVE_REASON``)."""
    then = (
        "this scheduler gives up leadership and writes nothing until it is gone (--refuse-beside-hami)"
        if refusing
        else "both write the same node annotations: stop one of them, or run hami-core with --read-only "
        "or --refuse-beside-hami"
    )
    return f"HAMi's scheduler seems active: {state.reason}; {then}"
