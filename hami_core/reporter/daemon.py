"""The per-node reporter (spec section 7): every ``interval`` (``retry_interval`` after any failure) one
GET of its own Node, the drivers' devices, and at most one merge patch with what changed and the
heartbeats. Nothing raises out of :meth:`Reporter.run`."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence

import attrs

from hami_core.clock import SYSTEM, Clock
from hami_core.durations import seconds
from hami_core.kube.access import describe_error
from hami_core.kube.port import Cluster, ClusterError
from hami_core.plugins.driver import VendorDriver
from hami_core.protocol.errors import shorten
from hami_core.protocol.model import DeviceInfo
from hami_core.reporter.metrics import ReporterMetrics
from hami_core.reporter.plan import Discovery, PassPlan, plan_pass

__all__ = ["COMPONENT", "PassResult", "Reporter", "ReporterConfig"]

log = logging.getLogger(__name__)

#: The reporter's name towards the cluster: the field manager of every annotation it writes (so ``hami
#: cleanup`` knows them by the Node's managedFields) and its HTTP ``Server`` header. Not HAMi's.
COMPONENT = "hami-core-reporter"

#: ``(driver, node name) -> devices or None``: ``DriverManager.discover_devices``.
Discover = Callable[[VendorDriver, str], "list[DeviceInfo] | None"]

#: A pass running longer than this (probes, a GET and a PATCH, each bounded) means the loop is stuck:
#: ``alive()`` turns false so that the kubelet restarts the reporter.
STUCK_AFTER = 300.0


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

    @property
    def published(self) -> tuple[str, ...]:
        """Drivers whose register value is on the Node after this pass (empty: nothing published)."""
        if self.plan is None or (self.plan.patch and not self.sent):
            return ()
        return self.plan.current


class Reporter:
    """Publishes one node's devices for the given drivers."""

    def __init__(
        self,
        cluster: Cluster,
        drivers: Sequence[VendorDriver],
        discover: Discover,
        config: ReporterConfig,
        *,
        clock: Clock = SYSTEM,
    ) -> None:
        if not drivers:
            raise ValueError("the reporter needs at least one vendor driver")
        self._cluster = cluster
        self._drivers = tuple(drivers)
        self._by_name = {d.name: d for d in self._drivers}
        self._discover = discover
        self.config = config
        self._clock = clock
        self.metrics = ReporterMetrics(self._drivers)
        self._stop = clock.event()
        self._lock = threading.Lock()
        self._succeeded = False
        self._running = False
        self._pass_started: float | None = None

    def run(self) -> None:
        """Pass after pass until :meth:`request_stop`."""
        log.info(
            "reporter started: drivers %s, every %gs (%gs after a failure)",
            ", ".join(d.name for d in self._drivers),
            self.config.interval,
            self.config.retry_interval,
            extra={"node": self.config.node_name},
        )
        with self._lock:
            self._running = True
        try:
            while not self._stop.is_set():
                try:
                    ok = self.run_once().ok
                except Exception:  # a bug must not end the heartbeat
                    log.exception("unexpected error in a pass", extra={"node": self.config.node_name})
                    ok = False
                wait = self.config.interval if ok else self.config.retry_interval
                if not ok:
                    log.info("the pass failed; next pass in %gs", wait, extra={"node": self.config.node_name})
                self._stop.wait(wait)
        finally:
            with self._lock:
                self._running = False
        log.info("reporter stopped", extra={"node": self.config.node_name})

    def request_stop(self) -> None:
        """End :meth:`run` after the pass in progress (safe from a signal handler or another thread)."""
        self._stop.set()

    def alive(self) -> bool:
        """The loop runs and no pass has been going on for longer than ``STUCK_AFTER``."""
        with self._lock:
            running, started = self._running, self._pass_started
        return running and (started is None or self._clock.monotonic() - started < STUCK_AFTER)

    def ready(self) -> bool:
        """A pass has succeeded (a failed one later does not take it back: the heartbeat goes on)."""
        with self._lock:
            return self._succeeded

    def run_once(self) -> PassResult:
        """One pass: probe every driver, read the Node, send the patch. Never raises a ClusterError."""
        with self._lock:
            self._pass_started = self._clock.monotonic()
        try:
            result = self._pass()
        finally:
            with self._lock:
                self._pass_started = None
        if result.ok:
            self.metrics.last_success.set(self._clock.now().timestamp())
            with self._lock:
                self._succeeded = True
        else:
            self.metrics.failed_passes.inc()
        return result

    def _pass(self) -> PassResult:
        self.metrics.passes.inc()
        name = self.config.node_name
        found = [self._probe(driver) for driver in self._drivers]
        for discovery in found:
            self.metrics.device_source.labels(vendor=discovery.driver.vendor_key).set(
                0 if discovery.devices is None and discovery.error is None else 1
            )
        try:
            node = self._cluster.get_node(name)
        except ClusterError as exc:
            return self._failed(None, "read", exc)
        plan = plan_pass(node.annotations, found, self._clock.now())

        def about(driver: str, reason: str) -> dict[str, str]:
            return {"node": name, "vendor": self._by_name[driver].vendor_key, "reason": reason}

        for driver, why in plan.failures:
            log.warning("%s", why, extra=about(driver, "probe-failed"))
        for driver in plan.unsourced:
            log.warning(
                "no device source: the %s driver has no way to look for devices on this node; "
                "select only this node's drivers (--vendors)",
                driver,
                extra=about(driver, "no-device-source"),
            )
        if plan.patch:
            try:
                self._cluster.patch_node_annotations(name, plan.patch, field_manager=COMPONENT)
            except ClusterError as exc:
                return self._failed(plan, "patch", exc)
            self.metrics.patches.inc()
            for driver in plan.published:
                log.info("published the %s devices", driver, extra=about(driver, "published"))
        devices = {d.driver.name: len(d.devices) for d in found if d.devices is not None}
        for driver in (*plan.current, *plan.unsourced):  # an unsourced driver has none to publish
            vendor = self._by_name[driver].vendor_key
            self.metrics.published_devices.labels(vendor=vendor).set(devices.get(driver, 0))
        return PassResult(plan=plan, sent=bool(plan.patch), problems=plan.problems)

    def _probe(self, driver: VendorDriver) -> Discovery:
        try:
            return Discovery(driver=driver, devices=self._discover(driver, self.config.node_name))
        except Exception as exc:  # a probe failure is the driver's, and the pass goes on without it
            detail = shorten(" ".join(f"{type(exc).__name__}: {exc}".split()), 200)[1:-1]
            return Discovery(driver=driver, error=f"device probe failed: {detail}")

    def _failed(self, plan: PassPlan | None, verb: str, error: ClusterError) -> PassResult:
        detail = describe_error(error)
        log.warning(
            "cannot %s the Node: %s",
            verb,
            detail,
            extra={"node": self.config.node_name, "reason": f"{verb}-failed"},
        )
        problem = f"cannot {verb} node {self.config.node_name}: {detail}"
        problems = (*plan.problems, problem) if plan is not None else (problem,)
        return PassResult(plan=plan, sent=False, problems=problems)
