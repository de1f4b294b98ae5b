"""Is HAMi's own scheduler running in this cluster? Checked once when ``hami scheduler run`` starts.

HAMi's scheduler and hami-core write the same node annotations; two registrars at once stamp each
other's handshakes and flap the device cache. hami-core's defaults (Lease name, metrics port) do not
collide with HAMi's, so nothing stops both from running: this check makes it visible in the log.

HAMi's scheduler registers only while the kube-scheduler beside it holds the Lease
``kube-system/hami-scheduler`` (its chart's leader election); it "seems active" when that Lease has a
holder and was renewed within its own duration.
"""

from __future__ import annotations

import logging
from datetime import datetime

from hami_core.k8snames import is_dns_label, is_dns_subdomain
from hami_core.kube.port import Cluster, ClusterError, Lease, NotFound

__all__ = [
    "HAMI_LEASE",
    "lease_in_use",
    "parse_lease_ref",
    "warn_if_hami_scheduler_active",
]

log = logging.getLogger(__name__)

#: Where HAMi's chart puts its scheduler's Lease (namespace, name) when installed into kube-system.
HAMI_LEASE = ("kube-system", "hami-scheduler")


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


def warn_if_hami_scheduler_active(
    cluster: Cluster, where: tuple[str, str] | None, own: tuple[str, str], now: datetime
) -> str | None:
    """Read HAMi's scheduler Lease at ``where`` and log a warning when HAMi's scheduler seems active.

    Returns the warning's reason (``None`` when nothing was logged at warning level). ``own`` is this
    scheduler's own Lease: when it is the same, the check cannot tell the two apart and says so instead.
    Any failure to read (no access, unreachable) is logged at info level and is never fatal.
    """
    if where is None:
        return None
    namespace, name = where
    if where == own:
        log.warning(
            "this scheduler's Lease %s/%s is the one HAMi's scheduler uses: cannot check whether HAMi's "
            "scheduler is active; give hami-core its own Lease (--lease-name, --lease-namespace)",
            namespace,
            name,
        )
        return None
    try:
        lease: Lease | None = cluster.get_lease(namespace, name)
    except NotFound:
        lease = None
    except ClusterError as exc:
        log.info("could not check whether HAMi's scheduler is active (Lease %s/%s): %s", namespace, name, exc)
        return None
    reason = lease_in_use(lease, now)
    if reason is not None:
        log.warning(
            "HAMi's scheduler seems active in this cluster: %s. It writes the same node annotations: "
            "never run two registrars at once; stop one of them (see docs/operations.md)",
            reason,
        )
    return reason
