"""Leader election over a ``coordination.k8s.io/v1`` Lease, client-go's algorithm (spec section 6): expiry
is measured on this process's monotonic clock; beyond HAMi, the identity matches exactly and a stopping
leader releases the Lease."""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import attrs

from hami_core.clock import SYSTEM, Clock, ClockEvent, wait_until
from hami_core.durations import span
from hami_core.kube.access import describe_error
from hami_core.kube.port import Cluster, ClusterError, Conflict, Lease, NotFound

__all__ = ["ElectionConfig", "LeaderElector"]

log = logging.getLogger(__name__)


@attrs.frozen(kw_only=True)
class ElectionConfig:
    """Where the Lease lives, who we are, and the timings (kube-scheduler's defaults)."""

    namespace: str
    name: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __attrs_post_init__(self) -> None:
        if not self.identity:
            raise ValueError("leader election identity must not be empty")
        if not 0 < self.retry_period < self.renew_deadline < self.lease_duration:
            raise ValueError(
                "leader election timings must satisfy 0 < retry period < renew deadline < lease duration "
                f"(got {self.retry_period}, {self.renew_deadline}, {self.lease_duration})"
            )


class LeaderElector:
    """The election loop; ``is_leader`` from any thread. ``on_started(term)`` (from 1) and ``on_stopped()``
    run on the elector's thread and must not block."""

    def __init__(
        self,
        cluster: Cluster,
        config: ElectionConfig,
        *,
        on_started: Callable[[int], None] = lambda term: None,
        on_stopped: Callable[[], None] = lambda: None,
        clock: Clock = SYSTEM,
    ) -> None:
        self._cluster = cluster
        self.config = config
        self._on_started = on_started
        self._on_stopped = on_stopped
        self._clock = clock
        self._monotonic = clock.monotonic
        #: When the loop steps next (monotonic); it is idle until then unless a step is running.
        self._next_step_at: float | None = None
        self._lock = threading.Lock()
        #: The wait between steps, on ``_lock``: ``idle`` never sees the step due before the wait began.
        self._between_steps = clock.condition(self._lock)
        self._observed: Lease | None = None
        self._observed_at = 0.0
        self._renewed_at: float | None = None
        self._term = 0
        self._leading = False
        self._release_on_stop = True
        #: The holder a standby last said holds the Lease (``None``: nothing said since it led or started).
        self._announced: str | None = None
        #: Why this replica stands aside (``hold``): it neither takes nor keeps the Lease meanwhile.
        self._held: str | None = None

    @property
    def term(self) -> int:
        """How many times this process has become leader; the current term while leading."""
        with self._lock:
            return self._term

    def is_leader(self) -> bool:
        """True only while we hold the Lease and renewed it within the renew deadline."""
        with self._lock:
            return self._leading_locked()

    def _leading_locked(self) -> bool:
        return (
            self._leading
            and self._held is None
            and self._renewed_at is not None
            and self._monotonic() - self._renewed_at < self.config.renew_deadline
        )

    @property
    def holder(self) -> str | None:
        """The holder of the Lease as last observed (``None`` when unknown or released)."""
        with self._lock:
            return self._observed.holder_identity if self._observed else None

    def idle(self) -> bool:
        """Waiting for its next step (not stepping, and the step not yet due)."""
        with self._lock:
            due = self._next_step_at
        return due is not None and self._monotonic() < due

    def run(self, stop: ClockEvent, after_first_step: Callable[[], object] = lambda: None) -> None:
        """Acquire, renew, and on ``stop`` release (``wake`` after setting it ends the wait between steps
        at once); ``after_first_step`` is called once, after the first try. Never raises; returns after
        releasing."""
        first = True
        try:
            while not stop.is_set():
                with self._lock:
                    self._next_step_at = None
                self.step()
                if first:
                    first = False
                    after_first_step()
                # When the step is due and the wait, from one reading of the clock under the lock ``idle``
                # takes (docs/architecture.md, "Time"): else a fake clock moved meanwhile would strand it.
                with self._lock:
                    due = self._next_step_at = self._monotonic() + self.config.retry_period
                    wait_until(self._between_steps, self._monotonic, due, stop.is_set)
        finally:
            if self._release_on_stop:
                self.release()
            else:
                with self._lock:
                    self._leading = False

    def wake(self) -> None:
        """End the wait between steps now: ``run`` looks at its ``stop`` again. Any thread."""
        with self._lock:
            self._between_steps.notify_all()

    def abandon(self) -> None:
        """Make ``run`` stop without releasing the Lease, as a crashed process would (for tests)."""
        self._release_on_stop = False

    def hold(self, reason: str | None) -> None:
        """Stand aside while ``reason`` is given (``None``: take part again): no leader from now, the Lease
        released at the next step and not taken until ``hold(None)``. Any thread."""
        with self._lock:
            changed = (self._held is None) != (reason is None)
            self._held = reason
        if changed:
            log.info(
                "leader election: %s",
                f"standing aside: {reason}" if reason is not None else "taking part again",
                extra={"reason": "hold" if reason is not None else "resume"},
            )

    def step(self) -> None:
        """One try to acquire or renew, then a check of the deadline. Exposed for tests."""
        with self._lock:
            held = self._held is not None
            observed = self._observed
        if held:
            if self._leading or (observed is not None and observed.holder_identity == self.config.identity):
                self._release_held()
            return
        # A renewal counts from when it was sent, not when the reply came: the server may have applied it
        # (and the others started their count) long before a slow reply arrives.
        attempted_at = self._monotonic()
        try:
            acquired = self._try_acquire_or_renew()
        except ClusterError as exc:
            log.warning("leader election: %s", describe_error(exc))
            acquired = False
        except Exception:  # a bug must not kill the election thread and leave a stale leader
            log.exception("leader election: unexpected error")
            acquired = False
        started = stopped = False
        with self._lock:
            if acquired:
                self._renewed_at = attempted_at
                if not self._leading:
                    self._leading = True
                    self._term += 1
                    started = True
            elif self._leading and not self._leading_locked():
                self._leading = False
                stopped = True
            term = self._term
        if started:
            self._announced = None
            log.info(
                "leader election: became leader of %s/%s as %r",
                self.config.namespace,
                self.config.name,
                self.config.identity,
                extra={"term": term},
            )
            self._on_started(term)
        if stopped:
            log.warning(
                "leader election: lost the lease %s/%s (no renewal within %s)",
                self.config.namespace,
                self.config.name,
                span(self.config.renew_deadline),
                extra={"term": term},
            )
            self._on_stopped()

    def _release_held(self) -> None:
        """While held: read the Lease again (what was observed may be stale) and release it if ours."""
        try:
            self._observe(self._cluster.get_lease(self.config.namespace, self.config.name))
        except NotFound:
            with self._lock:
                self._observed = None
        except ClusterError as exc:
            log.warning("leader election: %s", describe_error(exc))
        self.release()

    def release(self) -> None:
        """Give the Lease up (holder cleared) if we hold it, so a follower takes over at once."""
        with self._lock:
            was_leading = self._leading
            self._leading = False
            observed = self._observed
        if was_leading:
            self._on_stopped()
        if observed is None or observed.holder_identity != self.config.identity:
            return
        now = self._clock.now().astimezone(UTC)
        released = attrs.evolve(observed, holder_identity=None, lease_duration_seconds=1, renew_time=now)
        try:
            self._observe(self._cluster.update_lease(released))
            log.info("leader election: released %s/%s", self.config.namespace, self.config.name)
        except ClusterError as exc:
            log.warning("leader election: could not release the lease: %s", describe_error(exc))

    def _standing_by(self, lease: Lease, held_for: float) -> None:
        """Say who holds the Lease and until when, once per holder (elector thread only)."""
        holder = lease.holder_identity or ""
        if holder == self._announced:
            return
        self._announced = holder
        if lease.renew_time is not None:
            renewed = lease.renew_time.astimezone(UTC)
            until = renewed + timedelta(seconds=held_for)
            when = f"renewed {_clock_time(renewed)}, held until {_clock_time(until)} unless renewed"
        else:
            when = f"held for {span(held_for)} from when this replica saw it unless renewed"
        log.info(
            "leader election: standing by: %r holds the lease %s/%s (%s)",
            holder,
            self.config.namespace,
            self.config.name,
            when,
            extra={"reason": "standby"},
        )

    def _observe(self, lease: Lease) -> None:
        with self._lock:
            if self._observed is None or self._observed.resource_version != lease.resource_version:
                self._observed = lease
                self._observed_at = self._monotonic()

    def _try_acquire_or_renew(self) -> bool:
        cfg = self.config
        now = self._clock.now().astimezone(UTC)
        # Rounded up: followers wait what is recorded, which must not be shorter than our renew deadline.
        duration = math.ceil(cfg.lease_duration)  # at least 1: the config's timings are above 0
        try:
            current = self._cluster.get_lease(cfg.namespace, cfg.name)
        except NotFound:
            fresh = Lease(
                name=cfg.name,
                namespace=cfg.namespace,
                holder_identity=cfg.identity,
                lease_duration_seconds=duration,
                acquire_time=now,
                renew_time=now,
            )
            try:
                created = self._cluster.create_lease(fresh)
            except Conflict:
                return False  # another replica created it first
            self._observe(created)
            return True
        self._observe(current)
        ours = current.holder_identity == cfg.identity
        if not ours and current.holder_identity:
            # The holder's own recorded duration: its renew deadline is shorter than that, not ours.
            held_for = current.lease_duration_seconds or cfg.lease_duration
            with self._lock:
                expired = self._monotonic() - self._observed_at >= held_for
            if not expired:
                self._standing_by(current, held_for)
                return False
        update = attrs.evolve(
            current,
            holder_identity=cfg.identity,
            lease_duration_seconds=duration,
            renew_time=now,
            acquire_time=current.acquire_time if ours else now,
            lease_transitions=current.lease_transitions + (0 if ours else 1),
        )
        try:
            updated = self._cluster.update_lease(update)
        except Conflict:
            return False
        self._observe(updated)
        return True


def _clock_time(moment: datetime) -> str:
    """``2026-01-01T00:00:15Z``, with milliseconds when there are any."""
    text = moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return text.replace(".000Z", "Z")
