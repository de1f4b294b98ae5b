"""``hami scheduler run``: the cluster-wide registration daemon."""

from __future__ import annotations

import logging
from typing import Any

import click

from hami_core.cli.cluster import check_access, cluster_options, connect
from hami_core.cli.logs import configure_logging
from hami_core.cli.options import (
    aliases,
    cannot_listen,
    config_option,
    default_of,
    go_bool_flag,
    klog_verbosity,
    listen_address,
    log_options,
    parsed,
    stop_on_signals,
)
from hami_core.cli.vendors import driver_options, drivers_from_options
from hami_core.scheduler.allocator import limit_malloc_arenas, pin_mmap_threshold
from hami_core.scheduler.config import DEFAULT_HTTP_PORT, DEFAULT_LEASE_NAMESPACE, SchedulerConfig
from hami_core.scheduler.peer_check import HAMI_LEASE, parse_lease_ref
from hami_core.scheduler.selector import parse_node_selector

__all__ = ["scheduler"]

log = logging.getLogger(__name__)


@click.group("scheduler")
def scheduler() -> None:
    """The cluster-wide daemon that registers devices from node annotations."""


#: kube-scheduler's names of the same settings, accepted as well.
KUBE_SCHEDULER_ALIASES = {
    "lease_duration": "--leader-elect-lease-duration",
    "renew_deadline": "--leader-elect-renew-deadline",
    "retry_period": "--leader-elect-retry-period",
    "lease_name": "--leader-elect-resource-name",
    "lease_namespace": "--leader-elect-resource-namespace",
    "qps": "--kube-api-qps",
    "burst": "--kube-api-burst",
    "log_format": "--logging-format",
}

#: HAMi's scheduler's names of the same settings (docs/operations.md, "Migrating from HAMi's chart").
HAMI_SCHEDULER_ALIASES = {
    "qps": "--kube-qps",
    "burst": "--kube-burst",
    "node_selector": "--node-label-selector",
}


@aliases(HAMI_SCHEDULER_ALIASES, origin="HAMi's scheduler's flag name")
@aliases(KUBE_SCHEDULER_ALIASES, origin="kube-scheduler's flag name")
@scheduler.command("run")
@cluster_options
@driver_options
@click.option(
    "--node-selector",
    envvar="HAMI_NODE_SELECTOR",
    callback=parsed(parse_node_selector),
    metavar="K=V,...",
    help="Only nodes with all these labels register. Env: HAMI_NODE_SELECTOR.",
)
@click.option(
    "--lease-namespace",
    envvar="HAMI_LEASE_NAMESPACE",
    default=None,
    help="Namespace of the leader Lease. Default: the namespace the scheduler's pod runs in "
    "(POD_NAMESPACE, or its ServiceAccount's; the chart's release namespace); outside a pod "
    f"{DEFAULT_LEASE_NAMESPACE}. Env: HAMI_LEASE_NAMESPACE.",
)
@config_option(SchedulerConfig, "lease_name", "Name of the leader Lease.", type=click.STRING)
@click.option(
    "--identity",
    envvar="HAMI_IDENTITY",
    default=None,
    help="Holder identity, unique per replica. Default: <pod or host name>_<uuid>. Env: HAMI_IDENTITY.",
)
@go_bool_flag(
    "--leader-elect",
    envvar="HAMI_LEADER_ELECT",
    default=True,
    help="Elect a leader over the Lease before writing; false runs one replica that always "
    "leads, without a Lease (a one-node cluster, a test).",
)
@go_bool_flag(
    "--read-only",
    envvar="HAMI_READ_ONLY",
    default=False,
    help="Watch, decode and decide as a leader would, and write nothing: no Lease, no patch, no "
    "Event. /cache/<node> shows the write a leader would send. For running beside another "
    "registrar (HAMi's scheduler); needs only get, list and watch on Nodes.",
)
@config_option(SchedulerConfig, "lease_duration", "How long a Lease holds without renewal.")
@config_option(
    SchedulerConfig, "renew_deadline", "A leader that has not renewed for this long stops writing."
)
@config_option(SchedulerConfig, "retry_period", "Between two tries to take or renew the Lease.")
@config_option(SchedulerConfig, "resync", "Between re-evaluations of every node.")
@config_option(SchedulerConfig, "handshake_window", "After this a scheduler stamp is expired.")
@config_option(
    SchedulerConfig,
    "qps",
    "Write rate limit (requests per second).",
    type=click.FloatRange(min=0, min_open=True, max=100_000),
)
@config_option(SchedulerConfig, "burst", "Write burst.", type=click.IntRange(min=1, max=100_000))
@config_option(SchedulerConfig, "max_in_flight", "Concurrent patches.", type=click.IntRange(min=1, max=1024))
@click.option(
    "--http-listen",
    envvar="HAMI_HTTP_LISTEN",
    default=f"{default_of(SchedulerConfig, 'http_host')}:{DEFAULT_HTTP_PORT}",
    show_default=True,
    callback=listen_address,
    help="HOST:PORT or [IPV6]:PORT of the status endpoint, or 'off'. Env: HAMI_HTTP_LISTEN.",
)
@click.option(
    "--check-hami-lease",
    envvar="HAMI_CHECK_HAMI_LEASE",
    default="/".join(HAMI_LEASE),
    show_default=True,
    callback=parsed(parse_lease_ref),
    metavar="NAMESPACE/NAME",
    help="HAMi's own scheduler Lease, checked at start and every --resync: while it is held and "
    "fresh, HAMi's registrar is active (never run two registrars at once): a warning and a Warning "
    "Event when it starts, and the hami_scheduler_peer_registrar_active gauge; 'off' skips the "
    "check. Env: HAMI_CHECK_HAMI_LEASE.",
)
@go_bool_flag(
    "--refuse-beside-hami",
    envvar="HAMI_REFUSE_BESIDE_HAMI",
    default=False,
    help="While HAMi's registrar is active (see --check-hami-lease), give up leadership and write "
    "nothing; take part again once it is gone.",
)
@log_options
@klog_verbosity
def run(
    kubeconfig: str | None,
    context: str | None,
    vendors: str | None,
    count_resources: tuple[str, ...],
    device_config: str | None,
    http_listen: tuple[str, int] | None,
    check_hami_lease: tuple[str, str] | None,
    log_format: str,
    log_level: str,
    verbosity: str | None,
    **settings: Any,
) -> None:
    """Run the scheduler: watch nodes, stamp handshakes, keep the device cache, clean up dead nodes."""
    # The other options are SchedulerConfig's fields by name; unset (or empty), its own default.
    settings = {name: value for name, value in settings.items() if value not in (None, "")}
    lease_duration, renew_deadline = settings["lease_duration"], settings["renew_deadline"]
    elects = settings["leader_elect"] and not settings["read_only"]
    if elects and not settings["retry_period"] < renew_deadline < lease_duration:
        raise click.UsageError("need --retry-period < --renew-deadline < --lease-duration")
    configure_logging(log_format, verbosity or log_level)
    limit_malloc_arenas()  # before any thread starts (scheduler/allocator.py says why)
    pin_mmap_threshold()
    manager, drivers = drivers_from_options(vendors, count_resources, device_config)
    try:
        config = SchedulerConfig(
            **settings,
            http_host=http_listen[0] if http_listen else "",
            http_port=http_listen[1] if http_listen else None,
            freeze_gc_after_sync=True,
            hami_lease=check_hami_lease,
        )
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    # A write sent just before the lease is lost must land before another replica can take over, at
    # least lease duration - renew deadline later (without election there is none).
    timeout = min(30.0, max(1.0, lease_duration - renew_deadline)) if elects else 30.0
    from hami_core.scheduler.daemon import Scheduler  # here: a bad flag is reported before it loads

    cluster = connect(kubeconfig, context, request_timeout=timeout, pool_size=config.max_in_flight + 16)
    # The first reads the daemon makes, so that a missing permission is one line at start, not a retry loop.
    check_access(
        [lambda: cluster.list_nodes(limit=1)]
        + ([lambda: cluster.get_lease(config.lease_namespace, config.lease_name)] if elects else [])
    )
    try:
        daemon = Scheduler(
            cluster,
            [d.rules() for d in drivers],
            config,
            on_node_deleted=lambda node: manager.node_deleted(drivers, node),
        )
    except OSError as exc:  # the status endpoint's address: not local, in use, unknown host
        raise cannot_listen(config.http_host, config.http_port, exc) from None
    if config.read_only:  # beside HAMi is what read-only is for; and its RBAC reads Nodes only
        log.info("read-only: no Lease, no patch, no Event; /cache/<node> shows what a leader would write")

    stop_on_signals(daemon.request_stop)
    try:
        daemon.start()
    except OSError as exc:
        raise click.ClickException(f"cannot start: {exc}") from None
    daemon.wait()
    daemon.stop()
