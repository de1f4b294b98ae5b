"""Fixtures for the driver framework's tests: real distributions made on the fly."""

from __future__ import annotations

import itertools
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from plugins.driverkit import FakeDist

_serial = itertools.count()


@pytest.fixture
def fake_dist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeDist]:
    """Create a real distribution on ``sys.path``: a dist-info with an ``entry_points.txt`` in the given
    group, pointing at a module with the given source. Returns the module name. Removed after the test."""
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    modules: list[str] = []

    def make(
        package: str,
        source: str,
        *,
        entry_name: str | None = None,
        group: str = "hami.vendors",
        version: str = "1.2.3",
    ) -> str:
        module = f"fake_driver_{next(_serial)}"
        (site / f"{module}.py").write_text(textwrap.dedent(source))
        dist_info = site / f"{package.replace('-', '_')}-{version}.dist-info"
        dist_info.mkdir()
        (dist_info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n")
        (dist_info / "entry_points.txt").write_text(f"[{group}]\n{entry_name or package} = {module}\n")
        modules.append(module)
        return module

    yield make
    for module in modules:
        sys.modules.pop(module, None)
