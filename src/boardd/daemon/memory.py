"""glibc's allocator tuned for a long-running daemon with many threads.

By default glibc gives threads that allocate at once arenas of their own (up to 8 per core),
and adapts its mmap threshold upwards as large blocks are freed, so that answers of a few
hundred kB (built in worker threads, then dropped when a commit supersedes them) end up on the
heaps of many arenas, whose freed space is rarely returned. Two arenas, and blocks from
128 KiB served by mmap (given back to the system when freed), keep the resident size close to
what is in use (83 against 96 MiB at the end of a 5-minute soak with 8 polling clients,
bench/bench_soak.py). What the environment sets (``MALLOC_ARENA_MAX``,
``MALLOC_MMAP_THRESHOLD_``) wins.
"""

from __future__ import annotations

import ctypes
import logging
import os
import sys

log = logging.getLogger(__name__)

#: mallopt parameters (malloc.h).
M_MMAP_THRESHOLD = -3
M_ARENA_MAX = -8
#: The settings, and the environment variable that overrides each.
SETTINGS = (
    (M_ARENA_MAX, 2, "MALLOC_ARENA_MAX"),
    (M_MMAP_THRESHOLD, 128 * 1024, "MALLOC_MMAP_THRESHOLD_"),
)


def tune_malloc() -> list[str]:
    """Applies :data:`SETTINGS` (before the daemon starts its threads); returns the names of
    those applied. Nothing outside Linux with glibc, and nothing the environment sets."""
    if not sys.platform.startswith("linux"):
        return []
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # another C library
        return []
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    applied = []
    for parameter, value, variable in SETTINGS:
        if variable in os.environ:
            continue
        if mallopt(parameter, value) == 1:
            applied.append(variable)
        else:
            log.debug("mallopt(%d, %d) refused", parameter, value)
    return applied
