"""One owner per setting: every default is written once, in its config class (``SchedulerConfig``,
``ReporterConfig``, the elector's ``ElectionConfig``, ``allocator.ARENAS``); the click options take it
from there, and the chart's values, the Dockerfile and the docs' tables that restate one are held to it
here."""

from __future__ import annotations

import re
from typing import Any

import attrs
import click
import pytest
import yaml
from harness.apiserver import REPO_ROOT

from hami_core.cli import main
from hami_core.durations import parse_duration
from hami_core.kube.elector import ElectionConfig
from hami_core.protocol.handshake import DEFAULT_WINDOW
from hami_core.reporter.daemon import ReporterConfig
from hami_core.scheduler.allocator import ARENAS
from hami_core.scheduler.config import DEFAULT_HTTP_PORT, DEFAULT_LEASE_NAME, SchedulerConfig
from hami_core.scheduler.peer_check import HAMI_LEASE

VALUES = yaml.safe_load((REPO_ROOT / "charts" / "hami-core" / "values.yaml").read_text())


def command(path: str) -> click.Command:
    found: click.Command | None = main
    for name in path.split():
        assert isinstance(found, click.Group), path
        found = found.get_command(click.Context(found), name)
    assert found is not None, path
    return found


def options(path: str) -> dict[str, click.Option]:
    return {p.name: p for p in command(path).params if isinstance(p, click.Option) and p.name}


def converted_default(option: click.Option) -> Any:
    """The option's default as the command receives it: converted by its type, then by its callback."""
    value = (
        option.type.convert(option.default, option, None)
        if isinstance(option.default, str)
        else option.default
    )
    if option.callback is not None:
        value = option.callback(click.Context(click.Command("check")), option, value)
    return value


def config_default(cls: type, name: str) -> Any:
    default = attrs.fields_dict(cls)[name].default
    assert not isinstance(default, attrs.Factory), f"{cls.__name__}.{name} is computed per use"  # type: ignore[arg-type]
    return default


#: Each command, the config class that owns its options' defaults, and the options that map onto a field
#: of another name or that the class computes per use.
OWNERS = [
    ("scheduler run", SchedulerConfig, {"lease_namespace", "identity", "node_selector"}),
    ("reporter run", ReporterConfig, {"node_name"}),
    ("doctor node", SchedulerConfig, {"lease_namespace", "node_selector"}),
    ("cleanup", SchedulerConfig, {"lease_namespace"}),
]


@pytest.mark.parametrize(("path", "owner", "computed"), OWNERS, ids=[o[0] for o in OWNERS])
def test_every_option_default_is_its_config_classes(path: str, owner: type, computed: set[str]) -> None:
    fields = attrs.fields_dict(owner)
    compared = []
    for name, option in options(path).items():
        if name not in fields or name in computed or option.default is None:
            continue
        assert converted_default(option) == config_default(owner, name), f"{path} --{name.replace('_', '-')}"
        compared.append(name)
    assert compared or path == "cleanup", f"{path}: no option compared"


def test_the_scheduler_takes_the_electors_timings_and_the_protocols_window() -> None:
    for name in ("lease_duration", "renew_deadline", "retry_period"):
        assert config_default(SchedulerConfig, name) == config_default(ElectionConfig, name)
    assert config_default(SchedulerConfig, "handshake_window") == DEFAULT_WINDOW.total_seconds()


def test_the_http_listen_default_is_the_configs_host_and_port() -> None:
    listen = options("scheduler run")["http_listen"].default
    assert listen == f"{config_default(SchedulerConfig, 'http_host')}:{DEFAULT_HTTP_PORT}"
    assert config_default(SchedulerConfig, "http_port") == DEFAULT_HTTP_PORT


def test_the_chart_restates_no_command_default() -> None:
    """Timings and rates are passed only when set: empty (or 0) means the command's default, so the chart
    holds no copy of it; the names and ports it must pass are the config's."""
    scheduler, reporter = VALUES["scheduler"], VALUES["reporter"]
    election = scheduler["leaderElection"]
    assert [election[k] for k in ("leaseDuration", "renewDeadline", "retryPeriod")] == ["", "", ""]
    assert [scheduler[k] for k in ("handshakeWindow", "resync", "qps", "burst")] == ["", "", 0, 0]
    assert [reporter[k] for k in ("interval", "retryInterval")] == ["", ""]
    assert election["leaseName"] == DEFAULT_LEASE_NAME
    assert scheduler["port"] == DEFAULT_HTTP_PORT
    assert scheduler["checkHamiLease"] == "/".join(HAMI_LEASE)
    assert options("scheduler run")["check_hami_lease"].default == "/".join(HAMI_LEASE)
    # Switches the chart passes only when on: off is the command's default, never passed as =false.
    for value, option in (("readOnly", "read_only"), ("refuseBesideHami", "refuse_beside_hami")):
        assert scheduler[value] is False, value
        assert converted_default(options("scheduler run")[option]) is False, option


def test_the_image_sets_the_arenas_the_scheduler_sets() -> None:
    dockerfile = (REPO_ROOT / "Dockerfile").read_text()
    assert re.findall(r"\bMALLOC_ARENA_MAX=(\d+)", dockerfile) == [str(ARENAS)]
    chart = "".join(p.read_text() for p in (REPO_ROOT / "charts").rglob("*.yaml"))
    assert "MALLOC_ARENA_MAX" not in chart  # the daemon's own business (scheduler/allocator.py)


DURATIONS_ROW = re.compile(r"^\| (scheduler|reporter) `(--[a-z-]+)`[^|]*\| `(\w+)` \| `([^`]+)` \|$", re.M)


def test_the_durations_table_is_the_options_and_their_owners() -> None:
    text = (REPO_ROOT / "docs" / "observability.md").read_text()
    rows = DURATIONS_ROW.findall(text)
    assert len(rows) == 7, rows
    owners = {"scheduler": SchedulerConfig, "reporter": ReporterConfig}
    for daemon, flag, env, default in rows:
        by_flag = {opt: o for o in options(f"{daemon} run").values() for opt in o.opts}
        option = by_flag[flag]
        assert option.envvar == env, flag
        assert parse_duration(default) == config_default(owners[daemon], str(option.name)), flag


def seconds(field: str, cls: type = SchedulerConfig) -> str:
    return f"{config_default(cls, field):g} s"


def restated() -> list[tuple[str, str]]:
    """(file, phrase) of every place the docs' prose states an owner's default."""
    qps, burst = config_default(SchedulerConfig, "qps"), config_default(SchedulerConfig, "burst")
    interval, retry = seconds("interval", ReporterConfig), seconds("retry_interval", ReporterConfig)
    return [
        ("README.md", f"`--resync` ({seconds('resync')})"),
        ("README.md", f"`--handshake-window` ({seconds('handshake_window')})"),
        ("README.md", f"for writes ({qps:g} / {burst:g}:"),
        ("README.md", f"every {interval} ({retry} after a failure)"),
        ("docs/operations.md", f"about one retry period ({seconds('retry_period')})"),
        ("docs/architecture.md", f"the {interval} / {retry} loop"),
        ("docs/vendor-guide.md", f"(every {interval}, {retry} after a failure)"),
    ]


@pytest.mark.parametrize(("path", "phrase"), restated(), ids=[f"{p}:{t}" for p, t in restated()])
def test_the_docs_prose_states_the_owners_defaults(path: str, phrase: str) -> None:
    assert phrase in " ".join((REPO_ROOT / path).read_text().split())


VALUES_ROW = re.compile(r"^\| `([\w.]+)` \| `([^`]*)` \|", re.M)


def test_the_operations_values_table_is_values_yaml() -> None:
    """Rows of one value with a literal default: that default is values.yaml's."""
    text = (REPO_ROOT / "docs" / "operations.md").read_text()
    table = text[text.index("| Value | Default | |") :]
    rows = VALUES_ROW.findall(table[: table.index("\n\n")])
    assert len(rows) >= 8, rows
    for path, default in rows:
        value: Any = VALUES
        for key in path.split("."):
            value = value[key]
        shown = yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("\n...")
        assert default in (shown, str(value).lower(), str(value)), (
            f"{path}: docs say {default}, values.yaml {shown}"
        )


def test_no_default_is_retyped_in_the_option_modules() -> None:
    """The option modules name no timing, rate or namespace of their own: they read the config classes."""
    for module in ("scheduler", "reporter", "doctor", "cleanup"):
        source = (REPO_ROOT / "hami_core" / "cli" / f"{module}.py").read_text()
        assert not re.findall(r'default="\d+(\.\d+)?(ms|s|m|h)?"', source), module
        assert not re.findall(r"default=\d", source), module
        assert 'default="kube-system"' not in source, module
