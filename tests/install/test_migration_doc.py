"""docs/operations.md's migration tables, held to HAMi v2.10.0's chart and scheduler command (read from
its source) and to ours: every value named exists on its side, every flag of HAMi's command is listed,
and every alias listed parses as the option it names."""

from __future__ import annotations

import re
from typing import Any

import click
import pytest
import yaml
from harness.apiserver import REPO_ROOT

from hami_core.cli.scheduler import scheduler

HAMI = REPO_ROOT / ".." / "shared" / "hami" / "v2.10.0"
HAMI_VALUES = yaml.safe_load((HAMI / "charts" / "hami" / "values.yaml").read_text())
OUR_VALUES = yaml.safe_load((REPO_ROOT / "charts" / "hami-core" / "values.yaml").read_text())
RUN = scheduler.commands["run"]
#: Flags HAMi's command takes besides its own (config.GlobalFlagSet: --debug, --device-config-file;
#: klog's -v), listed in the table as well.
HAMI_GLOBAL_FLAGS = {"--debug", "--device-config-file", "-v"}


def table(heading: str) -> list[tuple[str, str, str]]:
    """The rows (3 cells) of the first table after the line ``heading``."""
    text = (REPO_ROOT / "docs" / "operations.md").read_text()
    lines = text[text.index(heading) :].splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("|"))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        assert len(cells) == 3, line
        rows.append((cells[0], cells[1], cells[2]))
    assert rows, heading
    return rows


def ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def has_path(values: dict[str, Any], path: str) -> bool:
    node: Any = values
    for key in path.split("."):
        if not isinstance(node, dict) or key not in node:
            return False
        node = node[key]
    return True


def parsed(*args: str) -> dict[str, Any]:
    with RUN.make_context("run", list(args)) as ctx:
        return ctx.params


VALUES_TABLE = table("HAMi's chart values:")
FLAGS_TABLE = table("HAMi's scheduler flags (`cmd/scheduler`)")


def test_every_hami_value_named_is_in_hamis_chart() -> None:
    """In its values.yaml, or read by its templates (``scheduler.nodeLabelSelector`` is commented out)."""
    templates = "".join(
        p.read_text() for p in (HAMI / "charts" / "hami" / "templates").rglob("*") if p.is_file()
    )
    named = [path for hami, _, _ in VALUES_TABLE for path in ticked(hami)]
    assert len(named) >= 30, named
    missing = [p for p in named if not has_path(HAMI_VALUES, p) and f".Values.{p}" not in templates]
    assert not missing, f"not in HAMi v2.10.0's chart: {missing}"


def test_every_hami_core_value_named_is_in_ours() -> None:
    missing = [
        path
        for _, ours, _ in VALUES_TABLE
        if ours != "none"
        for path in ticked(ours)
        if not has_path(OUR_VALUES, path)
    ]
    assert not missing, f"not in charts/hami-core/values.yaml: {missing}"


def hami_scheduler_flags() -> set[str]:
    source = (HAMI / "cmd" / "scheduler" / "main.go").read_text()
    names = re.findall(r'rootCmd\.Flags\(\)\.\w+\(&[\w.]+, "([\w-]+)"', source)
    assert len(names) >= 15, names
    return {f"--{name}" for name in names}


def test_every_flag_of_hamis_scheduler_is_listed() -> None:
    listed = {flag for hami, _, _ in FLAGS_TABLE for flag in ticked(hami)}
    assert hami_scheduler_flags() | HAMI_GLOBAL_FLAGS <= listed, (
        hami_scheduler_flags() | HAMI_GLOBAL_FLAGS
    ) - listed


#: A value for each aliased option, and what our own flag makes of it.
SAMPLES = {
    "--qps": "50",
    "--burst": "80",
    "--node-selector": "gpu=on",
    "--lease-name": "registrar",
    "--lease-namespace": "gpu-system",
}


@pytest.mark.parametrize(
    ("hami", "ours"),
    [(ticked(h)[0], ticked(o)[0]) for h, o, _ in FLAGS_TABLE if o.endswith("(alias)")],
)
def test_every_alias_listed_parses_as_the_option_it_names(hami: str, ours: str) -> None:
    param = next(p for p in RUN.params if isinstance(p, click.Option) and ours in p.opts)
    assert hami in param.opts, f"{hami} is not an alias of {ours}"
    assert parsed(hami, SAMPLES[ours])[str(param.name)] == parsed(ours, SAMPLES[ours])[str(param.name)]


def test_every_hami_core_flag_named_exists() -> None:
    ours = {opt for p in RUN.params for opt in p.opts}
    named = [ticked(o)[0] for _, o, _ in FLAGS_TABLE if o != "none"]
    assert named and not [flag for flag in named if flag not in ours]
    assert parsed("-v=4")["verbosity"] == "debug"  # HAMi's chart's extraArgs, as the table says
