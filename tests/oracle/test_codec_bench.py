"""bench/codec.py at its smoke size (so the benchmark cannot rot), and the oracle build's bad input."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.oracle


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_codec", ROOT / "bench" / "codec.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _half_unit(cell: str) -> float:
    """Half of the last printed digit's unit: how far a rounded cell may be from the value."""
    decimals = len(cell.partition(".")[2])
    return 0.5 * 10.0**-decimals


def test_codec_bench_smoke(capsys: pytest.CaptureFixture[str]) -> None:
    assert _bench().main(["--smoke"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if re.match(r"\| (decode|encode|decode_any) \|", line)]
    assert len(rows) == 6, out  # every operation, one device
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        python_us, hami_us, ratio = (float(cells[i]) for i in (3, 4, 5))
        assert python_us > 0 and hami_us > 0, row
        # Each cell is rounded; the ratio was taken before rounding, so it lies in what the rounded
        # times allow (0.11 / 0.26 may be printed with a ratio of 0.45).
        p, h, r = (_half_unit(cells[i]) for i in (3, 4, 5))
        low, high = (python_us - p) / (hami_us + h), (python_us + p) / max(hami_us - h, 1e-12)
        assert low - r <= ratio <= high + r, row
    assert "HAMi v2.10.0 (Go) µs" in out and "Clock: cpu time" in out


def test_codec_bench_rows_show_their_unrounded_figures() -> None:
    """Each row's cells are its measured figures, rounded once each: the ratio is the quotient of the
    unrounded times (two times of 0.12 and 0.25 µs may well have a ratio of 0.50)."""
    bench = _bench()
    oracle = bench.Oracle(bench.oracle_binary())
    try:
        python, hami = bench.PythonCodecs("cpu"), bench.HamiGo(oracle, "cpu")
        text, figures = bench.table(python, hami, (1,), 1, 0.001)
    finally:
        oracle.close()
    rows = {
        tuple(cells[:3]): cells
        for line in text.splitlines()[2:]
        if (cells := [c.strip() for c in line.strip("|").split("|")])
    }
    assert len(figures) == len(rows) == 6
    for (operation, encoding, count), (ours, theirs) in figures.items():
        cells = rows[(operation, encoding, str(count))]
        assert ours > 0 and theirs > 0
        assert cells[3:6] == [f"{ours * 1e6:.2f}", f"{theirs * 1e6:.2f}", f"{ours / theirs:.2f}"]


def test_codec_bench_refuses_a_bad_run_length(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        _bench().main(["--min-seconds", "0"])
    assert exit_info.value.code == 2
    assert "--min-seconds must be positive, got 0.0" in capsys.readouterr().err


def test_oracle_build_names_a_missing_hami_source(tmp_path: Path) -> None:
    env = {**os.environ, "HAMI_SOURCE_DIR": str(tmp_path / "nowhere"), "HAMI_ORACLE_CACHE": str(tmp_path)}
    result = subprocess.run(
        ["bash", str(ROOT / "scripts" / "build-oracle.sh")], capture_output=True, text=True, env=env
    )
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "HAMi v2.10.0's source is not at" in lines[0] and "HAMI_SOURCE_DIR" in lines[0]
    assert not list(tmp_path.iterdir()), "nothing is built or cached without HAMi's source"


def test_oracle_build_refuses_an_unknown_argument() -> None:
    result = subprocess.run(
        ["bash", str(ROOT / "scripts" / "build-oracle.sh"), "--frobnicate"], capture_output=True, text=True
    )
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "build-oracle: error: unknown argument '--frobnicate' (usage: build-oracle.sh [--print-path])"
    )


def test_oracle_build_prints_where_the_binary_is() -> None:
    result = subprocess.run(
        ["bash", str(ROOT / "scripts" / "build-oracle.sh"), "--print-path"],
        capture_output=True,
        text=True,
        check=True,
    )
    path = Path(result.stdout.strip())
    assert path.name == "hami-oracle" and len(path.parent.name) == 16
    assert os.access(path, os.X_OK), f"{path} is not built (scripts/test.sh builds it before pytest)"
