"""What the elector tells an operator, on a fake clock: a standby says once who holds the Lease and until
when, and again when the holder changes; leadership records carry the term; a refusal says which
permission is missing."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import pytest

from hami_core.clock import FakeClock
from hami_core.kube.elector import ElectionConfig, LeaderElector
from hami_core.kube.memory import MemoryCluster
from hami_core.kube.port import Forbidden, Lease

START = datetime(2026, 1, 1, tzinfo=UTC)


def elector(cluster: object, clock: FakeClock, identity: str) -> LeaderElector:
    config = ElectionConfig(namespace="kube-system", name="hami-scheduler", identity=identity)
    return LeaderElector(cluster, config, clock=clock)  # type: ignore[arg-type]


def standby_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "standing by" in r.getMessage()]


def test_a_standby_says_once_who_holds_the_lease_and_again_when_that_changes(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="hami_core.kube.elector")
    cluster, clock = MemoryCluster(), FakeClock(START)
    a, b = elector(cluster, clock, "a"), elector(cluster, clock, "b")
    a.step()
    for _ in range(5):  # a renews every 2 s; b looks each time and says it once
        clock.advance(2)
        a.step()
        b.step()
    assert standby_lines(caplog) == [
        "leader election: standing by: 'a' holds the lease kube-system/hami-scheduler "
        "(renewed 2026-01-01T00:00:02Z, held until 2026-01-01T00:00:17Z unless renewed)"
    ]
    (said,) = [r for r in caplog.records if "standing by" in r.getMessage()]
    assert said.reason == "standby"  # type: ignore[attr-defined]

    # a stops renewing: b takes over once the recorded 15 s have passed, and says so with its term.
    caplog.clear()
    for _ in range(9):
        clock.advance(2)
        b.step()
    assert b.is_leader()
    (became,) = [r for r in caplog.records if "became leader" in r.getMessage()]
    assert became.getMessage() == "leader election: became leader of kube-system/hami-scheduler as 'b'"
    assert became.term == 1  # type: ignore[attr-defined]
    # a comes back, finds b holding the Lease: a new holder, said once.
    a.step()
    clock.advance(2)
    b.step()
    a.step()
    lines = standby_lines(caplog)
    assert len(lines) == 1 and lines[0].startswith("leader election: standing by: 'b' holds the lease ")
    # a's own lost lease is a warning with the term it had.
    (lost,) = [r for r in caplog.records if "lost the lease" in r.getMessage()]
    assert lost.levelno == logging.WARNING and lost.term == 1  # type: ignore[attr-defined]
    assert lost.getMessage() == (
        "leader election: lost the lease kube-system/hami-scheduler (no renewal within 10 s)"
    )


class Refusing:
    """A cluster whose Lease requests the API server refuses, as RBAC does."""

    def get_lease(self, namespace: str, name: str) -> Lease:
        raise Forbidden(
            f'get lease {namespace}/{name}: 403 leases.coordination.k8s.io "{name}" is '
            f'forbidden: User "hami" cannot get resource "leases" in API group '
            f'"coordination.k8s.io" in the namespace "{namespace}"',
            status=403,
        )


def test_a_refused_lease_request_names_the_missing_permission(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="hami_core.kube.elector")
    a = elector(Refusing(), FakeClock(START), "a")
    a.step()
    assert not a.is_leader()
    (record,) = caplog.records
    assert record.getMessage().endswith(
        "missing RBAC permission: user 'hami' may not get leases (API group coordination.k8s.io) in "
        "namespace kube-system; the chart's RBAC grants each daemon what it needs (charts/hami-core)"
    )
