"""The per-node reporter (spec section 7): every pass it asks each driver for the node's devices, reads
its own Node, and sends one merge patch with what changed and the heartbeats.

A pass is one GET of its own Node (to compare with what is there *now*) and at most one PATCH. Passes
run every ``interval`` seconds, ``retry_interval`` after a pass with any failure (API server
unreachable, Node not there yet, a probe that raised). Nothing raises out of :meth:`Reporter.run`.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import datetime

import attrs

from hami_core.durations import seconds
from hami_core.kube.port import Cluster, ClusterError
from hami_core.plugins.driver import VendorDriver
from hami_core.protocol.errors import shorten
from hami_core.protocol.model import DeviceInfo
from hami_core.reporter.plan import Discovery, PassPlan, plan_pass

__all__ = ["PassResult", "Reporter", "ReporterConfig"]

log = logging.getLogger(__name__)

#: ``(driver, node name) -> devices or None``: the drivers' discovery hook, as
#: ``DriverManager.discover_devices`` calls it.
Discover = Callable[[VendorDriver, str], "list[DeviceInfo] | None"]


def _local_now() -> datetime:
    return datetime.now().astimezone()


def _node_name(instance: object, attribute: attrs.Attribute[str], value: str) -> None:
    if not value:
        raise ValueError("the reporter needs its node's name (--node-name)")


@attrs.frozen(kw_only=True)
class ReporterConfig:
    #: The Node this reporter runs on and publishes to.
    node_name: str = attrs.field(validator=_node_name)
    #: Seconds between passes (HAMi's plugins: 30).
    interval: float = attrs.field(default=30.0, validator=seconds)
    #: Seconds to the next pass after one with a failure (HAMi's plugins: 5).
    retry_interval: float = attrs.field(default=5.0, validator=seconds)


@attrs.frozen(kw_only=True)
class PassResult:
    """How one pass went."""

    plan: PassPlan | None
    #: Whether the patch (if any) was sent.
    sent: bool
    #: Every failure of the pass, one line each (empty: a clean pass).
    problems: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.problems


class Reporter:
    """Publishes one node's devices for the given drivers."""

    def __init__(
        self,
        cluster: Cluster,
        drivers: Sequence[VendorDriver],
        discover: Discover,
        config: ReporterConfig,
        *,
        clock: Callable[[], datetime] = _local_now,
    ) -> None:
        if not drivers:
            raise ValueError("the reporter needs at least one vendor driver")
        self._cluster = cluster
        self._drivers = tuple(drivers)
        self._discover = discover
        self.config = config
        self._clock = clock
        self.counters: Counter[str] = Counter()

    def run(self, stop: threading.Event) -> None:
        """Pass after pass until ``stop`` is set."""
        log.info("reporter for node %s: drivers %s, every %gs (%gs after a failure)", self.config.node_name,
                 ", ".join(d.name for d in self._drivers), self.config.interval, self.config.retry_interval)
        while not stop.is_set():
            try:
                ok = self.run_once().ok
            except Exception:  # a bug must not end the heartbeat
                log.exception("reporter: unexpected error in a pass")
                ok = False
            stop.wait(self.config.interval if ok else self.config.retry_interval)

    def run_once(self) -> PassResult:
        """One pass: probe every driver, read the Node, send the patch. Never raises a ClusterError."""
        self.counters["passes"] += 1
        name = self.config.node_name
        found = [self._probe(driver) for driver in self._drivers]
        try:
            node = self._cluster.get_node(name)
        except ClusterError as exc:
            return self._failed(None, f"cannot read node {name}: {exc}")
        plan = plan_pass(node.annotations, found, self._clock())
        for problem in plan.problems:
            log.warning("node %s: %s", name, problem)
        if not plan.patch:
            return self._done(plan, sent=False)
        try:
            self._cluster.patch_node_annotations(name, plan.patch)
        except ClusterError as exc:
            return self._failed(plan, f"cannot patch node {name}: {exc}")
        self.counters["patches"] += 1
        for driver in plan.published:
            log.info("node %s: published the %s devices", name, driver)
        return self._done(plan, sent=True)

    def _probe(self, driver: VendorDriver) -> Discovery:
        try:
            return Discovery(driver=driver, devices=self._discover(driver, self.config.node_name))
        except Exception as exc:  # a probe failure is the driver's, and the pass goes on without it
            detail = shorten(" ".join(f"{type(exc).__name__}: {exc}".split()), 200)[1:-1]
            return Discovery(driver=driver, error=f"device probe failed: {detail}")

    def _failed(self, plan: PassPlan | None, problem: str) -> PassResult:
        log.warning("reporter: %s; next pass in %gs", problem, self.config.retry_interval)
        self.counters["failed_passes"] += 1
        problems = (*plan.problems, problem) if plan is not None else (problem,)
        return PassResult(plan=plan, sent=False, problems=problems)

    def _done(self, plan: PassPlan, *, sent: bool) -> PassResult:
        if plan.problems:
            self.counters["failed_passes"] += 1
        return PassResult(plan=plan, sent=sent, problems=plan.problems)
