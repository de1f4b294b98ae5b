"""Terms without a Lease, in the elector's shape: ``--leader-elect=false`` (always leads) and
``--read-only`` (never leads, evaluates one term as a leader would, writes nothing).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from hami_core.clock import ClockEvent

log = logging.getLogger(__name__)

__all__ = ["Standalone"]


class Standalone:
    def __init__(self, *, on_started: Callable[[int], None], identity: str = "", leads: bool = True) -> None:
        self._on_started = on_started
        self._identity = identity
        self._leads = leads
        self._running = False
        self._term = 1
        self._held = False
        self._lock = threading.Lock()

    @property
    def term(self) -> int:
        """While running: the term this replica evaluates in (1, then one more after each ``hold``)."""
        with self._lock:
            return self._term if self._running else 0

    @property
    def holder(self) -> str | None:
        return self._identity if self.is_leader() else None

    def is_leader(self) -> bool:
        with self._lock:
            return self._running and self._leads and not self._held

    def hold(self, reason: str | None) -> None:
        """Stop leading while ``reason`` is given; ``None`` leads again, in a new term (its full pass)."""
        with self._lock:
            was, self._held = self._held, reason is not None
            resumed = was and not self._held and self._running
            if resumed:
                self._term += 1
            term = self._term
        if was != (reason is not None):
            log.info("%s", f"standing aside: {reason}" if reason is not None else "leading again")
        if resumed:
            self._on_started(term)

    def idle(self) -> bool:
        return True

    def abandon(self) -> None:
        """Nothing to abandon: there is no Lease."""

    def wake(self) -> None:
        """Nothing to wake: ``run`` waits on its ``stop`` itself."""

    def run(self, stop: ClockEvent, after_first_step: Callable[[], object] = lambda: None) -> None:
        """Run the one term from now until ``stop``."""
        with self._lock:
            self._running = True
            term = self._term
        self._on_started(term)
        after_first_step()
        stop.wait()
        self._running = False
