"""The scheduler benchmark at its smoke size, so it cannot rot (its numbers are not checked here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_scheduler_benchmark_runs_and_prints_its_table() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "scheduler.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    rows = [line for line in result.stdout.splitlines() if line.startswith("| ") and "---" not in line]
    names = [row.split(" | ")[0] for row in rows[1:]]
    for expected in (
        "| registrar cold pass",
        "| registrar full pass",
        "| memory held per node",
        "| the store per node",
        "| resync of 200 unchanged nodes",
        "| churn: 100 register changes/s",
        "| cleanup: 5 of 200 nodes",
        "| daemon: 100 new",
    ):
        assert any(name.startswith(expected) for name in names), (expected, names)
    assert "0 evaluations triggered" in result.stdout  # a resync of unchanged nodes evaluates none
