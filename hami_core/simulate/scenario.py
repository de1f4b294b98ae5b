"""A scenario: simulated nodes, their device plugins, and what happens to them when; in a file, each
timing is seconds or a duration string as the flags take it (``"1m30s"``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from hami_core.durations import MAX_SECONDS, parse_duration
from hami_core.k8snames import is_dns_subdomain, is_label_value, is_qualified_name
from hami_core.protocol.errors import member_path, shorten
from hami_core.protocol.size import MAX_ANNOTATION_BYTES

__all__ = [
    "DEFAULT_SCENARIO",
    "Action",
    "Plugin",
    "Scenario",
    "ScenarioError",
    "SimNode",
    "load_scenario",
    "validate_scenario",
]


@attrs.frozen(kw_only=True)
class Plugin:
    """One vendor's device plugin on a node: the register value it writes and the count kubelet shows."""

    driver: str
    register: str
    allocatable: int = 0


@attrs.frozen(kw_only=True)
class SimNode:
    name: str
    plugins: tuple[Plugin, ...] = ()
    labels: Mapping[str, str] = attrs.field(factory=dict, hash=False)


@attrs.frozen(kw_only=True)
class Action:
    """At ``at`` seconds: ``kill`` a plugin (it stops reporting and kubelet drops its count to 0),
    ``revive`` it, ``set-register`` to a new value, or ``delete`` the node."""

    at: float
    node: str
    do: str
    driver: str = ""
    value: str = ""


@attrs.frozen(kw_only=True)
class Scenario:
    nodes: tuple[SimNode, ...]
    actions: tuple[Action, ...] = ()
    #: Total simulated run, in seconds of wall time.
    duration: float = 16.0
    #: The compressed protocol timings of the run.
    handshake_window: float = 4.0
    resync: float = 1.0
    report_interval: float = 1.0


_SEED_NVIDIA = (
    "GPU-00552014-5c87-89ac-b1a6-7b53aa24b0ec,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,true:"
    "GPU-0fc3eda5-e98b-a25b-5b0d-cf5c855d1448,10,32768,100,NVIDIA-Tesla V100-PCIE-32GB,0,true:"
)
_SEED_MLU = (
    "MLU-45013011-2257-0000-0000-000000000000,10,23308,0,MLU-MLU370-X4,0,false:"
    "MLU-54043011-2257-0000-0000-000000000000,10,23308,0,"
)
_FIXED_MLU = (
    "MLU-45013011-2257-0000-0000-000000000000,10,23308,0,MLU-MLU370-X4,0,false:"
    "MLU-54043011-2257-0000-0000-000000000000,10,23308,0,MLU-MLU370-X4,0,true:"
)
_DCU = "DCU-0001,4,16384,100,DCU-Z100,0,true,0,hami:DCU-0002,4,16384,100,DCU-Z100,1,true,1,hami:"
_XPU = '[{"id":"XPU-0","count":4,"devmem":98304,"devcore":100,"type":"P800","health":true}]'

DEFAULT_SCENARIO = Scenario(
    nodes=(
        # The seed's node: two V100s in the legacy encoding an old NVIDIA plugin writes (read anyway,
        # spec 3.4), and two MLUs whose second record is truncated.
        SimNode(
            name="seed-node",
            plugins=(
                Plugin(driver="nvidia", register=_SEED_NVIDIA, allocatable=20),
                Plugin(driver="mlu", register=_SEED_MLU, allocatable=2),
            ),
        ),
        SimNode(name="dcu-live", plugins=(Plugin(driver="dcu", register=_DCU, allocatable=8),)),
        SimNode(name="dcu-dies", plugins=(Plugin(driver="dcu", register=_DCU, allocatable=8),)),
        SimNode(name="xpu-node", plugins=(Plugin(driver="kunlun", register=_XPU, allocatable=4),)),
        SimNode(name="cpu-only"),
    ),
    actions=(
        Action(at=3.0, node="dcu-dies", do="kill", driver="dcu"),
        Action(at=5.0, node="seed-node", do="set-register", driver="mlu", value=_FIXED_MLU),
        Action(at=8.0, node="seed-node", do="kill", driver="nvidia"),
        Action(at=12.0, node="xpu-node", do="delete"),
    ),
)


class ScenarioError(ValueError):
    """A scenario value that cannot be run, in one line: ``scenario [SOURCE: ]FIELD: PROBLEM``."""

    def __init__(self, field: str, problem: str, *, source: str = "") -> None:
        where = ": ".join(part for part in (source, field) if part)
        super().__init__(f"scenario {where}: {problem}")
        self.field, self.problem, self.source = field, problem, source


def load_scenario(path: Path) -> Scenario:
    """A validated scenario from a JSON file shaped as ``DEFAULT_SCENARIO``; each failure a one-line
    ``ValueError`` naming the file and the field."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"), object_pairs_hook=_no_duplicate_keys)
        scenario: Scenario = _structure("", data, Scenario, ("nodes",))
        validate_scenario(scenario)
    except ScenarioError as exc:
        raise ScenarioError(exc.field, exc.problem, source=str(path)) from None
    except RecursionError:
        raise ValueError(f"scenario {path}: nested too deeply") from None
    except (OSError, ValueError) as exc:  # JSONDecodeError, UnicodeDecodeError, an integer too long
        raise ValueError(f"scenario {path}: {' '.join(str(exc).split())}") from None
    return scenario


def validate_scenario(scenario: Scenario) -> None:
    """Raise ``ScenarioError`` for the first value of ``scenario`` that cannot be run as written."""
    _check_seconds("duration", scenario.duration, minimum=0.0)
    for name in ("handshake_window", "resync", "report_interval"):
        _check_seconds(name, getattr(scenario, name), minimum=_MIN_PERIOD)
    nodes: dict[str, tuple[int, dict[str, int]]] = {}  # name -> (index, driver -> plugin index)
    registers: dict[str, dict[str, str]] = {}  # name -> driver -> register value
    for i, node in enumerate(scenario.nodes):
        where = f"nodes[{i}]"
        _check_text(f"{where}.name", node.name)
        if not is_dns_subdomain(node.name):
            raise ScenarioError(
                f"{where}.name",
                f"{shorten(node.name)} is not a valid node name (a DNS "
                "subdomain: at most 253 of a-z, 0-9, '-' and '.')",
            )
        if node.name in nodes:
            raise ScenarioError(
                f"{where}.name", f"{node.name!r} is already the name of nodes[{nodes[node.name][0]}]"
            )
        labels = f"{where}.labels"
        for key, value in node.labels.items():
            _check_text(labels, key)
            _check_text(member_path(labels, key), value)
            if not is_qualified_name(key):
                raise ScenarioError(labels, f"{shorten(key)} is not a valid label key")
            if not is_label_value(value):
                raise ScenarioError(member_path(labels, key), f"{shorten(value)} is not a valid label value")
        drivers: dict[str, int] = {}
        for j, plugin in enumerate(node.plugins):
            at = f"{where}.plugins[{j}]"
            _check_text(f"{at}.driver", plugin.driver)
            if not plugin.driver:
                raise ScenarioError(f"{at}.driver", "must not be empty")
            if plugin.driver in drivers:
                raise ScenarioError(
                    f"{at}.driver",
                    f"{plugin.driver!r} is already the driver of "
                    f"{where}.plugins[{drivers[plugin.driver]}] (one plugin per driver)",
                )
            drivers[plugin.driver] = j
            _check_text(f"{at}.register", plugin.register)
            if isinstance(plugin.allocatable, bool) or not isinstance(plugin.allocatable, int):
                got = f"{_json_type(plugin.allocatable)} {_show(plugin.allocatable)}"
                raise ScenarioError(f"{at}.allocatable", f"expected a whole number, got {got}")
            if not 0 <= plugin.allocatable <= _MAX_COUNT:
                raise ScenarioError(
                    f"{at}.allocatable", f"{_show(plugin.allocatable)} is not from 0 to {_MAX_COUNT}"
                )
        nodes[node.name] = (i, drivers)
        registers[node.name] = {p.driver: p.register for p in node.plugins}
        _check_annotation_size(f"{where}.plugins", registers[node.name])
    for k, action in enumerate(scenario.actions):
        if not (_is_number(action.at) and 0 <= action.at < scenario.duration):
            raise ScenarioError(
                f"actions[{k}].at",
                f"{_show(action.at)} is not from 0 to before the duration ({scenario.duration:g} s)",
            )
    deleted: dict[str, int] = {}  # node -> index of the action that deletes it
    # In the order they run: by time, then as listed.
    for k, action in sorted(enumerate(scenario.actions), key=lambda item: item[1].at):
        where = f"actions[{k}]"
        _check_text(f"{where}.do", action.do)
        if action.do not in _ACTIONS:
            raise ScenarioError(f"{where}.do", f"{shorten(action.do)} is not one of {', '.join(_ACTIONS)}")
        for name in ("node", "driver", "value"):
            _check_text(f"{where}.{name}", getattr(action, name))
        if action.node not in nodes:
            raise ScenarioError(f"{where}.node", f"{shorten(action.node)} is not a node of the scenario")
        if action.node in deleted:
            raise ScenarioError(
                f"{where}.node", f"{action.node!r} is already deleted by actions[{deleted[action.node]}]"
            )
        index, drivers = nodes[action.node]
        if action.do == "delete":
            if action.driver:
                raise ScenarioError(f"{where}.driver", "a delete takes no driver (it removes the whole node)")
            deleted[action.node] = k
        elif not action.driver:
            raise ScenarioError(
                f"{where}.driver", f"a {action.do} needs the driver of one of the node's plugins"
            )
        elif action.driver not in drivers:
            has = ", ".join(sorted(drivers)) or "none"
            raise ScenarioError(
                f"{where}.driver",
                f"{shorten(action.driver)} is not a plugin of node "
                f"{action.node!r} (nodes[{index}] has: {has})",
            )
        if action.do == "set-register":
            registers[action.node][action.driver] = action.value
            _check_annotation_size(f"{where}.value", registers[action.node])
        elif action.value:
            raise ScenarioError(f"{where}.value", f"only a set-register takes a value, not a {action.do}")


_ACTIONS = ("kill", "revive", "set-register", "delete")
#: The shortest period: anything shorter is a busy loop of the scheduler or of the simulated plugins.
_MIN_PERIOD = 0.01
_MAX_COUNT = 2**63 - 1


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_seconds(field: str, value: float, *, minimum: float) -> None:
    if not (_is_number(value) and 0 < value <= MAX_SECONDS and value >= minimum):
        bounds = f"from {minimum:g} to" if minimum > 0 else "greater than 0 and at most"
        raise ScenarioError(
            field, f"{_show(value)} is not a number of seconds {bounds} {MAX_SECONDS:g} (a day)"
        )


def _show(value: object) -> str:
    """``repr(value)`` for a message, cut in the middle when long (a 4000-digit number, say)."""
    try:
        text = repr(value)
    except ValueError:  # an integer with more digits than Python will print
        return "a number too large to show"
    return text if len(text) <= 40 else f"{text[:17]} ... {text[-17:]}"


def _check_text(field: str, value: object) -> None:
    if not isinstance(value, str):
        raise ScenarioError(field, f"expected a string, got {type(value).__name__} {_show(value)}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise ScenarioError(field, f"{shorten(value)} is not valid Unicode (a lone surrogate)") from None


def _check_annotation_size(field: str, registers: Mapping[str, str]) -> None:
    size = sum(len(value.encode("utf-8")) for value in registers.values())
    if size > MAX_ANNOTATION_BYTES:
        raise ScenarioError(
            field,
            f"the node's register values take {size} bytes, more than the "
            f"{MAX_ANNOTATION_BYTES} a Node's annotations may hold",
        )


def _no_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ScenarioError("", f"the key {shorten(key)} appears twice in one JSON object")
        result[key] = value
    return result


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object"


def _timing(field: str, value: object) -> float:
    if isinstance(value, str):
        try:
            return parse_duration(value)
        except ValueError as exc:
            raise ScenarioError(field, str(exc)) from None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ScenarioError(
            field, f"expected a number of seconds or a duration string, got {_json_type(value)}"
        )
    try:
        return float(value)
    except OverflowError:
        raise ScenarioError(field, f"{_show(value)} is too large") from None


#: The arrays of a scenario: the class of their items, and the fields an item must have.
_ITEMS: dict[str, tuple[type, tuple[str, ...]]] = {
    "nodes": (SimNode, ("name",)),
    "plugins": (Plugin, ("driver", "register")),
    "actions": (Action, ("at", "node", "do")),
}
_TIMINGS = ("duration", "handshake_window", "resync", "report_interval", "at")


def _structure(field: str, data: object, cls: type, required: tuple[str, ...]) -> Any:
    """``cls`` from a JSON object of just its fields: timings read, arrays structured, values checked next."""
    if not isinstance(data, dict):
        raise ScenarioError(field, f"expected a JSON object, got {_json_type(data)}")
    known = {a.name for a in attrs.fields(cls)}
    for key in data:
        if key not in known:
            raise ScenarioError(member_path(field, key), f"unknown field (known: {', '.join(sorted(known))})")
    for key in required:
        if key not in data:
            raise ScenarioError(member_path(field, key), "missing")
    values = dict(data)
    for name, value in values.items():
        where = member_path(field, name)
        if name in _TIMINGS:
            values[name] = _timing(where, value)
        elif name in _ITEMS:
            if not isinstance(value, list):
                raise ScenarioError(where, f"expected a JSON array, got {_json_type(value)}")
            item, needed = _ITEMS[name]
            values[name] = tuple(_structure(f"{where}[{i}]", v, item, needed) for i, v in enumerate(value))
        elif name == "labels" and not isinstance(value, dict):
            raise ScenarioError(where, f"expected a JSON object, got {_json_type(value)}")
    return cls(**values)


def scenario_as_json(scenario: Scenario) -> str:
    return json.dumps(attrs.asdict(scenario), indent=2)
