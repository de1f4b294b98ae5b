"""The C allocator's arenas and mmap threshold, set where the scheduler daemon starts.

glibc's malloc gives each thread that allocates its own arena, up to 8 per core, and keeps what an
arena once held: the scheduler's 16 patch threads, its worker and its reflector each grow one, and a
value over 512 bytes (a register annotation) is a C allocation, not Python's small-object allocator.
Two arenas are enough for threads that mostly wait on the network and the GIL, and cost no measurable
time; at 10,000 nodes they take about 4 MiB off the peak resident set (docs/performance.md). ``ARENAS``
is the one place the number is written: the image sets ``MALLOC_ARENA_MAX`` to it as well (glibc reads
it at process start; a test holds the Dockerfile to ``ARENAS``), and a value the operator sets is left
as it is. Elsewhere than glibc this does nothing.

glibc also serves a block of 128 KiB or more from a mapping of its own, returned to the system when
freed, but raises that threshold to the size of each such block freed (up to 32 MiB): once a page of
the node list was freed, the later pages' large blocks come from the heap instead, between the register
values parsed meanwhile, which outlive them and keep that heap from shrinking. Pinning the
threshold (``MMAP_THRESHOLD``, and the trim threshold with it, which glibc otherwise moves too) keeps
every such body mapped; at 10,000 nodes it takes about 3 MiB off the peak resident set. A threshold the
operator sets (``MALLOC_MMAP_THRESHOLD_``, ``MALLOC_TRIM_THRESHOLD_``) is left as it is.
"""

from __future__ import annotations

import ctypes
import logging
import os
from typing import Any

__all__ = ["ARENAS", "MMAP_THRESHOLD", "limit_malloc_arenas", "pin_mmap_threshold"]

log = logging.getLogger(__name__)

#: The arenas the scheduler allows (``MALLOC_ARENA_MAX``).
ARENAS = 2
#: Blocks from this size up get a mapping of their own (glibc's initial threshold, kept fixed).
MMAP_THRESHOLD = 128 * 1024
# glibc's mallopt parameter numbers (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8


def _mallopt() -> Any:
    """glibc's ``mallopt``, or ``None`` elsewhere (only glibc has ``gnu_get_libc_version``; musl's
    ``mallopt`` does nothing)."""
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return None
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return mallopt


def limit_malloc_arenas(arenas: int = ARENAS) -> bool:
    """Limit glibc's malloc to ``arenas`` arenas for the threads started from now on; True when set.

    False when ``MALLOC_ARENA_MAX`` is in the environment (the operator's choice, already applied by
    glibc) or the C library is not glibc."""
    mallopt = None if "MALLOC_ARENA_MAX" in os.environ else _mallopt()
    if mallopt is None:
        return False
    done = bool(mallopt(_M_ARENA_MAX, arenas))
    log.debug("malloc arenas limited to %d: %s", arenas, done)
    return done


def pin_mmap_threshold(threshold: int = MMAP_THRESHOLD) -> bool:
    """Keep glibc's mmap and trim thresholds at ``threshold`` bytes (see the module's note); True when
    set. False when either is in the environment (the operator's choice) or the C library is not glibc."""
    chosen = {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"} & os.environ.keys()
    mallopt = None if chosen else _mallopt()
    if mallopt is None:
        return False
    done = bool(mallopt(_M_MMAP_THRESHOLD, threshold)) and bool(mallopt(_M_TRIM_THRESHOLD, threshold))
    log.debug("malloc mmap and trim thresholds pinned at %d bytes: %s", threshold, done)
    return done
