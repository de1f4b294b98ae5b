import json
from pathlib import Path

import attrs
from click.testing import CliRunner

from hami_core.cli import main
from hami_core.plugins.manager import load_drivers
from hami_core.simulate.run import run_scenario
from hami_core.simulate.scenario import DEFAULT_SCENARIO, Action, load_scenario, scenario_as_json


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
    data["nodes"][0]["plugins"][0]["driver"] = "acme"
    path.write_text(json.dumps(data))
    result = CliRunner().invoke(main, ["simulate", "--scenario", str(path)])
    assert result.exit_code == 1
    assert "acme" in result.output
