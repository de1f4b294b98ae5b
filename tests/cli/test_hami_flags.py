"""HAMi's scheduler's flag names (``--kube-qps``, ``--kube-burst``, ``--node-label-selector``), klog's
``-v`` and component-base's ``--logging-format``, accepted by ``hami scheduler run`` where they mean the
same; and the Lease's namespace taken from the pod, as the chart places it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from harness.apiserver import REPO_ROOT

from hami_core.cli.reporter import reporter
from hami_core.cli.scheduler import HAMI_SCHEDULER_ALIASES, KUBE_SCHEDULER_ALIASES, scheduler
from hami_core.scheduler.config import DEFAULT_LEASE_NAMESPACE, default_lease_namespace
from hami_core.scheduler.selector import parse_node_selector

HAMI = str(Path(sys.executable).with_name("hami"))
RUN = scheduler.commands["run"]
HAMI_SCHEDULER = REPO_ROOT / ".." / "shared" / "hami" / "v2.10.0" / "cmd" / "scheduler" / "main.go"


def parsed(*args: str) -> dict[str, Any]:
    with RUN.make_context("run", list(args)) as ctx:
        return ctx.params


def one_error_line(*args: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [HAMI, "scheduler", "run", *args], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


def test_hamis_flag_names_are_aliases_of_ours() -> None:
    params = parsed("--kube-qps", "50", "--kube-burst=100", "--node-label-selector", "gpu=on,zone=a")
    assert (params["qps"], params["burst"]) == (50.0, 100)
    assert params["node_selector"] == parse_node_selector("gpu=on,zone=a")


def test_the_aliases_name_flags_hamis_scheduler_really_has() -> None:
    """Each alias is a flag of HAMi v2.10.0's scheduler command, read from its source."""
    source = HAMI_SCHEDULER.read_text()
    for flag in HAMI_SCHEDULER_ALIASES.values():
        assert f'"{flag.removeprefix("--")}"' in source, flag


def test_an_alias_reads_the_same_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HAMI_QPS", "25")
    assert parsed()["qps"] == 25.0
    assert parsed("--kube-qps", "30")["qps"] == 30.0  # the command line wins


@pytest.mark.parametrize(
    ("args", "complaint"),
    [
        (("--kube-qps", "fast"), "'--qps' / '--kube-api-qps' / '--kube-qps': 'fast' is not a valid float"),
        (("--kube-burst", "0"), "'--burst' / '--kube-api-burst' / '--kube-burst': 0 is not in the range"),
        (("--node-label-selector", "gpu"), "'--node-selector' / '--node-label-selector'"),
        (("-v=loud",), "'-v' / '--v': 'loud' is not a klog verbosity (a whole number >= 0, e.g. 4)"),
        (("--v=-1",), "'-1' is not a klog verbosity"),
        (("--logging-format", "xml"), "'--log-format' / '--logging-format': 'xml' is not one of"),
    ],
)
def test_a_bad_value_under_an_alias_is_one_line(args: tuple[str, ...], complaint: str) -> None:
    line = one_error_line(*args)
    assert line.startswith("error: ") or line.startswith("Error: "), line
    assert complaint in line, line


@pytest.mark.parametrize(
    ("args", "level"),
    [
        (("-v=4",), "debug"),  # HAMi's chart's extraArgs
        (("-v", "5"), "debug"),
        (("-v4",), "debug"),
        (("--v=2",), "info"),
        (("--v", "0"), "info"),
        (("--log-level", "warning", "-v=4"), "debug"),  # given, -v wins
    ],
)
def test_klog_verbosity_sets_the_level(args: tuple[str, ...], level: str) -> None:
    assert parsed(*args)["verbosity"] == level


def test_without_v_the_log_level_stands() -> None:
    params = parsed("--log-level", "warning")
    assert (params["verbosity"], params["log_level"]) == (None, "warning")


def test_logging_format_is_log_format() -> None:
    assert parsed("--logging-format", "json")["log_format"] == "json"
    assert KUBE_SCHEDULER_ALIASES["log_format"] == "--logging-format"


def test_help_names_hamis_aliases_and_v() -> None:
    out = subprocess.run(
        [HAMI, "scheduler", "run", "--help"], capture_output=True, text=True, timeout=60
    ).stdout
    assert "--kube-qps is an alias (HAMi's scheduler's flag name)" in " ".join(out.split())
    assert "-v, --v N" in out


def test_the_lease_namespace_is_the_pods(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    mounted = tmp_path / "namespace"
    monkeypatch.delenv("POD_NAMESPACE", raising=False)
    assert default_lease_namespace(mounted) == DEFAULT_LEASE_NAMESPACE  # outside a pod
    mounted.write_text("gpu-system\n")
    assert default_lease_namespace(mounted) == "gpu-system"  # the ServiceAccount's
    monkeypatch.setenv("POD_NAMESPACE", "hami-system")
    assert default_lease_namespace(mounted) == "hami-system"  # the downward API's, as the chart sets it
    assert parsed()["lease_namespace"] is None  # resolved when the daemon starts
    assert parsed("--lease-namespace", "other")["lease_namespace"] == "other"


def test_the_reporter_takes_klog_verbosity_too() -> None:
    """HAMi's chart passes -v=4 to its device plugin as well: devicePlugin.extraArgs -> reporter.extraArgs."""
    reporter_run = reporter.commands["run"]
    with reporter_run.make_context("run", ["--node-name", "n1", "-v=4"]) as ctx:
        assert ctx.params["verbosity"] == "debug"
