"""Makes the example driver importable for its tests without touching the shared virtualenv.

For the test module the package is built from a copy of its source and installed with pip into a
temporary directory (``pip install --target``), which is put first on ``sys.path``: the core then finds
it through its real entry point, from the installed metadata. It is taken off the path again after the
module, so the rest of the suite never sees a driver that is not installed. When the package is already
installed (a driver author's own environment), this changes nothing that matters: the first copy on the
path wins.
"""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module", autouse=True)
def example_installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("acme")
    source = root / "source"
    shutil.copytree(PROJECT, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    target = root / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--target",
            str(target),
            str(source),
        ],
        check=True,
    )
    sys.path.insert(0, str(target))
    importlib.invalidate_caches()
    yield target
    sys.path.remove(str(target))
    for name in [m for m in sys.modules if m.partition(".")[0] == "hami_vendor_acme"]:
        del sys.modules[name]
    importlib.invalidate_caches()
