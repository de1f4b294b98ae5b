"""``hami reporter run``: the per-node daemon that publishes the node's devices and heartbeats."""

from __future__ import annotations

import logging
import signal
import sys
import threading
from types import FrameType

import click

from hami_core.cli.cluster import cluster_options, connect
from hami_core.cli.logs import configure_logging
from hami_core.cli.options import DURATION, log_options
from hami_core.cli.vendors import driver_options, drivers_from_options
from hami_core.reporter.daemon import Reporter, ReporterConfig

__all__ = ["reporter"]

log = logging.getLogger(__name__)

@click.group("reporter")
def reporter() -> None:
    """The per-node daemon that publishes the node's devices (one per node, e.g. a DaemonSet)."""


@reporter.command("run")
@cluster_options
@driver_options
@click.option("--node-name", envvar=["HAMI_NODE_NAME", "NODE_NAME"], required=True,
              help="The Node this reporter runs on. Env: HAMI_NODE_NAME, NODE_NAME (downward API).")
@click.option("--interval", envvar="HAMI_REPORT_INTERVAL", type=DURATION, default="30s", show_default=True,
              help="Between passes. Env: HAMI_REPORT_INTERVAL.")
@click.option("--retry-interval", envvar="HAMI_REPORT_RETRY_INTERVAL", type=DURATION, default="5s",
              show_default=True,
              help="To the next pass after a failed one. Env: HAMI_REPORT_RETRY_INTERVAL.")
@click.option("--once", is_flag=True, help="One pass, then exit: 0 when it worked, 1 when anything failed.")
@log_options
def run(
    kubeconfig: str | None,
    context: str | None,
    vendors: str | None,
    count_resources: tuple[str, ...],
    node_name: str,
    interval: float,
    retry_interval: float,
    once: bool,
    log_format: str,
    log_level: str,
) -> None:
    """Publish this node's devices: every pass, the register annotation of each selected driver when it
    differs from the Node's, and the Reported_ heartbeat of drivers whose plugin writes one."""
    if not node_name.strip():
        raise click.BadParameter("must not be empty", param_hint="'--node-name'")
    try:
        config = ReporterConfig(node_name=node_name, interval=interval, retry_interval=retry_interval)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    configure_logging(log_format, log_level)
    manager, drivers = drivers_from_options(vendors, count_resources)
    cluster = connect(kubeconfig, context, request_timeout=min(30.0, max(1.0, interval)))
    daemon = Reporter(cluster, drivers, manager.discover_devices, config)
    if once:
        result = daemon.run_once()
        for problem in result.problems:
            click.echo(f"error: {problem}", err=True)
        sys.exit(0 if result.ok else 1)
    stop = threading.Event()

    def _terminate(signum: int, frame: FrameType | None) -> None:
        log.info("received %s: stopping", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGTERM, _terminate)
    signal.signal(signal.SIGINT, _terminate)
    daemon.run(stop)
    sys.exit(0)
