import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest
from click.testing import CliRunner

from hami_core.cli import main, run
from hami_core.plugins.manager import load_drivers
from hami_core.protocol.codecs import MAX_ANNOTATION_BYTES
from hami_core.simulate.run import run_scenario
from hami_core.simulate.scenario import (
    DEFAULT_SCENARIO,
    Action,
    ScenarioError,
    load_scenario,
    scenario_as_json,
    validate_scenario,
)


def test_the_embedded_scenario_keeps_every_promise() -> None:
    _, drivers = load_drivers()
    lines: list[str] = []
    result = run_scenario(DEFAULT_SCENARIO, {d.name: d for d in drivers}, say=lines.append)
    assert result.violations == ()
    # The seed's MLU value is degraded first, then fixed; the dead DCU and NVIDIA plugins are gone,
    # the deleted node is gone, the CPU-only node never appears.
    assert result.final == {
        "dcu-live": {"DCU": ("registered", "registered", 2, None)},
        "seed-node": {"MLU": ("registered", "registered", 2, None)},
    }
    changes = {(node, vendor, new.split(" ")[0].rstrip(",")) for _, node, vendor, _, new in result.timeline}
    assert ("seed-node", "MLU", "degraded") in changes
    assert ("dcu-dies", "DCU", "absent") in changes
    assert result.requests["get"] == 0  # counted before the final checks: nobody GETs a single node


def test_a_revived_plugin_is_readmitted_after_its_cleanup() -> None:
    _, drivers = load_drivers()
    scenario = attrs.evolve(
        DEFAULT_SCENARIO,
        handshake_window=2.0,
        resync=0.5,
        duration=9.0,
        actions=(
            Action(at=0.5, node="dcu-dies", do="kill", driver="dcu"),
            Action(at=5.5, node="dcu-dies", do="revive", driver="dcu"),
        ),
    )
    result = run_scenario(scenario, {d.name: d for d in drivers}, say=lambda line: None)
    assert result.violations == ()
    dcu = [new.split(",")[0] for _, node, vendor, _, new in result.timeline if node == "dcu-dies"]
    assert dcu == ["registered", "absent", "registered"]
    assert result.final["dcu-dies"]["DCU"][0] == "registered"


def test_the_default_scenario_round_trips_as_json(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text(scenario_as_json(DEFAULT_SCENARIO))
    assert load_scenario(path) == DEFAULT_SCENARIO


def test_a_bad_scenario_file_is_a_one_line_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"nodes": [{"name": "n", "plugins": [{"driver": 3}]}], "actions": "x"}))
    result = CliRunner().invoke(main, ["simulate", "--scenario", str(path)])
    assert result.exit_code == 2
    assert "scenario" in result.output and str(path) in result.output
    path.write_text("{not json")
    result = CliRunner().invoke(main, ["simulate", "--scenario", str(path)])
    assert result.exit_code == 2


def test_a_scenario_needing_an_uninstalled_driver_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    data = json.loads(scenario_as_json(DEFAULT_SCENARIO))
    data["nodes"][1]["plugins"][0]["driver"] = "acme"  # dcu-live: no action names its driver
    path.write_text(json.dumps(data))
    result = CliRunner().invoke(main, ["simulate", "--scenario", str(path)])
    assert result.exit_code == 1
    assert "acme" in result.output


# -- every bad value of a scenario file: one `error:` line naming the field, exit 2 -------------------------

Json = dict[str, Any]


def _default() -> Json:
    data: Json = json.loads(scenario_as_json(DEFAULT_SCENARIO))
    return data


def _hami(
    args: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    """``hami ARGS`` as the console script runs it (``run``): exit code, stdout, stderr."""
    monkeypatch.setattr(sys, "argv", ["hami", *args])
    with pytest.raises(SystemExit) as exit_:
        run()
    out, err = capsys.readouterr()
    code = exit_.value.code
    return code if isinstance(code, int) else 1, out, err


def _set(path: str, value: object) -> Callable[[Json], object]:
    """A change to the default scenario: ``path`` like ``nodes.0.name`` set to ``value``."""

    def change(data: Json) -> object:
        *parents, last = path.split(".")
        target: Any = data
        for key in parents:
            target = target[int(key)] if isinstance(target, list) else target[key]
        if isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value
        return data

    return change


def _with(change: Callable[[Json], None]) -> Callable[[Json], object]:
    def apply(data: Json) -> object:
        change(data)
        return data

    return apply


_BIG = "x" * (MAX_ANNOTATION_BYTES // 2 + 1)

BAD_SCENARIOS: list[tuple[str, Callable[[Json], object], str]] = [
    # (id, change to the default scenario, or the file's text; what the message must say after the path)
    ("node name", _set("nodes.2.name", "Bad Name"), "nodes[2].name: 'Bad Name' is not a valid node name"),
    ("node name too long", _set("nodes.0.name", "a" * 254), "nodes[0].name: 'aaaa"),
    ("node name not text", _set("nodes.0.name", 7), "nodes[0].name: expected a string, got int 7"),
    (
        "node name lone surrogate",
        _set("nodes.0.name", "\ud800"),
        "nodes[0].name: '\\ud800' is not valid Unicode",
    ),
    (
        "duplicate node",
        _set("nodes.4.name", "dcu-live"),
        "nodes[4].name: 'dcu-live' is already the name of nodes[1]",
    ),
    (
        "label key",
        _set("nodes.0.labels", {"bad key": "v"}),
        "nodes[0].labels: 'bad key' is not a valid label key",
    ),
    (
        "label value",
        _set("nodes.0.labels", {"zone": "a b"}),
        "nodes[0].labels.zone: 'a b' is not a valid label value",
    ),
    ("label value not text", _set("nodes.0.labels", {"zone": 1}), "nodes[0].labels.zone: expected a string"),
    (
        "labels not an object",
        _set("nodes.0.labels", []),
        "nodes[0].labels: expected a JSON object, got an array",
    ),
    (
        "register not text",
        _set("nodes.1.plugins.0.register", 3),
        "nodes[1].plugins[0].register: expected a string, got int 3",
    ),
    (
        "register missing",
        _with(lambda d: d["nodes"][1]["plugins"][0].pop("register")),
        "nodes[1].plugins[0].register: missing",
    ),
    ("driver empty", _set("nodes.1.plugins.0.driver", ""), "nodes[1].plugins[0].driver: must not be empty"),
    (
        "driver not text",
        _set("nodes.1.plugins.0.driver", None),
        "nodes[1].plugins[0].driver: expected a string",
    ),
    (
        "two plugins of one driver",
        _with(lambda d: d["nodes"][1]["plugins"].append(d["nodes"][1]["plugins"][0])),
        "nodes[1].plugins[1].driver: 'dcu' is already the driver of nodes[1].plugins[0]",
    ),
    (
        "allocatable negative",
        _set("nodes.1.plugins.0.allocatable", -1),
        "nodes[1].plugins[0].allocatable: -1 is not from 0 to 9223372036854775807",
    ),
    (
        "allocatable huge",
        _set("nodes.1.plugins.0.allocatable", 10**30),
        "nodes[1].plugins[0].allocatable: 1000000000000000000000000000000 is not from 0",
    ),
    (
        "allocatable fraction",
        _set("nodes.1.plugins.0.allocatable", 2.5),
        "nodes[1].plugins[0].allocatable: expected a whole number, got a number 2.5",
    ),
    (
        "allocatable boolean",
        _set("nodes.1.plugins.0.allocatable", True),
        "nodes[1].plugins[0].allocatable: expected a whole number, got a boolean True",
    ),
    (
        "registers too long",
        _with(
            lambda d: (
                d["nodes"][0]["plugins"][0].update(register=_BIG)
                or d["nodes"][0]["plugins"][1].update(register=_BIG)
            )
        ),
        f"nodes[0].plugins: the node's register values take {2 * len(_BIG)} bytes",
    ),
    (
        "set-register too long",
        _with(
            lambda d: d["nodes"][0]["plugins"][0].update(register=_BIG) or d["actions"][1].update(value=_BIG)
        ),
        f"actions[1].value: the node's register values take {2 * len(_BIG)} bytes",
    ),
    (
        "action on unknown node",
        _set("actions.0.node", "nope"),
        "actions[0].node: 'nope' is not a node of the scenario",
    ),
    (
        "action on unknown driver",
        _set("actions.0.driver", "nvidia"),
        "actions[0].driver: 'nvidia' is not a plugin of node 'dcu-dies' (nodes[2] has: dcu)",
    ),
    ("kill without driver", _set("actions.0.driver", ""), "actions[0].driver: a kill needs the driver"),
    ("delete with driver", _set("actions.3.driver", "kunlun"), "actions[3].driver: a delete takes no driver"),
    ("kill with value", _set("actions.0.value", "x"), "actions[0].value: only a set-register takes a value"),
    (
        "unknown action",
        _set("actions.0.do", "explode"),
        "actions[0].do: 'explode' is not one of kill, revive",
    ),
    (
        "action after delete",
        _with(
            lambda d: d["actions"].append({"at": 13.0, "node": "xpu-node", "do": "kill", "driver": "kunlun"})
        ),
        "actions[4].node: 'xpu-node' is already deleted by actions[3]",
    ),
    (
        "delete twice",
        _with(lambda d: d["actions"].insert(0, {"at": 14.0, "node": "xpu-node", "do": "delete"})),
        "actions[0].node: 'xpu-node' is already deleted by actions[4]",
    ),
    (
        "at the duration",
        _set("actions.0.at", 16),
        "actions[0].at: 16.0 is not from 0 to before the duration (16 s)",
    ),
    ("at negative", _set("actions.0.at", -1), "actions[0].at: -1.0 is not from 0"),
    ("at NaN", _set("actions.0.at", float("nan")), "actions[0].at: nan is not from 0"),
    ("at not a duration", _set("actions.0.at", "soon"), "actions[0].at: 'soon' is not a duration"),
    ("at a day as a unit", _set("actions.0.at", "1d"), "actions[0].at: '1d': unknown unit 'd'"),
    (
        "at a boolean",
        _set("actions.0.at", False),
        "actions[0].at: expected a number of seconds or a duration string, got a boolean",
    ),
    ("at a negative duration", _set("actions.0.at", "-1s"), "actions[0].at: -1.0 is not from 0"),
    ("at missing", _with(lambda d: d["actions"][0].pop("at")), "actions[0].at: missing"),
    (
        "duration infinite",
        lambda d: scenario_as_json(DEFAULT_SCENARIO).replace('"duration": 16.0', '"duration": 1e400'),
        "duration: inf is not a number of seconds greater than 0 and at most 86400 (a day)",
    ),
    ("duration negative", _set("duration", -5), "duration: -5.0 is not a number of seconds greater than 0"),
    ("duration zero", _set("duration", 0), "duration: 0.0 is not a number of seconds greater than 0"),
    ("duration over a day", _set("duration", 86401), "duration: 86401.0 is not a number of seconds"),
    ("duration not a duration", _set("duration", "16 s"), "duration: '16 s' is not a duration"),
    ("duration a zero duration", _set("duration", "0s"), "duration: 0.0 is not a number of seconds"),
    (
        "duration boolean",
        _set("duration", True),
        "duration: expected a number of seconds or a duration string, got a boolean",
    ),
    (
        "duration huge integer",
        _set("duration", 10**400),
        "duration: 10000000000000000 ... 00000000000000000 is too large",
    ),
    (
        "handshake window huge",
        _set("handshake_window", 1e300),
        "handshake_window: 1e+300 is not a number of seconds from 0.01 to 86400 (a day)",
    ),
    ("handshake window NaN", _set("handshake_window", float("nan")), "handshake_window: nan is not a number"),
    ("resync zero", _set("resync", 0), "resync: 0.0 is not a number of seconds from 0.01"),
    ("resync a busy loop", _set("resync", 1e-9), "resync: 1e-09 is not a number of seconds from 0.01"),
    (
        "report interval negative",
        _set("report_interval", -1),
        "report_interval: -1.0 is not a number of seconds",
    ),
    (
        "report interval infinite",
        _set("report_interval", float("inf")),
        "report_interval: inf is not a number",
    ),
    ("unknown field", _set("handshake_windw", 4.0), "handshake_windw: unknown field"),
    ("unknown node field", _set("nodes.0.nmae", "x"), "nodes[0].nmae: unknown field"),
    ("no nodes", _with(lambda d: d.pop("nodes")), "nodes: missing"),
    ("nodes not an array", _set("nodes", {}), "nodes: expected a JSON array, got an object"),
    ("node not an object", _set("nodes.0", "seed-node"), "nodes[0]: expected a JSON object, got a string"),
    ("not an object", lambda d: "[]", "expected a JSON object, got an array"),
    (
        "repeated key",
        lambda d: '{"nodes": [], "duration": 1, "duration": 2}',
        "the key 'duration' appears twice in one JSON object",
    ),
]


@pytest.mark.parametrize(("change", "message"), [pytest.param(c, m, id=i) for i, c, m in BAD_SCENARIOS])
def test_a_bad_scenario_value_is_one_error_line_and_exit_2(
    change: Callable[[Json], object],
    message: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "bad.json"
    changed = change(_default())
    path.write_text(changed if isinstance(changed, str) else json.dumps(changed))
    code, out, err = _hami(["simulate", "--scenario", str(path)], monkeypatch, capsys)
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith("error: "), err
    assert f"scenario {path}: {message}" in err, err
    # load_scenario itself: the same message, as a ValueError.
    with pytest.raises(ValueError, match=r"^scenario ") as raised:
        load_scenario(path)
    assert message in str(raised.value)


def test_the_default_scenario_is_valid(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    validate_scenario(DEFAULT_SCENARIO)
    code, out, _ = _hami(["simulate", "--print-default"], monkeypatch, capsys)
    assert code == 0
    path = tmp_path / "default.json"
    path.write_text(out)
    assert load_scenario(path) == DEFAULT_SCENARIO


def test_a_valid_scenario_file_runs_through_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    data = _default()
    data.update(
        duration=2.5,
        handshake_window=1.0,
        resync=0.25,
        report_interval=0.25,
        actions=[{"at": 0.5, "node": "xpu-node", "do": "delete"}],
    )
    path = tmp_path / "short.json"
    path.write_text(json.dumps(data))
    code, out, err = _hami(["simulate", "--scenario", str(path)], monkeypatch, capsys)
    assert code == 0, err
    assert "all protocol promises held" in out
    assert "xpu-node" in out and "** delete" in out


def test_run_scenario_refuses_an_invalid_scenario_before_it_starts() -> None:
    _, drivers = load_drivers()
    scenario = attrs.evolve(DEFAULT_SCENARIO, actions=(Action(at=1.0, node="nope", do="kill", driver="dcu"),))
    with pytest.raises(ScenarioError, match=r"^scenario actions\[0\]\.node: 'nope' is not a node"):
        run_scenario(scenario, {d.name: d for d in drivers}, say=lambda line: None)


def test_a_write_the_cluster_refuses_is_one_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The register value alone fits the annotations' limit, with its annotation key it does not: only the
    # in-memory cluster sees that, and the CLI reports its ClusterError as one line (exit 1).
    data = _default()
    data["nodes"][1]["plugins"][0]["register"] = "x" * (MAX_ANNOTATION_BYTES - 3)
    path = tmp_path / "big.json"
    path.write_text(json.dumps(data))
    code, _, err = _hami(["simulate", "--scenario", str(path)], monkeypatch, capsys)
    assert code == 1
    assert err.count("\n") == 1
    assert err.startswith("error: create node 'dcu-live': metadata.annotations: too long"), err


def test_the_default_scenario_prints_the_same_lines_on_every_run() -> None:
    """Fake time: the run is a function of the scenario, not of the machine's load."""
    _, drivers = load_drivers()
    runs: list[list[str]] = []
    for _ in range(2):
        lines: list[str] = []
        result = run_scenario(DEFAULT_SCENARIO, {d.name: d for d in drivers}, say=lines.append)
        runs.append([*lines, repr(result.requests), repr(result.final)])
    assert runs[0] == runs[1]
    assert any(line.startswith("t=  6.1s  dcu-dies   DCU     registered") for line in runs[0])


def test_scenario_timings_may_be_duration_strings(tmp_path: Path) -> None:
    data = _default()
    data.update(duration="16s", handshake_window="4000ms", resync="1s", report_interval="1")
    for action in data["actions"]:
        action["at"] = f"{action['at']:g}s"
    path = tmp_path / "durations.json"
    path.write_text(json.dumps(data))
    assert load_scenario(path) == DEFAULT_SCENARIO
