"""``hami cleanup``: after an uninstall, remove the annotations hami-core wrote on the Nodes (by their
``managedFields``; one merge patch per Node, conditional on the version judged), and its Lease."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime

import attrs
import click

from hami_core.cli.cluster import PAGE, all_nodes, cluster_options, connect
from hami_core.cli.leases import find_scheduler_leases, lease_options
from hami_core.cli.options import parsed
from hami_core.cli.vendors import drivers_from_options
from hami_core.clock import SYSTEM
from hami_core.k8snames import is_dns_subdomain
from hami_core.kube.access import describe_error
from hami_core.kube.port import AdminCluster, ClusterError, Conflict, Lease, NodeSnapshot, NotFound
from hami_core.plugins import VendorDriver
from hami_core.protocol.marker import marker_annotation
from hami_core.reporter.daemon import COMPONENT as REPORTER
from hami_core.scheduler.config import COMPONENT as SCHEDULER
from hami_core.scheduler.peer_check import HAMI_LEASE, lease_in_use, parse_lease_ref

__all__ = ["OUR_MANAGERS", "CleanupResult", "annotation_keys", "cleanup", "cleanup_command"]

#: The field managers hami-core writes node annotations as: what ``cleanup`` counts as its own.
OUR_MANAGERS = frozenset({SCHEDULER, REPORTER})
#: The field manager of the cleanup's own patches.
CLEANUP_MANAGER = "hami-core-cleanup"
#: Tries of one Node's conditional patch when it changed between the read and the write.
_TRIES = 3


@attrs.frozen(kw_only=True)
class CleanupResult:
    #: Nodes changed (or that would change, in a dry run), by name.
    changed: tuple[str, ...] = ()
    #: One line per failure ("node/NAME: ..."); the command exits 1 when there is any.
    errors: tuple[str, ...] = ()
    #: The Leases deleted (or that would be, in a dry run), as ``namespace/name``.
    leases_deleted: tuple[str, ...] = ()
    #: Annotations left because another field manager owns them, as ``node/NAME KEY``.
    kept: tuple[str, ...] = ()


def annotation_keys(drivers: Iterable[VendorDriver]) -> tuple[str, ...]:
    """The annotations the drivers own (register, then handshake), then the scheduler's "cleaned" marker
    of each driver's vendor (``cleaned.hami-core.io/<vendor key>``), each once, in driver order."""
    keys = [
        key for driver in drivers for key in (*driver.annotation_keys, marker_annotation(driver.vendor_key))
    ]
    return tuple(dict.fromkeys(keys))


def _owned_by(managers: Sequence[str]) -> str:
    return f"owned by {', '.join(managers)}" if managers else "no field manager recorded"


def _clean_node(
    cluster: AdminCluster, name: str, keys: Sequence[str], *, foreign: bool, dry_run: bool
) -> tuple[list[str], dict[str, tuple[str, ...]]]:
    """Delete the ``keys`` present that are ours (all, with ``foreign``), conditional on the version read
    (read and decide again on a conflict). Returns (removed, kept: each key with its field managers)."""
    for attempt in range(1, _TRIES + 1):
        owners = cluster.node_annotation_managers(name)
        present = {key: owners.managers.get(key, ()) for key in keys if key in owners.node.annotations}
        remove = [key for key, by in present.items() if foreign or (by and set(by) <= OUR_MANAGERS)]
        try:
            if remove and not dry_run:
                cluster.patch_node_annotations(
                    name,
                    dict.fromkeys(remove),
                    resource_version=owners.node.resource_version,
                    field_manager=CLEANUP_MANAGER,
                )
            return remove, {key: by for key, by in present.items() if key not in remove}
        except Conflict:
            if attempt == _TRIES:
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def cleanup(
    cluster: AdminCluster,
    keys: Sequence[str],
    *,
    nodes: Sequence[str] | None,
    leases: Sequence[tuple[str, str]] = (),
    dry_run: bool,
    echo: Callable[[str], None],
    include_foreign: bool = False,
) -> CleanupResult:
    """Delete ``keys`` hami-core wrote (all, with ``include_foreign``) from the named Nodes (``None``:
    every Node), then the ``leases``. Each change goes to ``echo``; errors are collected, so one bad Node
    does not stop the rest (only a failed list of every Node raises)."""
    verb = "would remove" if dry_run else "removed"
    changed: list[str] = []
    errors: list[str] = []
    kept_all: list[str] = []
    targets: Iterable[NodeSnapshot | str] = all_nodes(cluster, PAGE) if nodes is None else nodes
    for target in targets:
        if isinstance(target, NodeSnapshot) and not any(key in target.annotations for key in keys):
            continue  # nothing of ours to look at: no second read
        name = target if isinstance(target, str) else target.name
        try:
            removed, kept = _clean_node(cluster, name, keys, foreign=include_foreign, dry_run=dry_run)
        except ClusterError as exc:
            errors.append(f"node/{name}: {describe_error(exc)}")
            continue
        if removed:
            changed.append(name)
            echo(f"node/{name}: {verb} {', '.join(removed)}")
        if kept:
            kept_all += [f"node/{name} {key}" for key in kept]
            echo(f"node/{name}: kept {', '.join(f'{key} ({_owned_by(by)})' for key, by in kept.items())}")
    deleted: list[str] = []
    for namespace, lease_name in leases:
        where = f"lease/{namespace}/{lease_name}"
        try:
            (cluster.get_lease if dry_run else cluster.delete_lease)(namespace, lease_name)
            deleted.append(f"{namespace}/{lease_name}")
            echo(f"{where}: {'would delete' if dry_run else 'deleted'}")
        except NotFound:
            echo(f"{where}: not found, nothing to delete")
        except ClusterError as exc:
            errors.append(f"{where}: {describe_error(exc)}")
    return CleanupResult(
        changed=tuple(changed), errors=tuple(errors), leases_deleted=tuple(deleted), kept=tuple(kept_all)
    )


def running_registrars(
    cluster: AdminCluster, ours: Sequence[Lease], hami: tuple[str, str] | None, now: datetime
) -> list[str]:
    """Why a registrar that would write again seems to run, one sentence each; HAMi's Lease unreadable
    counts as in use."""
    running = [
        f"hami-core's scheduler is running ({why})" for lease in ours if (why := lease_in_use(lease, now))
    ]
    if hami is not None:
        try:
            why = lease_in_use(cluster.get_lease(*hami), now)
        except NotFound:
            why = None
        except ClusterError as exc:
            why = f"its Lease {hami[0]}/{hami[1]} cannot be read: {exc}"
        if why is not None:
            running.append(f"HAMi's scheduler is running ({why})")
    return running


def _node_names(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
    for name in value:
        if not is_dns_subdomain(name):
            raise click.BadParameter(f"{name!r} is not a valid Node name (a lower-case DNS subdomain)")
    return tuple(dict.fromkeys(value))


@click.command("cleanup")
@cluster_options
@click.option(
    "--node",
    "nodes",
    multiple=True,
    metavar="NAME",
    callback=_node_names,
    help="A Node to clean up; repeat for more.",
)
@click.option("--all", "all_nodes", is_flag=True, help="Clean up every Node.")
@click.option(
    "--vendors",
    envvar="HAMI_VENDORS",
    metavar="NAMES",
    help="Comma-separated drivers whose annotations to remove (a driver name, or a plugin name "
    "for all its drivers); default every installed one. Env: HAMI_VENDORS.",
)
@lease_options
@click.option(
    "--hami-lease",
    envvar="HAMI_CHECK_HAMI_LEASE",
    default="/".join(HAMI_LEASE),
    show_default=True,
    callback=parsed(parse_lease_ref),
    metavar="NAMESPACE/NAME",
    help="HAMi's own scheduler Lease: while it is held and fresh the command refuses; 'off' skips "
    "the check. Env: HAMI_CHECK_HAMI_LEASE.",
)
@click.option("--keep-lease", is_flag=True, help="Leave the scheduler's Lease alone.")
@click.option("--dry-run", is_flag=True, help="Print what would change; change nothing.")
@click.option(
    "--include-foreign",
    is_flag=True,
    help="Also remove the selected annotations another field manager owns (HAMi's device plugins, "
    "HAMi's scheduler, a hand edit); by default they stay and are listed.",
)
@click.option(
    "--force",
    is_flag=True,
    help="Go on even while hami-core's or HAMi's scheduler still holds its Lease (it would stamp "
    "the nodes again).",
)
def cleanup_command(
    kubeconfig: str | None,
    context: str | None,
    nodes: tuple[str, ...],
    all_nodes: bool,
    vendors: str | None,
    lease_namespace: str | None,
    lease_name: str,
    hami_lease: tuple[str, str] | None,
    keep_lease: bool,
    dry_run: bool,
    include_foreign: bool,
    force: bool,
) -> None:
    """Remove this project's node annotations (register and handshake) of the selected drivers, and the
    scheduler's leader Lease: what `helm uninstall` leaves behind. Only what hami-core wrote goes (the
    Node's managedFields say who owns each annotation); values another field manager owns are listed and
    kept unless --include-foreign. Run it after the scheduler and the reporters are gone: it refuses
    while hami-core's or HAMi's scheduler Lease is held and fresh, unless --force.

    Exit status: 0 when everything worked, 1 when anything failed (each failure is one "error:" line on
    stderr; the other Nodes are still cleaned up), 2 for bad usage.
    """
    if all_nodes == bool(nodes):
        raise click.UsageError(
            "give --node NAME (repeatable) or --all" if not nodes else "--node and --all exclude each other"
        )
    _, drivers = drivers_from_options(vendors, ())
    keys = annotation_keys(drivers)
    cluster = connect(kubeconfig, context, request_timeout=30.0)
    try:
        search = find_scheduler_leases(cluster, lease_name, lease_namespace)
        if search.error is not None:
            raise click.ClickException(
                f"cannot look for the scheduler's Lease {search.where}: {search.error}"
            )
        if not search.leases:
            click.echo(search.none_found())
        running = running_registrars(cluster, search.leases, hami_lease, SYSTEM.now())
        if running and not force:
            raise click.ClickException(
                f"{'; '.join(running)}; it would stamp the nodes again: uninstall it first, or pass --force"
            )
        result = cleanup(
            cluster,
            keys,
            nodes=None if all_nodes else nodes,
            leases=() if keep_lease else [(lease.namespace, lease.name) for lease in search.leases],
            dry_run=dry_run,
            echo=click.echo,
            include_foreign=include_foreign,
        )
    except ClusterError as exc:
        raise click.ClickException(describe_error(exc)) from None
    finally:
        cluster.close()
    for error in result.errors:
        click.echo(f"error: {error}", err=True)
    count, kept = len(result.changed), len(result.kept)
    changed = f"{count} node{'' if count == 1 else 's'}"
    summary = f"dry run: {changed} would change; nothing was changed" if dry_run else f"{changed} changed"
    if kept:
        owned = f"{kept} annotation{'' if kept == 1 else 's'} another field manager owns"
        summary += f"; {owned} {'was' if kept == 1 else 'were'} kept (--include-foreign removes them)"
    click.echo(summary)
    if result.errors:
        raise click.exceptions.Exit(1)
