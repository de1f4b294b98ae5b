"""A scenario: simulated nodes, their device plugins, and what happens to them when.

The embedded default (``DEFAULT_SCENARIO``) is the seed note's example cluster plus the failures HAMi's
users hit: a plugin that dies, a truncated register value, a node with no accelerator at all.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import cattrs

__all__ = ["DEFAULT_SCENARIO", "Action", "Plugin", "Scenario", "SimNode", "load_scenario"]


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
    do: str = attrs.field(validator=attrs.validators.in_(("kill", "revive", "set-register", "delete")))
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
        SimNode(name="seed-node", plugins=(
            Plugin(driver="nvidia", register=_SEED_NVIDIA, allocatable=20),
            Plugin(driver="mlu", register=_SEED_MLU, allocatable=2),
        )),
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


def load_scenario(path: Path) -> Scenario:
    """Read a scenario from a JSON file with the same shape as ``DEFAULT_SCENARIO``."""
    try:
        data: Any = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ValueError(f"scenario {path}: {exc}") from None
    try:
        return cattrs.structure(data, Scenario)
    except Exception as exc:  # cattrs raises a group of what was wrong
        raise ValueError(f"scenario {path}: {' '.join(str(exc).split())}") from None


def scenario_as_json(scenario: Scenario) -> str:
    return json.dumps(cattrs.unstructure(scenario), indent=2)


def plugin_drivers(scenario: Scenario) -> Sequence[str]:
    return sorted({p.driver for n in scenario.nodes for p in n.plugins})
