"""Leadership without a Lease, for ``--leader-elect=false``: one replica that always leads.

It has the elector's shape (``is_leader``, ``term``, ``holder``, ``run``, ``abandon``, ``idle``), so the
daemon runs the same way with or without election. Running two of these against one cluster means two
registrars writing at once: the operator's choice, for a one-node cluster or a test.
"""

from __future__ import annotations

from collections.abc import Callable

from hami_core.clock import ClockEvent

__all__ = ["Standalone"]


class Standalone:
    def __init__(self, *, on_started: Callable[[int], None], identity: str = "") -> None:
        self._on_started = on_started
        self._identity = identity
        self._leading = False

    @property
    def term(self) -> int:
        return 1 if self._leading else 0

    @property
    def holder(self) -> str | None:
        return self._identity if self._leading else None

    def is_leader(self) -> bool:
        return self._leading

    def idle(self) -> bool:
        return True

    def abandon(self) -> None:
        """Nothing to abandon: there is no Lease."""

    def run(self, stop: ClockEvent) -> None:
        """Lead from now until ``stop``."""
        self._leading = True
        self._on_started(1)
        stop.wait()
        self._leading = False
