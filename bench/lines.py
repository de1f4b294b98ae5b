"""How much smaller ``hami_core`` is than at 832ddff for the same features (issue 19's size target).

Run from the repository root, in a clone with its history::

    .venv/bin/python bench/lines.py            # prints a Markdown table
    .venv/bin/python bench/lines.py --rev HEAD --base 832ddff

The raw count (``wc -l`` of every ``hami_core/**/*.py``) mixes two things the target keeps apart: the
base was never formatted (``ruff format`` alone added about 1,070 lines to it), and features came after
it (issues 17, 18 and 20 and the day's hardening). So the script also reports:

- the base formatted with today's ``ruff format`` settings, the like-for-like starting point;
- the lines of ``--rev`` that features written since the base still hold: ``git blame --first-parent
  -C`` gives each line the first-parent commit that last wrote it (a line moved between files keeps its
  writer), and ``FEATURES`` lists the commits that added behaviour. A line a later cut rewrote no
  longer counts, so this undercounts what features hold; and a feature commit may also have rewritten
  old lines in place, so each feature commit counts at most its surviving lines minus the lines it
  deleted (the lower bound used for the verdict);
- the like-for-like size: ``--rev``'s lines minus that lower bound.

Commits made after the list was written count as the same features (cuts and fixes), so the verdict
is conservative for them too.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path

import attrs
from benchlib.repo import REPO_ROOT
from benchlib.table import markdown_table

BASE = "832ddff"
#: The target: at least this many lines fewer than the formatted base, for the same features.
TARGET = 2000
#: First-parent commits since the base that added behaviour, with what they added. Performance work
#: (the compressed store, the mmap threshold) and code moved in from the drivers count as the same
#: features, so they are not listed.
FEATURES: Mapping[str, str] = {
    "ce59a46": "issue 18: the driver interface; devices from a function of the Node; node-sourced drivers",
    "e2239d8": "issue 20: beside HAMi: its registrar checked every resync, our own annotation names",
    "9fce3a0": "issue 17: cleanups conditional on the Node as judged, with a marker",
    "835cdd7": "issue 20: hami doctor judges with the running scheduler's settings",
    "0a85836": "issue 17: the Node watch proves progress or is replaced by a list",
    "0afa616": "issue 20: hami cleanup removes only what hami-core wrote",
    "7a0087c": "issue 17: wall-clock steps never clean",
    "808c288": "issue 17: no cleanup on a view not known current; terms start on a fresh list",
    "a0280ee": "HTTP endpoint: idle connections hold no thread and close after 15 s",
    "70e95c3": "issue 20: hami doctor nodes",
    "e92b101": "errors name their source: environment variables, certificates, stdin",
    "630fddf": "issue 17: a relist keeps unchanged Nodes; a term during the first list restarts it",
    "88878b6": "issue 17: a cleanup made again after its patch failed posts its Event",
    "f2ec377": "issue 18: capacity-judged vendors get no marker",
    "4eb350e": "issue 17: a consistent read before each watch brings the bookmark",
    "0fa8116": "a refusal by the reporter's policy says what the policy allows",
    "f11c9b0": "issue 17: writes not sent while a renewal is late are decided again",
    "3ec26cf": "issue 17: a stale view turns current only by a list",
    "f34715a": "the first list waits for the first Lease try",
    "7e15d27": "issue 17: a cleanup's Event is posted once its conditional patch lands",
    "a982bf7": "watch events compare packed register values without unpacking them",
    "0c923e7": "Event log records name a node only for Events about a Node",
    "5ea0c5d": "simulation settles after each scenario write",
    "0e9e283": "doctor and cleanup: odd files and scheduler answers are one line",
    "530e105": "issue 17: a cleanup decided while the replica may not write keeps its Event",
    "181d0e6": "issue 17: one look per retry period for all nodes unsent in a late renewal",
    "6b503ad": "device config: non-UTF-8, deep or unreadable values are one line",
    "b8c40e2": "doctor --timezone: a name too long for a file name is a usage error",
    "044bab1": "doctor: odd types in a scheduler's /status or /cache are said",
    "8e4b2a1": "Node files, kubeconfigs: a value YAML reads but Python cannot is said",
    "f95ecd5": "doctor --from-file -: a closed standard input is one line",
    "1574939": "hami: output that cannot be written is one error line",
    "3ff66ac": "doctor: a scheduler's JSON nested too deeply is no answer",
}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def python_files(repo: Path, rev: str) -> list[str]:
    listed = git(repo, "ls-tree", "-r", "--name-only", rev, "--", "hami_core").split()
    return [p for p in listed if p.endswith(".py")]


def count_lines(texts: Iterable[str]) -> int:
    return sum(len(text.splitlines()) for text in texts)


def base_lines(repo: Path, base: str) -> tuple[int, int, int]:
    """The base's Python lines as committed and after today's ``ruff format``, and its C lines."""
    with tempfile.TemporaryDirectory() as tmp:
        archive = subprocess.run(
            ["git", "archive", base, "hami_core"], cwd=repo, check=True, capture_output=True
        )
        subprocess.run(["tar", "-x", "-C", tmp], input=archive.stdout, check=True)
        files = sorted(Path(tmp).rglob("*.py"))
        raw = count_lines(p.read_text() for p in files)
        ruff = Path(sys.executable).with_name("ruff")
        subprocess.run([str(ruff), "format", "-q", "--config", str(repo / "pyproject.toml"), tmp], check=True)
        formatted = count_lines(p.read_text() for p in files)
        c_lines = count_lines(p.read_text() for p in Path(tmp).rglob("*.c"))
    return raw, formatted, c_lines


def surviving_lines(repo: Path, rev: str) -> Counter[str]:
    """Lines of ``rev``'s ``hami_core`` by the first-parent commit that last wrote them (full shas)."""
    owners: Counter[str] = Counter()
    for path in python_files(repo, rev):
        for line in git(repo, "blame", "--first-parent", "-C", "-l", "-s", rev, "--", path).splitlines():
            owners[line.split(" ", 1)[0].lstrip("^")] += 1
    return owners


def deleted_lines(repo: Path, commit: str) -> int:
    """Lines of ``hami_core`` a commit deleted, against its first parent."""
    rows = git(repo, "diff", "--numstat", f"{commit}^1", commit, "--", "hami_core").splitlines()
    return sum(int(row.split("\t")[1]) for row in rows if row.split("\t")[1] != "-")


@attrs.frozen
class Feature:
    commit: str
    what: str
    #: Lines of the measured tree last written by this commit, and lines it deleted from its parent.
    holds: int
    deleted: int

    @property
    def counted(self) -> int:
        return max(0, self.holds - self.deleted)


@attrs.frozen
class Sizes:
    base_raw: int
    base_formatted: int
    base_c: int
    now: int
    features: tuple[Feature, ...]

    @property
    def like_for_like(self) -> int:
        return self.now - sum(f.counted for f in self.features)

    @property
    def bar(self) -> int:
        return self.base_formatted - TARGET


def measure(repo: Path, rev: str, base: str, features: Mapping[str, str]) -> Sizes:
    now = count_lines(git(repo, "show", f"{rev}:{p}") for p in python_files(repo, rev))
    raw, formatted, c_lines = base_lines(repo, base)
    owners = surviving_lines(repo, rev)
    held = tuple(
        Feature(short, what, owners.get(git(repo, "rev-parse", short).strip(), 0), deleted_lines(repo, short))
        for short, what in features.items()
    )
    return Sizes(raw, formatted, c_lines, now, held)


def report(sizes: Sizes, rev: str, base: str) -> str:
    rows = [[f.commit, f.what, f"{f.holds:,}", f"{f.deleted:,}", f"{f.counted:,}"] for f in sizes.features]
    held = sum(f.holds for f in sizes.features)
    counted = sum(f.counted for f in sizes.features)
    over = sizes.like_for_like - sizes.bar
    summary = [
        [f"{base}, as committed", f"{sizes.base_raw:,} (and {sizes.base_c:,} of C)"],
        [f"{base}, after today's `ruff format`", f"{sizes.base_formatted:,}"],
        [rev, f"{sizes.now:,}"],
        ["lines the features above still hold (blame)", f"{held:,}"],
        ["of which counted (each commit's lines minus what it deleted)", f"{counted:,}"],
        [f"{rev} without the counted feature lines", f"{sizes.like_for_like:,}"],
        [f"the target: {TARGET:,} under the formatted base", f"at most {sizes.bar:,}"],
        ["met", "yes" if over <= 0 else f"no: {over:,} over"],
    ]
    features = markdown_table(["commit", "feature", "lines it still holds", "it deleted", "counted"], rows)
    return features + "\n\n" + markdown_table(["what", "lines"], summary)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--rev", default="HEAD", help="the tree to measure (default HEAD)")
    parser.add_argument("--base", default=BASE, help=f"the base of the target (default {BASE})")
    args = parser.parse_args(argv)
    print(report(measure(REPO_ROOT, args.rev, args.base, FEATURES), args.rev, args.base))
    return 0


if __name__ == "__main__":
    sys.exit(main())
