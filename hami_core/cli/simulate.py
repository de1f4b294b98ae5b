"""``hami simulate``: the scheduler against an embedded default cluster, in compressed time."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from hami_core.cli.logs import configure_logging
from hami_core.cli.options import LOG_LEVEL
from hami_core.cli.vendors import driver_options, drivers_from_options
from hami_core.kube.port import ClusterError
from hami_core.simulate.run import run_scenario
from hami_core.simulate.scenario import DEFAULT_SCENARIO, load_scenario, scenario_as_json

__all__ = ["simulate"]


@click.command("simulate")
@click.option(
    "--scenario",
    "scenario_path",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A scenario JSON file (see --print-default), every value checked before the run. "
    "Default: the embedded scenario.",
)
@click.option("--print-default", is_flag=True, help="Print the embedded scenario as JSON and exit.")
@driver_options
@click.option(
    "--log-level",
    type=LOG_LEVEL,
    default="warning",
    show_default=True,
    help="Level of the scheduler's own log lines (on stderr).",
)
def simulate(
    scenario_path: Path | None,
    print_default: bool,
    vendors: str | None,
    count_resources: tuple[str, ...],
    device_config: str | None,
    log_level: str,
) -> None:
    """Run a real scheduler replica against simulated nodes and device plugins, print every registration
    change as it happens, and check the protocol's promises (exit 1 if one is broken).

    The embedded scenario is the seed note's example node (two V100s in the legacy encoding, two MLUs
    whose second record is truncated), DCU and Kunlun nodes, a CPU-only node, a plugin that dies, a
    value that gets fixed, an NVIDIA plugin whose allocatable count drops, and a node deletion.
    """
    if print_default:
        click.echo(scenario_as_json(DEFAULT_SCENARIO))
        return
    configure_logging("text", log_level)
    try:
        scenario = load_scenario(scenario_path) if scenario_path else DEFAULT_SCENARIO
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--scenario") from None
    _, drivers = drivers_from_options(vendors, count_resources, device_config)
    try:
        result = run_scenario(scenario, {d.name: d for d in drivers}, say=click.echo)
    except (ValueError, ClusterError) as exc:
        # A driver the scenario needs but the flags leave out, or a write the in-memory cluster refuses.
        raise click.ClickException(" ".join(str(exc).split())) from None
    click.echo("")
    click.echo(f"{'node':<10} {'vendor':<7} {'state':<11} {'devices':>7}  reason / error")
    for node, vendors_ in result.final.items():
        for vendor, (state, reason, count, error) in vendors_.items():
            click.echo(f"{node:<10} {vendor:<7} {state:<11} {count:>7}  {error or reason}")
    click.echo("")
    click.echo(
        "node API requests, scheduler and simulated plugins together: "
        + ", ".join(f"{k} {v}" for k, v in result.requests.items())
    )
    if result.violations:
        for problem in result.violations:
            click.echo(f"VIOLATED: {problem}", err=True)
        sys.exit(1)
    click.echo(
        "all protocol promises held: no live vendor dropped, every dead one cleaned up once and "
        "kept out, no stamp on nodes without accelerators"
    )
