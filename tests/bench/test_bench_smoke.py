"""The process-level benchmarks at a smoke size, so that neither can rot: each runs as a command against
its own real kube-apiserver and must print a well-formed table with every expected row, each cell in
the form the row promises. What the cells say about speed or request counts is the benchmark's report,
not asserted here (a loaded machine may legitimately retry a request that timed out)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from harness.fixtures import binaries_or_fail

REPO = Path(__file__).resolve().parents[2]
VERDICT = r"\((met|\*\*missed\*\*)\)"
pytestmark = pytest.mark.apiserver


def run_bench(script: str, *args: str, timeout: float) -> str:
    binaries_or_fail()
    proc = subprocess.run(
        [sys.executable, str(REPO / "bench" / script), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, f"{script} failed ({proc.returncode}):\n{proc.stderr[-3000:]}"
    return proc.stdout


def parse_table(text: str) -> tuple[list[str], dict[str, list[str]]]:
    """The one Markdown table in ``text``: its header, and its rows by first cell."""
    lines = [line for line in text.splitlines() if line.startswith("|")]
    assert len(lines) >= 3, f"no Markdown table in:\n{text}"

    def cells(line: str) -> list[str]:
        assert line.endswith("|"), line
        return [c.strip() for c in line.strip("|").split(" | ")]

    header = cells(lines[0])
    assert set(cells(lines[1])) == {"---"}, lines[1]
    rows: dict[str, list[str]] = {}
    for line in lines[2:]:
        row = cells(line)
        assert len(row) == len(header), f"{line!r} has {len(row)} cells, the header {len(header)}"
        assert row[0] not in rows, f"row {row[0]!r} twice"
        rows[row[0]] = row[1:]
    return header, rows


def row(rows: dict[str, list[str]], starts: str) -> list[str]:
    found = [cells for name, cells in rows.items() if name.startswith(starts)]
    assert len(found) == 1, f"expected one row starting {starts!r}, found {len(found)} in {list(rows)}"
    return found[0]


def test_coldstart_smoke(tmp_path: Path) -> None:
    out = run_bench("coldstart.py", "--nodes", "4", "--workdir", str(tmp_path), timeout=240)
    assert out.startswith("Cold start on the real API server, measured ")
    header, rows = parse_table(out)
    assert header == ["measurement", "4 nodes", "target"]
    # 4 nodes of the mix: one without devices, one MLU + Kunlun, one NVIDIA, one NVIDIA + DCU.
    assert row(rows, "nodes with devices")[0] == "3 / 22"
    assert row(rows, "every node stamped and cached")[0].endswith(" s")
    assert re.fullmatch(rf"\d+ \(\d+\.\d\d per node\) {VERDICT}", row(rows, "PATCH nodes")[0])
    assert re.fullmatch(rf"\d+ {VERDICT}", row(rows, "GET of a single node")[0])
    assert row(rows, "node and Event requests answered with an error")[0].isdigit()
    for name in (
        "setup:",
        "LIST / WATCH nodes",
        "Events created",
        "Lease requests",
        "daemon CPU time",
        "daemon peak RSS",
        "HAMi v2.10.0's design",
    ):
        assert row(rows, name)[0], name
    assert row(rows, "HAMi v2.10.0's design")[0].startswith("20 stamps, 40 requests: 8.0 s")


def test_peer_smoke(tmp_path: Path) -> None:
    out = run_bench(
        "peer.py",
        "--nvidia",
        "2",
        "--dcu",
        "1",
        "--phase",
        "2",
        "--changes",
        "1",
        "--workdir",
        str(tmp_path),
        timeout=600,
    )
    assert out.startswith("HAMi v2.10.0's scheduler and hami-core, one at a time on the real API server")
    header, rows = parse_table(out)
    assert header == ["", "HAMi v2.10.0", "hami-core"]
    assert len(rows) == 8, list(rows)
    hami, core = row(rows, "cold start, 2 NVIDIA + 1 DCU nodes, HAMi at its chart's defaults")
    assert hami.endswith(" s") or ", first stamp at " in hami
    assert ", first stamp at " in core
    assert row(rows, "cold start, same nodes, HAMi at hami-core's limits")[1] == "(as above)"
    hami, core = row(rows, "requests per node at cold start")
    for cell in (hami, core):
        assert re.match(r"(\d+\.\d\d [A-Z]+)( \+ \d+\.\d\d [A-Z]+)*( \(and .* for the run\))?$", cell), cell
    for name in (
        "CPU time and peak RSS",
        "silent DCU plugin",
        "node requests while nothing changes",
        "a `[null]` element",
        "register value changed",
    ):
        hami, core = row(rows, name)
        assert hami and core and "not measured" not in hami + core, (name, hami, core)
    for cell in row(rows, "register value changed"):
        assert re.fullmatch(r"seen after \d+(\.\d)?-\d+(\.\d)? m?s \(1 change\)", cell), cell
