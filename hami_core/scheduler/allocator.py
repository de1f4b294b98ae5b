"""The C allocator's arenas, limited where the scheduler daemon starts.

glibc's malloc gives each thread that allocates its own arena, up to 8 per core, and keeps what an
arena once held: the scheduler's 16 patch threads, its worker and its reflector each grow one, and a
value over 512 bytes (a register annotation) is a C allocation, not Python's small-object allocator.
Two arenas are enough for threads that mostly wait on the network and the GIL, and cost no measurable
time; at 10,000 nodes they take about 4 MiB off the peak resident set (docs/performance.md). ``ARENAS``
is the one place the number is written: the image sets ``MALLOC_ARENA_MAX`` to it as well (glibc reads
it at process start; a test holds the Dockerfile to ``ARENAS``), and a value the operator sets is left
as it is. Elsewhere than glibc this does nothing.
"""

from __future__ import annotations

import ctypes
import logging
import os

__all__ = ["ARENAS", "limit_malloc_arenas"]

log = logging.getLogger(__name__)

#: The arenas the scheduler allows (``MALLOC_ARENA_MAX``).
ARENAS = 2
_M_ARENA_MAX = -8  # glibc's mallopt parameter number (malloc.h)


def limit_malloc_arenas(arenas: int = ARENAS) -> bool:
    """Limit glibc's malloc to ``arenas`` arenas for the threads started from now on; True when set.

    False when ``MALLOC_ARENA_MAX`` is in the environment (the operator's choice, already applied by
    glibc) or the C library is not glibc."""
    if "MALLOC_ARENA_MAX" in os.environ:
        return False
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018  (only glibc has it; musl's mallopt does nothing)
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    done = bool(mallopt(_M_ARENA_MAX, arenas))
    log.debug("malloc arenas limited to %d: %s", arenas, done)
    return done
