"""Runs a scenario: an in-memory cluster, simulated plugins and one real scheduler replica on a fake clock
in 0.1 s steps (the same lines every run, in seconds of wall time), observed for every registration
change, and the protocol's promises checked at the end."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import attrs

from hami_core.clock import FakeClock
from hami_core.kube.memory import MemoryCluster
from hami_core.plugins.driver import VendorDriver
from hami_core.protocol.handshake import format_report
from hami_core.scheduler.config import DEFAULT_LEASE_NAMESPACE, SchedulerConfig
from hami_core.scheduler.daemon import Scheduler
from hami_core.simulate.scenario import Action, Scenario, validate_scenario
from hami_core.simulate.settle import NodeWrites, wait_settled

__all__ = ["SimulationResult", "run_scenario"]

_TICK = 0.1


@attrs.frozen(kw_only=True)
class SimulationResult:
    #: (seconds since start, node, vendor key, old state, new state)
    timeline: tuple[tuple[float, str, str, str, str], ...]
    #: node -> vendor key -> (state, reason, device count, error)
    final: Mapping[str, Mapping[str, tuple[str, str, int, str | None]]]
    #: Promises that did not hold (empty when all did).
    violations: tuple[str, ...]
    requests: Mapping[str, int]


@attrs.define
class _PluginState:
    node: str
    driver: VendorDriver
    allocatable: int
    alive: bool = True
    killed_at: float | None = None
    revived_at: float | None = None


@attrs.define
class _Plugins:
    """The simulated cluster and plugins: their writes, each seen (``writes``), and the nodes deleted."""

    cluster: MemoryCluster
    plugins: dict[tuple[str, str], _PluginState]
    say: Callable[[str], None]
    writes: NodeWrites = attrs.Factory(NodeWrites)
    deleted: dict[str, float] = attrs.Factory(dict)

    def report(self, report: str) -> None:
        """Every live plugin that writes reports sends ``Reported_<now>`` (spec 7), a node's in one patch."""
        by_node: dict[str, dict[str, str | None]] = {}
        for state in self.plugins.values():
            driver = state.driver
            if state.alive and driver.writes_reported and driver.handshake_annotation:
                by_node.setdefault(state.node, {})[driver.handshake_annotation] = report
        for node, patch in sorted(by_node.items()):
            try:
                self.writes.saw(self.cluster.patch_node_annotations(node, patch))
            except Exception:
                continue

    def apply(self, action: Action, elapsed: float) -> None:
        cluster, writes = self.cluster, self.writes
        self.say(
            f"t={elapsed:5.1f}s  {action.node:<10} {action.driver or '-':<7} ** {action.do}"
            + (f" {action.value[:40]!r}..." if action.value else "")
        )
        if action.do == "delete":
            cluster.delete_node(action.node)
            writes.deleted(action.node)
            self.deleted[action.node] = elapsed
            for key in [k for k in self.plugins if k[0] == action.node]:
                self.plugins[key].alive = False
            return
        state = self.plugins[(action.node, action.driver)]
        if action.do == "kill":
            state.alive, state.killed_at = False, elapsed
            writes.saw(cluster.patch_node_status(action.node, {state.driver.count_resource: "0"}))
        elif action.do == "revive":
            state.alive, state.revived_at = True, elapsed
            revived = {state.driver.count_resource: str(state.allocatable)}
            writes.saw(cluster.patch_node_status(action.node, revived))
        elif action.do == "set-register":
            changed: dict[str, str | None] = {state.driver.register_annotation or "": action.value}
            writes.saw(cluster.patch_node_annotations(action.node, changed))


def run_scenario(
    scenario: Scenario,
    drivers: Mapping[str, VendorDriver],
    *,
    say: Callable[[str], None] = print,
) -> SimulationResult:
    """Run ``scenario`` with ``drivers`` (by name); ``say`` gets each line. ``ValueError`` when it cannot
    be run, or needs a driver not given."""
    validate_scenario(scenario)
    needed = {p.driver for n in scenario.nodes for p in n.plugins}
    if missing := sorted(needed - set(drivers)):
        raise ValueError(f"scenario needs drivers that are not selected or installed: {', '.join(missing)}")
    if unwritten := sorted(name for name in needed if not drivers[name].register_annotation):
        raise ValueError(f"scenario plugins write register annotations; these drivers have none: {unwritten}")
    sim = _Plugins(MemoryCluster(), {}, say)
    cluster, writes, plugins = sim.cluster, sim.writes, sim.plugins
    for node in scenario.nodes:
        annotations = {drivers[p.driver].register_annotation or "": p.register for p in node.plugins}
        writes.saw(cluster.create_node(node.name, labels=dict(node.labels), annotations=annotations))
        allocatable = {drivers[p.driver].count_resource: str(p.allocatable) for p in node.plugins}
        if allocatable:
            writes.saw(cluster.patch_node_status(node.name, allocatable))
        for p in node.plugins:
            plugins[(node.name, p.driver)] = _PluginState(node.name, drivers[p.driver], p.allocatable)
    config = SchedulerConfig(
        resync=scenario.resync,
        handshake_window=scenario.handshake_window,
        lease_namespace=DEFAULT_LEASE_NAMESPACE,
        identity="simulated-scheduler",
        lease_duration=3.0,
        renew_deadline=2.0,
        retry_period=0.5,
        http_port=None,
    )
    used = sorted({p.driver.name for p in plugins.values()}) or sorted(drivers)
    clock = FakeClock()
    scheduler = Scheduler(cluster, [drivers[name].rules() for name in used], config, clock=clock)
    observer = _Observer(scheduler, say)
    say(
        f"{len(scenario.nodes)} nodes, drivers {', '.join(used)}; handshake window "
        f"{scenario.handshake_window:g}s, resync {scenario.resync:g}s, {scenario.duration:g}s in all"
    )
    scheduler.start()
    actions = sorted(scenario.actions, key=lambda a: a.at)
    steps = round(scenario.duration / _TICK)
    report_every = max(1, round(scenario.report_interval / _TICK))
    try:
        for step in range(steps + 1):
            elapsed = round(step * _TICK, 6)
            # The scheduler has done with each write of the scenario (and with what the time step set off)
            # before the next one: else a plugin's write races the scheduler's, a conditional patch of
            # the scheduler's meets a newer Node, and the run's requests differ from run to run.
            while actions and actions[0].at <= elapsed + 1e-9:
                sim.apply(actions.pop(0), elapsed)
                wait_settled([scheduler], writes)
            if step and step % report_every == 0:
                sim.report(format_report(clock.now()))
            wait_settled([scheduler], writes)
            observer.observe(elapsed)
            if step < steps:
                clock.advance(_TICK)
                wait_settled([scheduler], writes)
    finally:
        scheduler.stop(5)
    # Counted before the checks, whose own reads are not the scheduler's or the plugins'.
    requests = {verb: cluster.request_count(verb, "nodes") for verb in ("get", "list", "watch", "patch")}
    violations = _check(scenario, scheduler, sim, observer)
    final = {
        node: {k: (e.state, e.reason, len(e.devices), e.error) for k, e in sorted(vendors.items())}
        for node, vendors in ((n, scheduler.cache.node(n)) for n in scheduler.cache.nodes())
    }
    return SimulationResult(
        timeline=tuple(observer.timeline), final=final, violations=tuple(violations), requests=requests
    )


class _Observer:
    def __init__(self, scheduler: Scheduler, say: Callable[[str], None]) -> None:
        self._scheduler = scheduler
        self._say = say
        self._last: dict[tuple[str, str], str] = {}
        self.timeline: list[tuple[float, str, str, str, str]] = []
        #: (node, vendor) -> times it entered "registered"
        self.registered_at: dict[tuple[str, str], list[float]] = {}
        self.left_at: dict[tuple[str, str], list[float]] = {}

    def observe(self, now: float) -> None:
        cache = self._scheduler.cache
        current: dict[tuple[str, str], str] = {}
        for node in cache.nodes():
            for vendor, entry in cache.node(node).items():
                current[(node, vendor)] = (
                    f"{entry.state} ({entry.reason})"
                    if entry.state != "registered"
                    else f"registered, {len(entry.devices)} devices"
                )
        for key in sorted(set(current) | set(self._last)):
            old, new = self._last.get(key, "absent"), current.get(key, "absent")
            if old == new:
                continue
            self.timeline.append((now, key[0], key[1], old, new))
            self._say(f"t={now:5.1f}s  {key[0]:<10} {key[1]:<7} {old} -> {new}")
            if new.startswith("registered") and not old.startswith("registered"):
                self.registered_at.setdefault(key, []).append(now)
            if new == "absent":
                self.left_at.setdefault(key, []).append(now)
        self._last = current


def _check(scenario: Scenario, scheduler: Scheduler, sim: _Plugins, observer: _Observer) -> Sequence[str]:
    problems: list[str] = []
    deleted = sim.deleted
    grace = scenario.handshake_window + scenario.resync + 1.5
    for (node, name), state in sim.plugins.items():
        key = (node, state.driver.vendor_key)
        registered = scheduler.cache.vendor(*key) is not None
        if node in deleted:
            if scheduler.cache.node(node):
                problems.append(f"{node}: deleted but still in the cache")
        elif state.revived_at is not None:  # a sign of life: the vendor must be back by the end
            if not registered and scenario.duration - state.revived_at > grace:
                problems.append(f"{node}/{name}: revived at t={state.revived_at:.1f}s but not registered")
        elif state.killed_at is None:
            if observer.left_at.get(key):
                problems.append(f"{node}/{name}: a live plugin was dropped at {observer.left_at[key]}")
        else:
            if registered and scenario.duration - state.killed_at > grace:
                problems.append(f"{node}/{name}: dead since t={state.killed_at:.1f}s but still registered")
            if later := [t for t in observer.registered_at.get(key, []) if t > state.killed_at + 0.5]:
                problems.append(f"{node}/{name}: re-registered at {later} without a sign of life (flapping)")
    for bare in scenario.nodes:
        if not bare.plugins and bare.name not in deleted:
            stamped = [k for k in sim.cluster.get_node(bare.name).annotations if "handshake" in k]
            if stamped:
                problems.append(f"{bare.name}: has no accelerator but was stamped ({', '.join(stamped)})")
    return problems
