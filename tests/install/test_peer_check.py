"""Beside HAMi: hami-core's defaults are not HAMi's, and the scheduler says when HAMi's seems active."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from hami_core.kube.memory import MemoryCluster
from hami_core.kube.port import Lease, Unavailable
from hami_core.scheduler.config import DEFAULT_HTTP_PORT, DEFAULT_LEASE_NAME, SchedulerConfig
from hami_core.scheduler.peer_check import (
    HAMI_LEASE,
    PeerCheck,
    lease_in_use,
    parse_lease_ref,
)

NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
HAMI = [str(Path(sys.executable).with_name("hami"))]


def hami_lease(**changes: Any) -> Lease:
    fields: dict[str, Any] = {
        "name": "hami-scheduler",
        "namespace": "kube-system",
        "holder_identity": "hami-scheduler-7d9f_0b5e",
        "lease_duration_seconds": 15,
        "renew_time": NOW - timedelta(seconds=4),
    }
    return Lease(**{**fields, **changes})


def test_defaults_do_not_collide_with_hami() -> None:
    config = SchedulerConfig()
    assert (config.lease_name, config.http_port) == (DEFAULT_LEASE_NAME, DEFAULT_HTTP_PORT)
    assert DEFAULT_LEASE_NAME != "hami-scheduler"
    assert DEFAULT_HTTP_PORT != 9395
    assert HAMI_LEASE == ("kube-system", "hami-scheduler")


@pytest.mark.parametrize(
    ("lease", "active"),
    [
        (hami_lease(), True),
        (hami_lease(renew_time=NOW - timedelta(seconds=15)), True),  # exactly its duration: still fresh
        (hami_lease(renew_time=NOW - timedelta(seconds=15, microseconds=1)), False),
        (hami_lease(renew_time=NOW + timedelta(seconds=30)), True),  # the other host's clock is ahead
        (hami_lease(holder_identity=None), False),  # released
        (hami_lease(holder_identity=""), False),
        (hami_lease(lease_duration_seconds=None), False),
        (hami_lease(lease_duration_seconds=0), False),
        (hami_lease(renew_time=None), False),
        (hami_lease(renew_time=None, acquire_time=NOW - timedelta(seconds=1)), True),
        (None, False),
    ],
)
def test_a_lease_is_in_use_when_held_and_renewed_within_its_duration(
    lease: Lease | None, active: bool
) -> None:
    reason = lease_in_use(lease, NOW)
    assert (reason is not None) == active
    if lease is not None and active:
        assert "kube-system/hami-scheduler" in str(reason) and str(lease.holder_identity) in str(reason)


def test_reason_says_how_long_ago_it_was_renewed() -> None:
    assert lease_in_use(hami_lease(), NOW) == (
        "Lease kube-system/hami-scheduler is held by 'hami-scheduler-7d9f_0b5e' and was renewed 4 s ago "
        "(duration 15 s)"
    )


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("kube-system/hami-scheduler", ("kube-system", "hami-scheduler")),
        ("hami/hami-scheduler.v2", ("hami", "hami-scheduler.v2")),
        ("off", None),
        ("", None),
    ],
)
def test_lease_references_parse(text: str, parsed: tuple[str, str] | None) -> None:
    assert parse_lease_ref(text) == parsed


@pytest.mark.parametrize(
    ("text", "complaint"),
    [
        ("kube-system", "is not NAMESPACE/NAME or 'off'"),
        ("Kube_System/hami-scheduler", "'Kube_System' is not a valid namespace name"),
        ("kube-system/Hami Scheduler", "'Hami Scheduler' is not a valid Lease name"),
        ("kube-system/a/b", "'a/b' is not a valid Lease name"),
    ],
)
def test_bad_lease_references_are_one_line_errors(text: str, complaint: str) -> None:
    with pytest.raises(ValueError, match=complaint) as info:
        parse_lease_ref(text)
    assert "\n" not in str(info.value)


class Refusing(MemoryCluster):
    def get_lease(self, namespace: str, name: str) -> Lease:
        raise Unavailable("get lease: connection refused")


def test_a_start_and_an_end_are_logged_once_each(caplog: pytest.LogCaptureFixture) -> None:
    cluster = MemoryCluster()
    check = PeerCheck(cluster, HAMI_LEASE, ("hami-core", DEFAULT_LEASE_NAME))
    with caplog.at_level(logging.INFO, logger="hami_core.scheduler.peer_check"):
        assert check.check(NOW).active is False  # no such Lease
        cluster.create_lease(hami_lease())
        first = check.check(NOW)
        assert (first.active, first.started) == (True, True)
        again = check.check(NOW + timedelta(seconds=5))
        assert (again.active, again.started) == (True, False)
        assert check.check(NOW + timedelta(minutes=1)).active is False  # expired
    messages = [(r.levelno, r.getMessage()) for r in caplog.records]
    assert messages == [
        (logging.WARNING, f"HAMi's scheduler seems active in this cluster: {first.reason}. It writes "
                          "the same node annotations: never run two registrars at once; stop one of them "
                          "(see docs/operations.md)"),
        (logging.INFO, "HAMi's scheduler no longer seems active: Lease kube-system/hami-scheduler is "
                       "released or expired"),
    ]  # fmt: skip
    assert PeerCheck(cluster, None, ("a", "b")).check(NOW).active is False  # the check is off


def test_an_unreadable_lease_is_noted_once_never_fatal(caplog: pytest.LogCaptureFixture) -> None:
    check = PeerCheck(Refusing(), HAMI_LEASE, ("a", "b"))
    with caplog.at_level(logging.INFO, logger="hami_core.scheduler.peer_check"):
        assert check.check(NOW).active is False
        assert check.check(NOW).active is False
    assert [r.levelno for r in caplog.records] == [logging.INFO]
    assert "could not check whether HAMi's scheduler is active" in caplog.records[0].getMessage()


def test_using_hamis_own_lease_is_called_out(caplog: pytest.LogCaptureFixture) -> None:
    cluster = MemoryCluster()
    cluster.create_lease(hami_lease())
    check = PeerCheck(cluster, HAMI_LEASE, HAMI_LEASE)
    with caplog.at_level(logging.INFO, logger="hami_core.scheduler.peer_check"):
        assert check.check(NOW).active is False
        assert check.check(NOW).active is False
    (record,) = caplog.records
    assert record.levelno == logging.WARNING
    assert "is the one HAMi's scheduler uses" in record.getMessage()
    assert cluster.request_count("get", "leases") == 0


@pytest.mark.parametrize("value", ["kube-system", "a/B_C", "/x"])
def test_a_bad_check_hami_lease_flag_is_exit_2(value: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [*HAMI, "scheduler", "run", "--kubeconfig", str(tmp_path / "none"), "--check-hami-lease", value],
        capture_output=True, text=True, timeout=60, env={**os.environ, "HAMI_VENDORS": "nvidia"},
    )  # fmt: skip
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith("error: hami scheduler run: Invalid value for '--check-hami-lease'")
