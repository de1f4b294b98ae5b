"""``hami reporter run``: the per-node daemon that publishes the node's devices and heartbeats."""

from __future__ import annotations

import logging
import sys

import click

from hami_core.cli.cluster import check_access, cluster_options, connect
from hami_core.cli.logs import configure_logging, report_error
from hami_core.cli.options import (
    cannot_listen,
    config_option,
    klog_verbosity,
    listen_address,
    log_options,
    stop_on_signals,
)
from hami_core.cli.vendors import driver_options, drivers_from_options
from hami_core.kube.port import Untrusted
from hami_core.reporter.daemon import Reporter, ReporterConfig
from hami_core.reporter.http import reporter_server

__all__ = ["reporter"]

log = logging.getLogger(__name__)


@click.group("reporter")
def reporter() -> None:
    """The per-node daemon that publishes the node's devices (one per node, e.g. a DaemonSet)."""


@reporter.command("run")
@cluster_options
@driver_options
@click.option(
    "--node-name",
    envvar=["HAMI_NODE_NAME", "NODE_NAME"],
    required=True,
    help="The Node this reporter runs on. Env: HAMI_NODE_NAME, NODE_NAME (downward API).",
)
@config_option(ReporterConfig, "interval", "Between passes.", envvar="HAMI_REPORT_INTERVAL")
@config_option(
    ReporterConfig,
    "retry_interval",
    "To the next pass after a failed one.",
    envvar="HAMI_REPORT_RETRY_INTERVAL",
)
@click.option(
    "--once",
    is_flag=True,
    help="One pass, then exit: 0 when it published and nothing failed, 1 when anything failed or "
    "no selected driver had a device source.",
)
@click.option(
    "--http-listen",
    envvar="HAMI_HTTP_LISTEN",
    default="off",
    show_default=True,
    callback=listen_address,
    help="HOST:PORT or [IPV6]:PORT serving /livez, /readyz and /metrics, or 'off'. Env: HAMI_HTTP_LISTEN.",
)
@log_options
@klog_verbosity
def run(
    kubeconfig: str | None,
    context: str | None,
    vendors: str | None,
    count_resources: tuple[str, ...],
    device_config: str | None,
    node_name: str,
    interval: float,
    retry_interval: float,
    once: bool,
    http_listen: tuple[str, int] | None,
    log_format: str,
    log_level: str,
    verbosity: str | None,
) -> None:
    """Publish this node's devices: every pass, the register annotation of each selected driver when it
    differs from the Node's, and the Reported_ heartbeat of drivers whose plugin writes one."""
    if not node_name.strip():
        raise click.BadParameter("must not be empty", param_hint="'--node-name'")
    try:
        config = ReporterConfig(node_name=node_name, interval=interval, retry_interval=retry_interval)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    configure_logging(log_format, verbosity or log_level)
    manager, drivers = drivers_from_options(vendors, count_resources, device_config)
    cluster = connect(kubeconfig, context, request_timeout=min(30.0, max(1.0, interval)))
    # An untrusted certificate stays so: one line now. A refusal is the pass's to report (the Node may
    # not be the reporter's to read until its Pod is bound).
    check_access([lambda: cluster.get_node(node_name)], fatal=(Untrusted,))
    daemon = Reporter(cluster, drivers, manager.discover_devices, config)
    if once:
        result = daemon.run_once()
        for problem in result.problems:
            report_error(problem)
        if result.ok and not result.published:
            names = ", ".join(d.name for d in drivers)
            report_error(
                f"nothing published: no selected driver ({names}) has a device source on node {node_name}"
            )
        sys.exit(0 if result.ok and result.published else 1)
    server = None
    if http_listen is not None:
        try:
            server = reporter_server(daemon, *http_listen)
        except OSError as exc:
            raise cannot_listen(*http_listen, exc) from None
        server.start()
        log.info("serving /livez, /readyz, /metrics on http://%s:%d", *server.address)

    stop_on_signals(daemon.request_stop)
    try:
        daemon.run()
    finally:
        if server is not None:
            server.stop()
