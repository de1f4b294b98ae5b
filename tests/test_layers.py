"""The layers at run time and the import contracts that enforce them.

The contracts (``[tool.importlinter]`` in pyproject.toml, checked by ``lint-imports`` in
scripts/test.sh) must cover every driver package in the tree: one under vendors/ or examples/ that is
not listed would be checked by nothing. And since ``hami_core/__init__`` loads its public names lazily,
importing a lower layer loads nothing above it: no plugin manager, no pluggy, no Kubernetes client.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

import hami_core

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


def test_every_driver_package_is_independent_of_the_others() -> None:
    contracts = [c for c in _config()["contracts"] if c["type"] == "independence"]
    assert len(contracts) == 1
    assert set(contracts[0]["modules"]) == _driver_packages()


def _loaded_after(statement: str) -> list[str]:
    """The modules a fresh interpreter holds after ``statement``."""
    script = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    loaded: list[str] = json.loads(done.stdout)
    return loaded


@pytest.mark.parametrize(
    ("module", "may_load"),
    [
        ("hami_core.protocol.codecs", ("hami_core.protocol",)),
        ("hami_core.protocol.evaluate", ("hami_core.protocol",)),
        ("hami_core.driverkit", ("hami_core.protocol", "hami_core.driverkit")),
        ("hami_core.clock", ("hami_core.clock",)),
        ("hami_core.durations", ("hami_core.durations",)),
        ("hami_core.k8snames", ("hami_core.k8snames",)),
        ("hami_core.serve.http", ("hami_core.serve", "hami_core.clock")),
    ],
)
def test_importing_a_lower_layer_loads_nothing_above_it(module: str, may_load: tuple[str, ...]) -> None:
    loaded = _loaded_after(f"import {module}")
    assert module in loaded
    ours = [name for name in loaded if name.partition(".")[0] == "hami_core" and name != "hami_core"]
    assert [name for name in ours if not name.startswith(may_load)] == []
    assert [name for name in loaded if name.partition(".")[0] in ("pluggy", "kubernetes", "click")] == []


def test_the_public_names_load_on_first_use() -> None:
    loaded = _loaded_after("import hami_core")
    assert [name for name in loaded if name.startswith(("hami_core.", "pluggy"))] == []
    assert "pluggy" in _loaded_after("from hami_core import hookimpl")
    assert "pluggy" not in _loaded_after("from hami_core import capacity_count, fixed_fields")


def test_every_public_name_is_the_object_of_its_module() -> None:
    """``__all__`` is the one list of public names; each comes from the first module that exports it, and
    every module the names come from is one of ``_MODULES`` (no module listed for nothing)."""
    names = [name for name in hami_core.__all__ if name != "__version__"]
    homes = {name: hami_core.home_of(name) for name in names}
    for name, home in homes.items():
        assert getattr(hami_core, name) is getattr(importlib.import_module(home), name), name
    assert set(homes.values()) == set(hami_core._MODULES)
    assert len(set(hami_core.__all__)) == len(hami_core.__all__)
    assert set(hami_core.__all__) <= set(dir(hami_core))
    with pytest.raises(AttributeError, match="module 'hami_core' has no attribute 'no_such_name'"):
        hami_core.no_such_name  # noqa: B018
