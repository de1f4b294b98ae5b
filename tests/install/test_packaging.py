"""Packaging hygiene of every distribution the project ships: the core, the in-tree drivers, the example.

Each is built into a wheel the way pip builds it (from a copy of its source, offline, with the build
backend of this environment), and the wheel is read back.
"""

from __future__ import annotations

import ast
import email
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from harness.apiserver import REPO_ROOT

import hami_core

PROJECTS = sorted(
    [REPO_ROOT, *REPO_ROOT.glob("vendors/*/"), REPO_ROOT / "examples" / "hami-vendor-acme"],
    key=lambda p: p.as_posix(),
)
LICENSE = (REPO_ROOT / "LICENSE").read_text()


def ids(path: Path) -> str:
    return path.relative_to(REPO_ROOT).as_posix() or "core"


def pyproject(project: Path) -> dict[str, object]:
    return tomllib.loads((project / "pyproject.toml").read_text())


def version_attr(project: Path) -> tuple[str, Path]:
    """The module attribute the project's version comes from, and the file that defines it."""
    data = pyproject(project)
    attr = data["tool"]["setuptools"]["dynamic"]["version"]["attr"]  # type: ignore[index]
    module = attr.rsplit(".", 1)[0]
    where = project / "src" if (project / "src").is_dir() else project
    return attr, where / module.replace(".", "/") / "__init__.py"


@pytest.fixture(scope="module", params=PROJECTS, ids=ids)
def built(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str]:
    """(project, wheel, pip's verbose build output)."""
    project: Path = request.param
    root = tmp_path_factory.mktemp("wheel")
    source = root / "source"
    if project == REPO_ROOT:
        source.mkdir()
        for name in ("pyproject.toml", "README.md", "LICENSE"):
            shutil.copy(project / name, source / name)
        shutil.copytree(
            project / "hami_core", source / "hami_core", ignore=shutil.ignore_patterns("__pycache__")
        )
    else:
        shutil.copytree(project, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--verbose", "--no-deps", "--no-build-isolation", "--no-index",
         "--wheel-dir", str(root / "dist"), str(source)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    (wheel,) = (root / "dist").glob("*.whl")
    return project, wheel, done.stdout + done.stderr


def test_every_project_has_the_same_license_file() -> None:
    assert LICENSE.split()[:5] == ["Apache", "License", "Version", "2.0,", "January"]
    for project in PROJECTS:
        assert (project / "LICENSE").read_text() == LICENSE, project


def test_the_wheel_ships_the_license_and_spdx_metadata(built: tuple[Path, Path, str]) -> None:
    project, wheel, _ = built
    with zipfile.ZipFile(wheel) as archive:
        (license_file,) = [n for n in archive.namelist() if n.endswith(".dist-info/licenses/LICENSE")]
        assert archive.read(license_file).decode() == LICENSE
        (meta_file,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        meta = email.message_from_bytes(archive.read(meta_file))
    assert meta["License-Expression"] == "Apache-2.0"
    assert meta.get_all("License-File") == ["LICENSE"]
    assert not [c for c in meta.get_all("Classifier") or [] if c.startswith("License ::")]
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL") or [])
    assert {"Homepage", "Source", "Issues"} <= set(urls)
    attr, init = version_attr(project)
    assert meta["Version"] == _literal_version(init), f"{meta['Version']} is not {attr}"


def test_every_wheel_is_pure_python(built: tuple[Path, Path, str]) -> None:
    """No compiled code in any project: one wheel serves every platform."""
    _, wheel, _ = built
    assert wheel.name.endswith("-py3-none-any.whl"), wheel.name
    with zipfile.ZipFile(wheel) as archive:
        assert not [n for n in archive.namelist() if n.endswith((".so", ".c", ".pyd"))]


def test_the_build_has_no_deprecation_warning(built: tuple[Path, Path, str]) -> None:
    _, _, output = built
    assert not re.search(r"deprecat", output, re.IGNORECASE), output


def test_the_version_is_written_once(built: tuple[Path, Path, str]) -> None:
    project, _, _ = built
    data = pyproject(project)["project"]
    assert "version" not in data and data["dynamic"] == ["version"]  # type: ignore[index,operator]
    assert pyproject(project)["build-system"]["requires"] == ["setuptools>=77"]  # type: ignore[index]


def test_the_core_version_reaches_the_installed_metadata_and_the_cli() -> None:
    assert metadata.version("hami-core") == hami_core.__version__
    done = subprocess.run(
        [str(Path(sys.executable).with_name("hami")), "--version"], capture_output=True, text=True, timeout=60
    )
    assert done.stdout.strip() == f"hami, version {hami_core.__version__}"


def test_every_project_links_to_the_same_repository() -> None:
    home = pyproject(REPO_ROOT)["project"]["urls"]["Homepage"]  # type: ignore[index]
    for project in PROJECTS:
        urls = pyproject(project)["project"]["urls"]  # type: ignore[index]
        own = [url for name, url in urls.items() if name in ("Homepage", "Source", "Issues")]
        assert len(own) == 3 and all(url.startswith(home) for url in own), project


def _literal_version(init: Path) -> str:
    for node in ast.parse(init.read_text()).body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", "") for t in node.targets] == ["__version__"]:
            assert isinstance(node.value, ast.Constant)
            return str(node.value.value)
    raise AssertionError(f"{init}: no literal __version__")
