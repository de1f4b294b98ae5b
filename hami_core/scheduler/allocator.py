"""glibc's malloc arenas and mmap threshold, set where the scheduler daemon starts (why, and what each
saves: docs/performance.md). A value the operator sets in the environment is left as it is; ``ARENAS`` is
the one place the number is written (the image's ``MALLOC_ARENA_MAX`` is held to it). Elsewhere than
glibc this does nothing.
"""

from __future__ import annotations

import ctypes
import logging
import os

__all__ = ["ARENAS", "limit_malloc_arenas", "pin_mmap_threshold"]

log = logging.getLogger(__name__)

#: The arenas the scheduler allows (``MALLOC_ARENA_MAX``).
ARENAS = 2
#: Blocks from this size up get a mapping of their own (glibc's initial threshold, kept fixed).
MMAP_THRESHOLD = 128 * 1024
# glibc's mallopt parameter numbers (malloc.h)
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8


def _mallopt(chosen: set[str], *settings: tuple[int, int]) -> bool | None:
    """glibc's ``mallopt`` for each (parameter, value), True when every one was set; ``None``, setting
    nothing, when one of ``chosen`` is in the environment (the operator's choice, already applied by glibc)
    or the C library is not glibc (only glibc has ``gnu_get_libc_version``; musl's ``mallopt`` does
    nothing)."""
    if chosen & os.environ.keys():
        return None
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return None
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    return all(bool(mallopt(parameter, value)) for parameter, value in settings)


def limit_malloc_arenas(arenas: int = ARENAS) -> bool:
    """Limit glibc's malloc to ``arenas`` arenas for the threads started from now on; True when set,
    False when ``MALLOC_ARENA_MAX`` is in the environment or the C library is not glibc."""
    done = _mallopt({"MALLOC_ARENA_MAX"}, (_M_ARENA_MAX, arenas))
    if done is not None:
        log.debug("malloc arenas limited to %d: %s", arenas, done)
    return bool(done)


def pin_mmap_threshold(threshold: int = MMAP_THRESHOLD) -> bool:
    """Keep glibc's mmap and trim thresholds at ``threshold`` bytes, so a large block (a page of the node
    list) is always mapped and returned when freed, never left on the heap between register values that
    outlive it; True when set. False when either is in the environment or the C library is not glibc."""
    chosen = {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"}
    done = _mallopt(chosen, (_M_MMAP_THRESHOLD, threshold), (_M_TRIM_THRESHOLD, threshold))
    if done is not None:
        log.debug("malloc mmap and trim thresholds pinned at %d bytes: %s", threshold, done)
    return bool(done)
