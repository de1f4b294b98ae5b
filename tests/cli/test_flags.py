"""Flags in Kubernetes' idiom: ``--leader-elect[=false]`` / ``--no-leader-elect``, and kube-scheduler's flag
names as aliases of the scheduler's own."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest

from hami_core.cli.scheduler import KUBE_SCHEDULER_ALIASES, scheduler

HAMI = str(Path(sys.executable).with_name("hami"))
RUN = scheduler.commands["run"]


def parsed(*args: str) -> dict[str, Any]:
    """The scheduler's options as ``hami scheduler run ARGS`` reads them (nothing is started)."""
    with RUN.make_context("run", list(args)) as ctx:
        return ctx.params


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ((), True),
        (("--leader-elect",), True),
        (("--leader-elect=true",), True),
        (("--leader-elect=false",), False),
        (("--leader-elect", "false"), False),
        (("--leader-elect=0",), False),
        (("--no-leader-elect",), False),
        (("--leader-elect=false", "--leader-elect"), True),
        (("--leader-elect", "--no-leader-elect"), False),
        (("--no-leader-elect", "--leader-elect=true"), True),
    ],
)
def test_leader_elect_as_kubernetes_commands_take_it(args: tuple[str, ...], expected: bool) -> None:
    # The last one given wins, as with Go's flag package.
    assert parsed(*args)["leader_elect"] is expected


def test_leader_elect_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HAMI_LEADER_ELECT", "false")
    assert parsed()["leader_elect"] is False
    assert parsed("--leader-elect")["leader_elect"] is True  # the command line wins over the environment


def test_a_bad_leader_elect_value_is_one_line_and_exit_2() -> None:
    result = subprocess.run(
        [HAMI, "scheduler", "run", "--leader-elect=maybe"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "'--leader-elect'" in lines[0] and "'maybe' is not a valid boolean" in lines[0]


def test_kube_scheduler_flag_names_are_aliases() -> None:
    params = parsed(
        "--leader-elect-lease-duration",
        "20s",
        "--leader-elect-renew-deadline",
        "12s",
        "--leader-elect-retry-period",
        "3s",
        "--leader-elect-resource-name",
        "hami-x",
        "--leader-elect-resource-namespace",
        "hami-system",
        "--kube-api-qps",
        "50",
        "--kube-api-burst",
        "100",
    )
    assert (params["lease_duration"], params["renew_deadline"], params["retry_period"]) == (20.0, 12.0, 3.0)
    assert (params["lease_name"], params["lease_namespace"]) == ("hami-x", "hami-system")
    assert (params["qps"], params["burst"]) == (50.0, 100)
    # Both names of one option are one setting: the last one given wins.
    assert parsed("--lease-duration", "30s", "--leader-elect-lease-duration", "40s")["lease_duration"] == 40.0


def test_help_says_which_names_are_aliases() -> None:
    with RUN.make_context("run", []) as ctx:
        text = RUN.get_help(ctx)
    flat = " ".join(text.split())
    for flag in KUBE_SCHEDULER_ALIASES.values():
        assert f"{flag} is an alias (kube-scheduler's flag name)" in flat.replace("- ", "-"), flag
    assert "--no-leader-elect Same as --leader-elect=false." in flat


def test_an_alias_of_an_unknown_option_is_a_programming_error() -> None:
    from hami_core.cli.options import aliases

    with pytest.raises(TypeError, match="no option 'nope'"):
        aliases({"nope": "--x"}, origin="test")(click.Command("c"))


@pytest.mark.parametrize(
    ("variable", "value", "args", "message"),
    [
        ("HAMI_RESYNC", "0", ["scheduler", "run"], "Invalid value for '--resync': '0' is not more than 0"),
        ("HAMI_LEADER_ELECT", "maybe", ["scheduler", "run"], "Invalid value for '--leader-elect'"),
        ("HAMI_LEASE_NAMESPACE", "A_B", ["cleanup", "--all"], "Invalid value for '--lease-namespace'"),
    ],
)
def test_a_bad_value_from_the_environment_names_the_variable(
    variable: str, value: str, args: list[str], message: str, tmp_path: Path
) -> None:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HAMI_")}
    command = [HAMI, *args, "--kubeconfig", str(tmp_path / "none")]
    env = {**clean, "HAMI_VENDORS": "nvidia"}
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, env={**env, variable: value})
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    path = "hami scheduler run" if args[0] == "scheduler" else "hami cleanup"
    assert line.startswith(f"error: {path}: {variable}={value}: {message}"), line
    # the same value on the command line is named by its flag alone
    flag = "--" + variable.removeprefix("HAMI_").lower().replace("_", "-")
    given = subprocess.run([*command, f"{flag}={value}"], capture_output=True, text=True, timeout=60, env=env)
    assert given.returncode == 2 and variable not in given.stderr and message in given.stderr
