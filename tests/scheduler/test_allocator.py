"""The scheduler limits glibc's malloc arenas at start, unless the operator set MALLOC_ARENA_MAX."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys

import pytest

from hami_core.scheduler.allocator import ARENAS, limit_malloc_arenas

_GLIBC = hasattr(ctypes.CDLL(None), "gnu_get_libc_version")

# A child process starts 8 threads that each allocate a C block (a bytes object above pymalloc's 512 B)
# and reports how many malloc arenas exist: glibc's malloc_stats() prints one "Arena N:" per arena.
_CHILD = """
import ctypes, os, sys, threading
from hami_core.scheduler.allocator import limit_malloc_arenas
print(limit_malloc_arenas(), flush=True)
keep = []
def work():
    keep.append(bytes(100_000))
    barrier.wait()
barrier = threading.Barrier(8)
threads = [threading.Thread(target=work) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
os.dup2(1, 2)
ctypes.CDLL(None).malloc_stats()
"""


def _child(env: dict[str, str]) -> tuple[str, int]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD], env=env, capture_output=True, text=True, check=True, timeout=60
    )
    first = done.stdout.partition("\n")[0]
    return first, sum(1 for line in (done.stdout + done.stderr).splitlines() if line.startswith("Arena "))


def test_threads_share_at_most_the_limited_arenas() -> None:
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_ARENA_MAX"}
    told, arenas = _child(env)
    if not _GLIBC:  # elsewhere the call does nothing, and says so
        assert told == "False"
        return
    assert told == "True"
    assert 1 <= arenas <= ARENAS


def test_the_operators_setting_is_left_alone() -> None:
    told, arenas = _child({**os.environ, "MALLOC_ARENA_MAX": "4"})
    assert told == "False"
    if _GLIBC:
        assert 2 < arenas <= 4


def test_with_the_setting_in_the_environment_it_sets_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MALLOC_ARENA_MAX", "2")
    assert limit_malloc_arenas() is False
