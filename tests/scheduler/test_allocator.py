"""The scheduler limits glibc's malloc arenas and pins its mmap threshold at start, unless the operator
set them (MALLOC_ARENA_MAX, MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_)."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys

import pytest

from hami_core.scheduler.allocator import ARENAS, limit_malloc_arenas, pin_mmap_threshold

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


# A child process frees a 1 MiB block (glibc would raise its mmap threshold to that size), then allocates
# a 512 KiB one and reports how many bytes of mapped blocks that added (mallinfo2's hblkhd): the block's
# own mapping when the threshold is pinned, nothing when it came from the heap.
_MAPPED = """
import ctypes, sys
from hami_core.scheduler.allocator import pin_mmap_threshold
if sys.argv[1] == "pin":
    print(pin_mmap_threshold(), flush=True)
else:
    print("not asked", flush=True)
class Info(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
        "keepcost")]
libc = ctypes.CDLL(None)
libc.mallinfo2.restype = Info
freed = bytes(1 << 20)
del freed
before = libc.mallinfo2().hblkhd
kept = bytes(512 << 10)
print(libc.mallinfo2().hblkhd - before)
"""


def _mapped(env: dict[str, str], *args: str) -> tuple[str, int]:
    done = subprocess.run(
        [sys.executable, "-c", _MAPPED, *args],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    told, mapped = done.stdout.splitlines()
    return told, int(mapped)


_NO_SETTING = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}


@pytest.mark.skipif(not _GLIBC or not hasattr(ctypes.CDLL(None), "mallinfo2"), reason="glibc 2.33+ only")
def test_a_large_block_stays_mapped_after_a_larger_one_was_freed() -> None:
    assert _mapped(_NO_SETTING, "leave") == ("not asked", 0)  # glibc's own way: from the heap
    told, mapped = _mapped(_NO_SETTING, "pin")
    assert told == "True" and mapped >= 512 << 10


@pytest.mark.parametrize("name", ["MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"])
def test_a_threshold_the_operator_set_is_left_alone(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    monkeypatch.setenv(name, "1048576")
    assert pin_mmap_threshold() is False
