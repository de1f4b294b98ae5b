"""Durations as Kubernetes writes them (Go's time.ParseDuration) or plain seconds, and the timing range."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import click
import pytest
from hypothesis import given
from hypothesis import strategies as st

from hami_core.cli.options import DURATION
from hami_core.durations import MAX_SECONDS, check_seconds, format_duration, parse_duration

HAMI = str(Path(sys.executable).with_name("hami"))

# Go's own examples and edge cases of time.ParseDuration, with the seconds Go gives them.
GO_FORMS = [
    ("15s", 15.0),
    ("1m30s", 90.0),
    ("500ms", 0.5),
    ("1h", 3600.0),
    ("1.5s", 1.5),
    ("1.5h", 5400.0),
    ("2h45m", 9900.0),
    ("300ms", 0.3),
    ("-1.5h", -5400.0),
    ("+5s", 5.0),
    (".5s", 0.5),
    ("5.s", 5.0),
    ("1h15m30.918273645s", 4530.918273645),
    ("100ns", 1e-7),
    ("10us", 1e-5),
    ("10\u00b5s", 1e-5),
    ("10\u03bcs", 1e-5),
    ("1m0.5s", 60.5),
    ("0s", 0.0),
    ("1s1s", 2.0),
]
PLAIN = [("15", 15.0), ("0.5", 0.5), ("1e3", 1000.0), (" 30 ", 30.0), ("0", 0.0), ("-1", -1.0), (".25", 0.25)]


@pytest.mark.parametrize(("text", "seconds"), GO_FORMS + PLAIN)
def test_go_forms_and_plain_seconds_parse(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "'' is not a duration (like 15s, 1m30s, 500ms or plain seconds)"),
        ("-", "'-' is not a duration"),
        ("s", "'s' is not a duration"),
        (".s", "'.s' is not a duration"),
        ("1h30", "'1h30' is not a duration"),
        ("1.5.5s", "'1.5.5s' is not a duration"),
        ("1d", "'1d': unknown unit 'd' (units: ns, us, ms, s, m, h)"),
        ("15 s", "'15 s' is not a duration"),
        ("inf", "'inf' is not a duration"),
        ("nan", "'nan' is not a duration"),
        ("1_000", "'1_000'"),
        ("15sec", "unknown unit 'sec'"),
        ("x" * 100, "'xxxxxxxxxxxxxxxxxx...xxxxxxxxxxxxxxxxxx'"),
    ],
)
def test_anything_else_is_one_line_naming_the_value(text: str, message: str) -> None:
    with pytest.raises(ValueError) as raised:
        parse_duration(text)
    assert message in str(raised.value) and "\n" not in str(raised.value)


@given(st.integers(min_value=1, max_value=int(MAX_SECONDS * 1000)))
def test_format_duration_reads_back(milliseconds: int) -> None:
    seconds = milliseconds / 1000
    assert parse_duration(format_duration(seconds)) == pytest.approx(seconds, abs=1e-9)


def test_format_duration_is_go_short_form() -> None:
    assert [format_duration(s) for s in (15, 90, 0.5, 3600, 5400.5, 86400)] == [
        "15s",
        "1m30s",
        "500ms",
        "1h",
        "1h30m0.5s",
        "24h",
    ]


@pytest.mark.parametrize("value", [0.0, -1.0, MAX_SECONDS + 1, float("inf"), float("nan")])
def test_a_timing_must_be_more_than_0_and_at_most_a_day(value: float) -> None:
    with pytest.raises(ValueError, match=r"^resync must be > 0 and at most 86400 seconds \(24h\)"):
        check_seconds("resync", value)
    check_seconds("resync", MAX_SECONDS)


@pytest.mark.parametrize(
    ("given_", "seconds"),
    [
        ("15s", 15.0),
        ("1m30s", 90.0),
        ("90", 90.0),
        ("24h", MAX_SECONDS),
        (2.5, 2.5),
    ],
)
def test_the_option_type_gives_seconds(given_: object, seconds: float) -> None:
    assert DURATION.convert(given_, None, None) == seconds


@pytest.mark.parametrize(
    ("given_", "message"),
    [
        ("0", "'0' is not more than 0 and at most 24h (86400 seconds)"),
        ("-1s", "'-1s' is not more than 0"),
        ("25h", "'25h' is not more than 0"),
        ("1d", "unknown unit 'd'"),
        (True, "True is not a duration"),
    ],
)
def test_the_option_type_refuses_with_one_line(given_: object, message: str) -> None:
    with pytest.raises(click.BadParameter) as raised:
        DURATION.convert(given_, None, None)
    assert message in raised.value.message


def _run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([HAMI, *args], capture_output=True, text=True, timeout=60, env=env)


def test_every_duration_flag_of_the_daemons_takes_go_forms() -> None:
    # Refused for a reason after the flags were read (the order of the lease timings), so every duration
    # flag above was accepted, in Go's form, in plain seconds and under kube-scheduler's names.
    result = _run(
        "scheduler",
        "run",
        "--resync",
        "15s",
        "--handshake-window",
        "1m30s",
        "--leader-elect-lease-duration",
        "10s",
        "--leader-elect-renew-deadline",
        "15000ms",
        "--leader-elect-retry-period",
        "2",
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: hami scheduler run: need --retry-period < --renew-deadline < --lease-duration"
    ]
    for flag in ("--resync", "--handshake-window", "--lease-duration", "--renew-deadline", "--retry-period"):
        for bad in ("0", "-", "15x", "-5s"):
            result = _run("scheduler", "run", flag, bad)
            assert result.returncode == 2, (flag, bad, result.stderr)
            lines = result.stderr.strip().splitlines()
            assert len(lines) == 1 and lines[0].startswith(
                f"error: hami scheduler run: Invalid value for '{flag}"
            ), (flag, bad, lines)
    for flag in ("--interval", "--retry-interval"):
        result = _run("reporter", "run", "--node-name", "n", flag, "1d")
        assert result.returncode == 2 and "unknown unit 'd'" in result.stderr
