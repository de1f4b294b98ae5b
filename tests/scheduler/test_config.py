"""SchedulerConfig refuses values the daemon could not run with, naming the setting."""

from __future__ import annotations

from typing import Any

import pytest

from hami_core.scheduler.config import SchedulerConfig


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ({"handshake_window": float("inf")}, "handshake-window must be > 0 and at most 86400 seconds"),
        ({"resync": float("nan")}, "resync must be > 0"),
        ({"lease_duration": 0.0}, "lease-duration must be > 0"),
        ({"qps": float("inf")}, "qps must be a finite number > 0"),
        ({"lease_name": "Bad Name!"}, "lease-name 'Bad Name!' is not a valid object name"),
        ({"lease_namespace": "kube.system"}, "lease-namespace 'kube.system' is not a valid namespace name"),
    ],
)
def test_bad_settings_are_refused(setting: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SchedulerConfig(**setting)


def test_the_protocol_defaults_are_accepted() -> None:
    config = SchedulerConfig()
    assert (config.resync, config.handshake_window, config.lease_namespace) == (15.0, 60.0, "kube-system")
