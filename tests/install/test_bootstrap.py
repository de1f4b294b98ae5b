"""The first run of ``bash scripts/hami ...`` on a fresh machine: one line saying what it installs, one
saying it is done, none of pip's output unless something fails.

A copy of the project stands in for the fresh clone. Its "python3" makes virtualenvs that see the
project's third-party dependencies (and pip) through a ``.pth`` file, and pip runs with ``--no-index``:
the scripts do everything else exactly as on a new machine, offline.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from harness.apiserver import REPO_ROOT
from install.kit import IN_TREE, dependencies_only

FIRST = re.compile(
    r"hami-core: first run: installing hami-core, its drivers \(amd ascend awsneuron biren dcu enflame "
    r"iluvatar kunlun metax mlu mthreads nvidia vastai\) and the test tools into \.venv; this takes a minute "
    r"or two\n"
    r"hami-core: \.venv is ready \(\d+ s\)\n"
)
UPDATED = re.compile(
    r"hami-core: pyproject\.toml or the drivers changed: updating \.venv\n"
    r"hami-core: \.venv is ready \(\d+ s\)\n"
)


@pytest.fixture(scope="module")
def deps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return dependencies_only(tmp_path_factory.mktemp("deps") / "site")


@pytest.fixture
def clone(tmp_path: Path, deps: Path) -> Path:
    root = tmp_path / "hami-core"
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "tests")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO_ROOT / name, root / name)
    for name in ("hami_core", "vendors"):
        shutil.copytree(REPO_ROOT / name, root / name, ignore=skip)
    (root / "scripts").mkdir()
    for name in ("bootstrap.sh", "hami"):
        shutil.copy(REPO_ROOT / "scripts" / name, root / "scripts" / name)
    python = tmp_path / "python3"
    python.write_text(
        "#!/bin/sh\n"
        "# python3 on the fresh machine: its virtualenvs see the dependencies, and nothing of hami's\n"
        "set -e\n"
        f'if [ "$1 $2" != "-m venv" ]; then exec {sys.executable} "$@"; fi\n'
        f'{sys.executable} -m venv --without-pip "$3"\n'
        'site=$("$3/bin/python" -c \'import sysconfig; print(sysconfig.get_paths()["purelib"])\')\n'
        f'echo {deps} > "$site/dependencies.pth"\n'
    )
    python.chmod(0o755)
    return root


def hami(clone: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(clone.parent),
        "PYTHON": str(clone.parent / "python3"),
        "PIP_NO_INDEX": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "TMPDIR": str(clone.parent),
    }
    return subprocess.run(["bash", str(clone / "scripts" / "hami"), *args], capture_output=True, text=True,
                          timeout=600, env=env)  # fmt: skip


def test_the_first_run_says_what_it_installs_and_nothing_of_pip(clone: Path) -> None:
    first = hami(clone, "vendors", "--json")
    assert first.returncode == 0, first.stderr
    assert FIRST.fullmatch(first.stderr), first.stderr
    assert sorted(d["name"] for d in json.loads(first.stdout)) == IN_TREE
    again = hami(clone, "vendors", "--json")
    assert (again.returncode, again.stderr) == (0, "")
    logs = [p for p in clone.parent.iterdir() if p.name.startswith("hami-bootstrap.")]
    assert logs == [], "the log is removed"
    # A changed pyproject.toml updates .venv, in one line again.
    pyproject = clone / "vendors" / "dcu" / "pyproject.toml"
    pyproject.write_text(pyproject.read_text() + "\n# changed\n")
    updated = hami(clone, "vendors")
    assert updated.returncode == 0, updated.stderr
    assert UPDATED.fullmatch(updated.stderr), updated.stderr


def test_a_failure_shows_pips_output(clone: Path) -> None:
    pyproject = clone / "vendors" / "mlu" / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace(
        'dependencies = ["hami-core>=0.1,<0.2"]', 'dependencies = ["hami-core>=0.1,<0.2", "no-such-dist-xyz"]'
    ))  # fmt: skip
    failed = hami(clone, "vendors")
    assert failed.returncode == 1
    lines = failed.stderr.splitlines()
    assert lines[0].startswith("hami-core: first run: installing")
    assert lines[1].startswith(
        "bootstrap: error: `.venv/bin/python -m pip install --no-build-isolation -e .[test]"
    )
    assert "no-such-dist-xyz" in failed.stderr
    assert os.path.exists(clone / ".venv") and not (clone / ".venv" / ".hami-installed").exists()
