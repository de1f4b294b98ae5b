"""Terms without a Lease: ``--leader-elect=false`` (one replica that always leads) and ``--read-only``
(one that never does, but runs one term of evaluation as a leader would, and writes nothing).

It has the elector's shape (``is_leader``, ``term``, ``holder``, ``run``, ``abandon``, ``idle``), so the
daemon runs the same way with or without election. Running two leading ones against one cluster means
two registrars writing at once: the operator's choice, for a one-node cluster or a test.
"""

from __future__ import annotations

from collections.abc import Callable

from hami_core.clock import ClockEvent

__all__ = ["Standalone"]


class Standalone:
    def __init__(self, *, on_started: Callable[[int], None], identity: str = "", leads: bool = True) -> None:
        self._on_started = on_started
        self._identity = identity
        self._leads = leads
        self._running = False

    @property
    def term(self) -> int:
        """1 while running: the one term this replica evaluates in."""
        return 1 if self._running else 0

    @property
    def holder(self) -> str | None:
        return self._identity if self._running and self._leads else None

    def is_leader(self) -> bool:
        return self._running and self._leads

    def idle(self) -> bool:
        return True

    def abandon(self) -> None:
        """Nothing to abandon: there is no Lease."""

    def run(self, stop: ClockEvent) -> None:
        """Run the one term from now until ``stop``."""
        self._running = True
        self._on_started(1)
        stop.wait()
        self._running = False
