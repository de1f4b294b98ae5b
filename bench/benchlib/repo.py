"""Where the repository is, and the test harness (``tests/harness``) on the import path."""

from __future__ import annotations

import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
TESTS = REPO_ROOT / "tests"

if str(TESTS) not in sys.path:  # the harness that starts kube-apiserver + etcd lives with the tests
    sys.path.insert(0, str(TESTS))


def hami_command() -> Path:
    """The ``hami`` command installed next to this Python (the worktree's ``.venv``)."""
    return Path(sys.executable).with_name("hami")
