"""The import contracts (``[tool.importlinter]`` in pyproject.toml, checked by ``lint-imports`` in
scripts/test.sh) cover every driver package in the tree: a new one under vendors/ or examples/ that is
not listed would be checked by nothing."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _config() -> dict[str, Any]:
    with (ROOT / "pyproject.toml").open("rb") as file:
        config: dict[str, Any] = tomllib.load(file)["tool"]["importlinter"]
    return config


def _driver_packages() -> set[str]:
    found = {
        init.parent.name
        for tree in ("vendors", "examples")
        for init in (ROOT / tree).glob("*/src/*/__init__.py")
    }
    assert found, "no driver package found under vendors/ or examples/"
    return found


def test_every_driver_package_is_analysed() -> None:
    assert set(_config()["root_packages"]) == {"hami_core"} | _driver_packages()


def test_every_driver_package_is_held_to_the_public_names() -> None:
    contracts = [c for c in _config()["contracts"] if c.get("forbidden_modules") == ["hami_core.*"]]
    assert len(contracts) == 1
    assert set(contracts[0]["source_modules"]) == _driver_packages()
