"""Parallel catch-up: how many decode workers, and which run each takes next."""

from __future__ import annotations

import bisect
import os
import threading
from collections.abc import Callable


def can_fork() -> bool:
    """Whether decode workers may be forked from this process: only while it runs a single
    thread (a fork copies no other thread, so a lock one of them held stays held forever)."""
    return hasattr(os, "fork") and threading.active_count() == 1


def default_workers(*, fork: bool | None = None) -> int:
    """Processes that decode a large catch-up, this one included (1: no worker).

    This process commits what the workers decode and decodes too whenever it has nothing to
    commit. Forked workers (``fork``, by default whether this process may fork: see
    :func:`can_fork`) start at once and share this process's memory pages, so they pay
    from two CPUs up: one decoder per CPU, at most 4 (bench/bench_ingest.py). Spawned workers
    import boardd anew (CPU time and memory of their own each), so they are used only from
    three CPUs up: half the CPUs, at most 4.
    """
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    if fork is None:
        fork = can_fork()
    if fork:
        return 1 if cpus <= 1 else min(cpus, 4)
    return 1 if cpus <= 2 else min(cpus // 2, 4)


def many_files_workers() -> int:
    """Processes that decode a pass over many small files, this one included.

    There decoding costs about what committing does, file by file, and this process cannot keep
    up with both: one spawned worker pays from two CPUs up, its start being
    small beside the pass (bench/bench_scale.py). Forked workers as :func:`default_workers`.
    """
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    return max(default_workers(), min(cpus, 2))


class ReadyRuns:
    """Runs with work to hand out, by bytes left to read: workers take the largest first (the
    longest tasks start early, so none is left alone at the end), this process the smallest.

    ``bytes_left(run_id)`` tells how much a run has left to read when it is put back.
    """

    def __init__(self, bytes_left: Callable[[int], int]) -> None:
        self._bytes_left = bytes_left
        self._order: list[tuple[int, int]] = []  # (bytes left, run id), ascending

    def __bool__(self) -> bool:
        return bool(self._order)

    def put(self, run_id: int) -> None:
        """Makes a run available again."""
        bisect.insort(self._order, (self._bytes_left(run_id), run_id))

    def take_largest(self) -> int:
        """The run with the most bytes left (for a worker)."""
        return self._order.pop()[1]

    def peek_largest(self) -> int:
        """The run :meth:`take_largest` would take, left in place."""
        return self._order[-1][1]

    def take_smallest(self) -> int:
        """The run with the fewest bytes left (for this process)."""
        return self._order.pop(0)[1]

    def clear(self) -> None:
        """Hands out nothing more."""
        self._order.clear()
