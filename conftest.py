"""Root conftest: pytest plugins shared by the core's, the drivers' and the examples' tests."""

from __future__ import annotations

import os

import pytest

pytest_plugins: list[str] = ["harness.fixtures", "harness.oracle"]


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """In CI a skipped test is a failure: every tier (the real API server, the Go oracle) must run."""
    if os.environ.get("CI", "").lower() != "true":
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = len(reporter.stats.get("skipped", [])) if reporter is not None else 0
    if skipped and exitstatus == 0:
        reporter.write_line(f"error: {skipped} test(s) skipped in CI; every tier must run", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
