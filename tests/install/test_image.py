"""The image recipe, without a container builder: the Dockerfile's only install step is
scripts/install-drivers.sh, so the tests run that very command (read from the Dockerfile) in a copy of
the build context (the repository filtered by .dockerignore, as Docker sends it) into a fresh virtualenv,
then ask the installed ``hami vendors --json`` which drivers it has.

The fresh virtualenv sees the project's third-party dependencies (kubernetes, pluggy, ...) through a
``.pth`` file and nothing of hami's own; pip runs with ``--no-index``, so the test never downloads.
"""

from __future__ import annotations

import fnmatch
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from harness.apiserver import REPO_ROOT
from install.kit import IN_TREE, dependencies_only

import hami_core

DOCKERFILE = REPO_ROOT / "Dockerfile"
EXAMPLE = ["acme"]


# -- the Dockerfile --------------------------------------------------------------------------------------


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) of the Dockerfile, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    lines = [line.strip() for line in text.splitlines()]
    return [
        (line.split(None, 1)[0].upper(), line.split(None, 1)[1] if " " in line else "")
        for line in lines
        if line and not line.startswith("#")
    ]


def stages() -> list[list[tuple[str, str]]]:
    result: list[list[tuple[str, str]]] = []
    for instruction in instructions():
        if instruction[0] == "FROM":
            result.append([])
        if result:
            result[-1].append(instruction)
    return result


def build_args() -> dict[str, str]:
    """Every ARG with its default (the global ones and the build stage's)."""
    found: dict[str, str] = {}
    for name, args in instructions():
        if name == "ARG":
            key, _, value = args.partition("=")
            found[key] = value.strip('"')
    return found


def test_the_image_has_two_stages_on_slim_python_311() -> None:
    build, final = stages()
    assert build_args()["PYTHON_IMAGE"].startswith("python:3.11-slim")
    assert build[0] == ("FROM", "${PYTHON_IMAGE} AS build")
    assert final[0] == ("FROM", "${PYTHON_IMAGE}")


def test_the_only_install_step_is_the_script() -> None:
    runs = [args for name, args in stages()[0] if name == "RUN"]
    assert runs == ['bash scripts/install-drivers.sh --venv /opt/hami --drivers "${DRIVERS}" '
                    '--extra "${EXTRA_REQUIREMENTS}"']  # fmt: skip
    assert build_args()["DRIVERS"] == "all"
    assert build_args()["EXTRA_REQUIREMENTS"] == ""


def test_the_final_stage_runs_hami_as_a_non_root_user_with_the_venv_only() -> None:
    _, final = stages()
    names = [name for name, _ in final]
    assert "RUN" not in names, "nothing is installed or compiled in the final stage"
    assert ("COPY", "--from=build /opt/hami /opt/hami") in final
    user = dict(final)["USER"]
    uid, _, gid = user.partition(":")
    assert uid.isdigit() and int(uid) > 0 and gid.isdigit() and int(gid) > 0
    assert dict(final)["ENTRYPOINT"] == '["hami"]'
    assert "PATH=/opt/hami/bin:${PATH}" in dict(final)["ENV"]


# -- the build context -----------------------------------------------------------------------------------


def ignore_patterns() -> list[str]:
    lines = (REPO_ROOT / ".dockerignore").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def ignored(relative: str, patterns: list[str]) -> bool:
    """Docker's rule for the pattern forms .dockerignore uses: PATH matches from the root, **/NAME at any
    depth; a directory that matches takes everything under it along."""
    parts = relative.split("/")
    for pattern in patterns:
        if pattern.startswith("**/"):
            if any(fnmatch.fnmatchcase(part, pattern[3:]) for part in parts):
                return True
        elif any(fnmatch.fnmatchcase("/".join(parts[: i + 1]), pattern) for i in range(len(parts))):
            return True
    return False


def test_dockerignore_uses_only_the_forms_the_test_understands() -> None:
    for pattern in ignore_patterns():
        assert not pattern.startswith("!"), pattern
        assert "**" not in pattern.removeprefix("**/"), pattern


def build_context(target: Path) -> Path:
    """The files Docker would send, copied to ``target``."""
    patterns = ignore_patterns()
    for directory, subdirectories, files in os.walk(REPO_ROOT):
        here = Path(directory).relative_to(REPO_ROOT)
        subdirectories[:] = [d for d in subdirectories if not ignored((here / d).as_posix(), patterns)]
        for name in files:
            relative = (here / name).as_posix()
            if not ignored(relative, patterns):
                (target / relative).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(REPO_ROOT / relative, target / relative)
    return target


def test_the_context_holds_what_the_install_needs_and_no_more(tmp_path: Path) -> None:
    context = build_context(tmp_path / "context")
    top = sorted(p.name for p in context.iterdir())
    expected = [".dockerignore", "Dockerfile", "LICENSE", "README.md", "examples", "hami_core",
                "pyproject.toml", "scripts", "vendors"]  # fmt: skip
    assert top == sorted(expected)
    assert not list(context.rglob("__pycache__")) and not list(context.rglob("*.egg-info"))
    assert not list(context.rglob("*.so")), "compiled files from the checkout"


# -- the install step, for real --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def deps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return dependencies_only(tmp_path_factory.mktemp("deps") / "site")


def fresh_venv(root: Path, deps: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, timeout=120)
    python = root / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    (Path(site) / "dependencies.pth").write_text(f"{deps}\n")
    return root


def install(context: Path, venv: Path, **build_arguments: str) -> subprocess.CompletedProcess[str]:
    """The Dockerfile's RUN line with these build arguments, run in ``context`` into ``venv``."""
    ((_, run_line),) = [(n, a) for n, a in stages()[0] if n == "RUN"]
    values = {**build_args(), **build_arguments}
    argv = shlex.split(re.sub(r"\$\{(\w+)\}", lambda m: values[m.group(1)], run_line))
    argv[argv.index("/opt/hami")] = str(venv)
    env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    return subprocess.run(argv, cwd=context, capture_output=True, text=True, timeout=600, env=env)


def installed_drivers(venv: Path) -> list[dict[str, object]]:
    done = subprocess.run([str(venv / "bin" / "hami"), "vendors", "--json"], capture_output=True, text=True,
                          timeout=60, env={"PATH": "/usr/bin:/bin"})  # fmt: skip
    assert done.returncode == 0 and done.stderr == "", done.stderr
    drivers: list[dict[str, object]] = json.loads(done.stdout)
    return drivers


@pytest.mark.parametrize(
    ("build_arguments", "expected"),
    [
        ({}, IN_TREE),
        ({"DRIVERS": "dcu,nvidia", "EXTRA_REQUIREMENTS": "./examples/hami-vendor-acme"},
         ["dcu", "nvidia", *EXAMPLE]),
        ({"DRIVERS": "none", "EXTRA_REQUIREMENTS": "./examples/hami-vendor-acme"}, EXAMPLE),
    ],
    ids=["default", "two-in-tree-and-a-third-party-driver", "only-a-third-party-driver"],
)  # fmt: skip
def test_the_image_gets_exactly_the_chosen_drivers(
    build_arguments: dict[str, str], expected: list[str], deps: Path, tmp_path: Path
) -> None:
    context = build_context(tmp_path / "context")
    venv = fresh_venv(tmp_path / "venv", deps)
    done = install(context, venv, **build_arguments)
    assert done.returncode == 0, done.stdout + done.stderr
    shutil.rmtree(context)  # the final stage has no source tree: the venv must stand alone
    drivers = installed_drivers(venv)
    assert sorted(str(d["name"]) for d in drivers) == sorted(expected)
    version = subprocess.run([str(venv / "bin" / "hami"), "--version"], capture_output=True, text=True,
                             timeout=60).stdout.strip()  # fmt: skip
    assert version == f"hami, version {hami_core.__version__}"


@pytest.mark.parametrize(
    ("build_arguments", "message"),
    [
        ({"DRIVERS": "nvidia,acme"}, "install-drivers: error: unknown in-tree driver 'acme' (in-tree: amd "
                                     "ascend awsneuron biren dcu enflame iluvatar kunlun metax mlu mthreads "
                                     "nvidia vastai; or 'all', 'none')"),
        ({"DRIVERS": " "}, "install-drivers: error: --drivers is empty (give driver names, 'all' or 'none')"),
        ({"DRIVERS": "none"}, "install-drivers: error: no driver to install: --drivers none and no --extra "
                              "(the image would have no driver)"),
    ],
)  # fmt: skip
def test_a_bad_driver_choice_is_one_line_and_exit_2(
    build_arguments: dict[str, str], message: str, deps: Path, tmp_path: Path
) -> None:
    done = install(REPO_ROOT, tmp_path / "never-made", **build_arguments)
    assert done.returncode == 2
    assert done.stderr.strip() == message
    assert not (tmp_path / "never-made").exists()


def test_a_package_without_drivers_fails_the_install(deps: Path, tmp_path: Path) -> None:
    context = build_context(tmp_path / "context")
    empty = context / "not-a-driver"
    empty.mkdir()
    (empty / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=77"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "not-a-driver"\nversion = "1"\n[tool.setuptools]\npy-modules = []\n'
    )
    done = install(context, fresh_venv(tmp_path / "venv", deps), DRIVERS="none",
                   EXTRA_REQUIREMENTS="./not-a-driver")  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == "install-drivers: error: no vendor driver is installed"
