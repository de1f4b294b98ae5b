"""Bad input to the process-level benchmarks and the HAMi build script: one error line naming what was
wrong, exit code 2, before anything is started or built."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def run(argv: list[str]) -> tuple[int, str]:
    proc = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.stdout == ""
    return proc.returncode, proc.stderr


def last_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert lines, "no error message"
    return lines[-1]


def fake_source(root: Path, module: str = "github.com/Project-HAMi/HAMi") -> Path:
    """A directory shaped like HAMi's source (enough to be found; never built)."""
    (root / "cmd" / "scheduler").mkdir(parents=True)
    (root / "go.mod").write_text(f"module {module}\n\ngo 1.26\n")
    return root


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (["--nodes", "0"], "--nodes: 0 is not between 1 and 100000"),
        (["--nodes", "many"], "--nodes: invalid int value: 'many'"),
        (["--timeout", "-5"], "--timeout: -5 is not between 0 and 86400 seconds"),
    ],
)
def test_coldstart_bad_flags(args: list[str], names: str) -> None:
    code, stderr = run([sys.executable, "bench/coldstart.py", *args])
    assert code == 2
    assert last_line(stderr).endswith(names), stderr


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (["--phase", "soon"], "--phase: 'soon' is not a number of seconds"),
        (["--nvidia", "0"], "--nvidia: 0 is not between 1 and 20000"),
        (["--large", "-1"], "--large: -1 is not between 0 and 100000"),
    ],
)
def test_peer_bad_flags(args: list[str], names: str) -> None:
    code, stderr = run([sys.executable, "bench/peer.py", *args])
    assert code == 2
    assert last_line(stderr).endswith(names), stderr


def test_peer_without_hami_source(tmp_path: Path) -> None:
    missing = tmp_path / "no-hami"
    code, stderr = run([sys.executable, "bench/peer.py", "--hami-src", str(missing)])
    assert code == 2
    assert stderr.strip() == (
        f"error: HAMi v2.10.0's source not found (looked in: {missing}); "
        "pass --hami-src DIR (a checkout of HAMi at v2.10.0) or set HAMI_SRC or "
        "HAMI_SHARED"
    )


def test_peer_with_a_source_that_is_not_hami(tmp_path: Path) -> None:
    source = fake_source(tmp_path / "other", module="example.com/other")
    code, stderr = run([sys.executable, "bench/peer.py", "--hami-src", str(source)])
    assert code == 2
    assert stderr.strip() == (
        f"error: {source}/go.mod is not HAMi's module (first line: 'module example.com/other')"
    )


def test_peer_with_a_missing_device_config(tmp_path: Path) -> None:
    source = fake_source(tmp_path / "hami")
    code, stderr = run(
        [
            sys.executable,
            "bench/peer.py",
            "--hami-src",
            str(source),
            "--device-config",
            str(tmp_path / "nope.yaml"),
        ]
    )
    assert code == 2
    assert stderr.strip() == f"error: --device-config: {tmp_path / 'nope.yaml'} is not a file"


def test_peer_without_a_device_config_next_to_the_source(tmp_path: Path) -> None:
    source = fake_source(tmp_path / "hami")
    code, stderr = run([sys.executable, "bench/peer.py", "--hami-src", str(source)])
    assert code == 2
    expected = f"error: no device-config.yaml next to {source}; pass --device-config"
    assert last_line(stderr).startswith(expected)


@pytest.mark.parametrize("args", [["--src"], ["--bogus"]])
def test_build_script_bad_usage(args: list[str]) -> None:
    code, stderr = run(["bash", "scripts/build-hami-scheduler.sh", *args])
    assert code == 2
    assert len(stderr.strip().splitlines()) == 1
    assert stderr.startswith("build-hami-scheduler: error: ")


def test_build_script_without_source(tmp_path: Path) -> None:
    code, stderr = run(["bash", "scripts/build-hami-scheduler.sh", "--src", str(tmp_path / "none")])
    assert code == 2
    assert stderr.strip() == (
        f"build-hami-scheduler: error: HAMi v2.10.0's source not found (looked in: "
        f"{tmp_path / 'none'}); pass --src DIR (a checkout of HAMi at v2.10.0) or set "
        "HAMI_SRC or HAMI_SHARED"
    )


def test_build_script_refuses_another_module(tmp_path: Path) -> None:
    source = fake_source(tmp_path / "other", module="example.com/other")
    code, stderr = run(["bash", "scripts/build-hami-scheduler.sh", "--src", str(source)])
    assert code == 2
    assert stderr.strip() == f"build-hami-scheduler: error: {source}/go.mod is not HAMi's module"
