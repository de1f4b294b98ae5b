"""bench/lines.py on a repository made here: a base never formatted, a feature, a cut, a rewrite. The
counts it reports are checked against what each commit did, so the size ledger cannot rot."""

from __future__ import annotations

import importlib.util
import subprocess
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def lines(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    monkeypatch.syspath_prepend(str(ROOT / "bench"))
    spec = importlib.util.spec_from_file_location("bench_lines", ROOT / "bench" / "lines.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def commit(repo: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    env = ["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]
    subprocess.run(["git", *env, "commit", "-q", "-m", message], cwd=repo, check=True)
    return subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=repo, check=True, capture_output=True, text=True
    ).stdout.strip()


def test_the_ledger_counts_what_features_still_hold(lines: ModuleType, tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", "-b", "main", str(tmp_path)], check=True)
    old = [f"def f{i}(a,b): return a+b" for i in range(10)]  # ruff format: 2 lines each, and blank lines
    base = commit(
        tmp_path,
        {
            "pyproject.toml": "[tool.ruff]\nline-length = 110\n",
            "hami_core/old.py": "\n".join(old) + "\n",
            "hami_core/fast.c": "int x;\nint y;\n",
        },
        "base",
    )
    feature = commit(tmp_path, {"hami_core/new.py": "".join(f"X{i} = {i}\n" for i in range(30))}, "feature")
    # A cut that rewrites 5 of the feature's lines: they are the cut's now, not the feature's.
    rewritten = "".join(f"X{i} = {i}\n" for i in range(25)) + "".join(f"Y{i} = {i}\n" for i in range(5))
    commit(tmp_path, {"hami_core/new.py": rewritten, "hami_core/old.py": "\n".join(old[:4]) + "\n"}, "cut")
    # A feature that rewrites 2 old lines and adds 3: at most 3 of its 5 surviving lines count.
    mixed = "\n".join(["def g0(): pass", "def g1(): pass", *old[2:4], "A = 1", "B = 2", "C = 3"]) + "\n"
    second = commit(tmp_path, {"hami_core/old.py": mixed}, "feature that rewrites")

    sizes = lines.measure(tmp_path, "HEAD", base, {feature: "new module", second: "mixed"})

    assert (sizes.base_raw, sizes.base_c, sizes.now) == (10, 2, 30 + 7)
    assert sizes.base_formatted == 10 * 2 + 9 * 2  # each def on two lines, two blank lines between defs
    assert [(f.holds, f.deleted, f.counted) for f in sizes.features] == [(25, 0, 25), (5, 2, 3)]
    assert sizes.like_for_like == 37 - (25 + 3)
    assert sizes.bar == sizes.base_formatted - lines.TARGET
    text = lines.report(sizes, "HEAD", base)
    assert f"| {feature} | new module | 25 | 0 | 25 |" in text
    assert "| HEAD without the counted feature lines | 9 |" in text
