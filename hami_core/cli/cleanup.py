"""``hami cleanup``: after an uninstall, remove this protocol's node annotations and the scheduler's Lease.

For the selected drivers (``--vendors``, default every installed one), each Node's register and
handshake annotations are deleted with one JSON merge patch (``null`` deletes a key, nothing else is
touched), then the scheduler's leader Lease is deleted. Every change is printed; ``--dry-run`` prints
what would change and changes nothing. While the scheduler still holds its Lease the command refuses
(the scheduler would stamp the nodes again at once) unless ``--force``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime

import attrs
import click

from hami_core.cli.cluster import cluster_options, connect
from hami_core.cli.vendors import drivers_from_options
from hami_core.k8snames import is_dns_label, is_dns_subdomain
from hami_core.kube.port import AdminCluster, ClusterError, Lease, NodeSnapshot, NotFound
from hami_core.plugins import VendorDriver
from hami_core.scheduler.config import DEFAULT_LEASE_NAME, DEFAULT_LEASE_NAMESPACE
from hami_core.scheduler.peer_check import lease_in_use

__all__ = ["CleanupResult", "annotation_keys", "cleanup", "cleanup_command"]

#: Nodes per list page with ``--all``.
PAGE = 500


@attrs.frozen(kw_only=True)
class CleanupResult:
    #: Nodes changed (or that would change, in a dry run), by name.
    changed: tuple[str, ...] = ()
    #: One line per failure ("node/NAME: ..."); the command exits 1 when there is any.
    errors: tuple[str, ...] = ()
    #: Whether the Lease was deleted (or would be, in a dry run).
    lease_deleted: bool = False


def annotation_keys(drivers: Iterable[VendorDriver]) -> tuple[str, ...]:
    """The annotations the drivers own (register, then handshake), each once, in driver order."""
    return tuple(dict.fromkeys(key for driver in drivers for key in driver.annotation_keys))


def _all_nodes(cluster: AdminCluster) -> Iterator[NodeSnapshot]:
    token: str | None = None
    while True:
        page = cluster.list_nodes(limit=PAGE, continue_token=token)
        yield from page.items
        token = page.continue_token
        if not token:
            return


def cleanup(
    cluster: AdminCluster,
    keys: Sequence[str],
    *,
    nodes: Sequence[str] | None,
    lease: tuple[str, str] | None,
    dry_run: bool,
    echo: Callable[[str], None],
) -> CleanupResult:
    """Delete ``keys`` from the named Nodes (``nodes=None``: every Node), then delete the Lease
    ``(namespace, name)`` unless it is ``None``. Prints each change through ``echo``; errors are
    collected, never raised, so one bad Node does not stop the rest (a failed list of every Node is the
    exception: it is raised as the ``ClusterError`` it is)."""
    verb = "would remove" if dry_run else "removed"
    changed: list[str] = []
    errors: list[str] = []
    targets: Iterable[NodeSnapshot | str] = _all_nodes(cluster) if nodes is None else nodes
    for target in targets:
        if isinstance(target, str):
            try:
                node = cluster.get_node(target)
            except ClusterError as exc:
                errors.append(f"node/{target}: {exc}")
                continue
        else:
            node = target
        present = [key for key in keys if key in node.annotations]
        if not present:
            continue
        if not dry_run:
            try:
                cluster.patch_node_annotations(node.name, dict.fromkeys(present))
            except ClusterError as exc:
                errors.append(f"node/{node.name}: {exc}")
                continue
        changed.append(node.name)
        echo(f"node/{node.name}: {verb} {', '.join(present)}")
    lease_deleted = False
    if lease is not None:
        namespace, name = lease
        where = f"lease/{namespace}/{name}"
        try:
            if dry_run:
                cluster.get_lease(namespace, name)
            else:
                cluster.delete_lease(namespace, name)
            lease_deleted = True
            echo(f"{where}: {'would delete' if dry_run else 'deleted'}")
        except NotFound:
            echo(f"{where}: not found, nothing to delete")
        except ClusterError as exc:
            errors.append(f"{where}: {exc}")
    return CleanupResult(changed=tuple(changed), errors=tuple(errors), lease_deleted=lease_deleted)


def _node_names(ctx: click.Context, param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
    for name in value:
        if not is_dns_subdomain(name):
            raise click.BadParameter(f"{name!r} is not a valid Node name (a lower-case DNS subdomain)")
    return tuple(dict.fromkeys(value))


def _checked(check: Callable[[str], bool], what: str) -> Callable[[click.Context, click.Parameter, str], str]:
    def callback(ctx: click.Context, param: click.Parameter, value: str) -> str:
        if not check(value):
            raise click.BadParameter(f"{value!r} is not a valid {what}")
        return value

    return callback


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
@click.option(
    "--lease-namespace",
    envvar="HAMI_LEASE_NAMESPACE",
    default=DEFAULT_LEASE_NAMESPACE,
    show_default=True,
    callback=_checked(is_dns_label, "namespace name (a lower-case DNS label)"),
    help="Namespace of the scheduler's leader Lease: the chart's is its release namespace; the default "
    "is where `hami scheduler run` puts it outside a pod. Env: HAMI_LEASE_NAMESPACE.",
)
@click.option(
    "--lease-name",
    envvar="HAMI_LEASE_NAME",
    default=DEFAULT_LEASE_NAME,
    show_default=True,
    callback=_checked(is_dns_subdomain, "Lease name (a lower-case DNS subdomain)"),
    help="Name of the scheduler's leader Lease. Env: HAMI_LEASE_NAME.",
)
@click.option("--keep-lease", is_flag=True, help="Leave the scheduler's Lease alone.")
@click.option("--dry-run", is_flag=True, help="Print what would change; change nothing.")
@click.option(
    "--force",
    is_flag=True,
    help="Go on even while the scheduler still holds its Lease (it would stamp the nodes again).",
)
def cleanup_command(
    kubeconfig: str | None,
    context: str | None,
    nodes: tuple[str, ...],
    all_nodes: bool,
    vendors: str | None,
    lease_namespace: str,
    lease_name: str,
    keep_lease: bool,
    dry_run: bool,
    force: bool,
) -> None:
    """Remove this protocol's node annotations (register and handshake) of the selected drivers, and the
    scheduler's leader Lease: what `helm uninstall` leaves behind. Run it after the scheduler and the
    reporters are gone.

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
        current: Lease | None = cluster.get_lease(lease_namespace, lease_name)
    except NotFound:
        current = None
    except ClusterError as exc:
        raise click.ClickException(f"cannot read the scheduler's Lease: {exc}") from None
    in_use = lease_in_use(current, datetime.now(UTC))
    if in_use is not None and not force:
        raise click.ClickException(
            f"the scheduler is still running ({in_use}); it would stamp the nodes again: uninstall it "
            "first, or pass --force"
        )
    try:
        result = cleanup(
            cluster,
            keys,
            nodes=None if all_nodes else nodes,
            lease=None if keep_lease else (lease_namespace, lease_name),
            dry_run=dry_run,
            echo=click.echo,
        )
    except ClusterError as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        cluster.close()
    for error in result.errors:
        click.echo(f"error: {error}", err=True)
    count = len(result.changed)
    nodes_text = f"{count} node{'' if count == 1 else 's'}"
    if dry_run:
        click.echo(f"dry run: {nodes_text} would change; nothing was changed")
    else:
        click.echo(f"{nodes_text} changed")
    if result.errors:
        raise click.exceptions.Exit(1)
