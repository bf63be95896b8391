"""glibc's allocator tuned for a long-running daemon with many threads.

By default glibc gives threads that allocate at once arenas of their own (up to 8 per core),
and adapts its mmap threshold upwards as large blocks are freed, so that answers of a few
hundred kB (built in worker threads, then dropped when a commit supersedes them) end up on the
heaps of many arenas, whose freed space is rarely returned. Two arenas, and blocks from
128 KiB served by mmap (given back to the system when freed), keep the resident size close to
what is in use (bench/bench_soak.py measures the resident size at the end of a soak with
polling clients). What the environment sets (``MALLOC_ARENA_MAX``,
``MALLOC_MMAP_THRESHOLD_``) wins.

For finding what grows (bench/README.md, the soak): with ``BOARDD_DEBUG_MEMORY=DIR`` set, the
daemon traces its Python allocations (tracemalloc, 16 frames) and every
``BOARDD_DEBUG_MEMORY_EVERY`` seconds (default 60) writes a snapshot ``DIR/snap-SSSSS.bin``
and a line of glibc's ``mallinfo2`` (arena, mmap, in use, free) and ``VmRSS`` to
``DIR/mallinfo.jsonl``. A debugging aid: tracing costs CPU and memory of its own.
"""

from __future__ import annotations

import ctypes
import json
import logging
import os
import sys
import threading
import time
from pathlib import Path

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
    debug = os.environ.get("BOARDD_DEBUG_MEMORY")
    if debug:
        start_memory_debug(Path(debug), float(os.environ.get("BOARDD_DEBUG_MEMORY_EVERY", "60")))
    applied = []
    for parameter, value, variable in SETTINGS:
        if variable in os.environ:
            continue
        if mallopt(parameter, value) == 1:
            applied.append(variable)
        else:
            log.debug("mallopt(%d, %d) refused", parameter, value)
    return applied


_MALLINFO_FIELDS = (
    "arena",
    "ordblks",
    "smblks",
    "hblks",
    "hblkhd",
    "usmblks",
    "fsmblks",
    "uordblks",
    "fordblks",
    "keepcost",
)


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in _MALLINFO_FIELDS]


def mallinfo() -> dict[str, int]:
    """glibc's ``mallinfo2()`` (bytes): ``arena`` (heap bytes from the system, main arena and
    others), ``hblkhd`` (in mmap'd blocks), ``uordblks`` (in use), ``fordblks`` (free); {}
    elsewhere."""
    try:
        function = ctypes.CDLL(None).mallinfo2
    except (OSError, AttributeError):
        return {}
    function.restype = _Mallinfo2
    info = function()
    return {name: int(getattr(info, name)) for name in _MALLINFO_FIELDS}


def _rss() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0


def start_memory_debug(directory: Path, every: float) -> threading.Thread:
    """Traces allocations and writes snapshots to ``directory`` every ``every`` seconds."""
    import tracemalloc

    directory.mkdir(parents=True, exist_ok=True)
    tracemalloc.start(16)
    started = time.monotonic()

    def loop() -> None:
        while True:
            time.sleep(every)
            elapsed = time.monotonic() - started
            tracemalloc.take_snapshot().dump(str(directory / f"snap-{elapsed:05.0f}.bin"))
            traced, _peak = tracemalloc.get_traced_memory()
            line = {"t": round(elapsed), "rss": _rss(), "traced": traced, **mallinfo()}
            with open(directory / "mallinfo.jsonl", "a") as out:
                out.write(json.dumps(line) + "\n")

    thread = threading.Thread(target=loop, name="boardd-memory-debug", daemon=True)
    thread.start()
    log.warning("memory debugging on: snapshots every %g s in %s", every, directory)
    return thread
