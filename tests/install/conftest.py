"""Fixtures of the install tests: helm, kubectl and promtool as scripts/build-tools.sh builds them."""

from __future__ import annotations

from pathlib import Path

import pytest
from install.kit import tool_or_fail


@pytest.fixture(scope="session")
def helm() -> Path:
    return tool_or_fail("helm")


@pytest.fixture(scope="session")
def kubectl() -> Path:
    return tool_or_fail("kubectl")


@pytest.fixture(scope="session")
def promtool() -> Path:
    return tool_or_fail("promtool")
