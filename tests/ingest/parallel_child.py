"""Runs one parallel ingest in a fresh process, for tests/ingest/test_parallel.py.

A test process may run threads of its own (tensorboardX's writer threads outlive their
writers), and decode workers are forked only from a single-threaded process, as in
``boardd ingest``. Prints a JSON object: the worker processes seen and whether they were
forked (a forked worker runs this very command line; a spawned one runs boardd.ingest.worker).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from boardd.ingest.parallel import can_fork


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def main(argv: list[str]) -> int:
    """``parallel_child LOGDIR DB WORKERS FORK(0|1)``."""
    import os

    from tests.ingest.test_parallel import _children, _ingest

    logdir, db, workers, fork = Path(argv[0]), Path(argv[1]), int(argv[2]), argv[3] == "1"
    single = can_fork()
    mine = _cmdline(os.getpid())
    seen: dict[int, bool] = {}

    def progress(done: int, total: int) -> None:
        for pid in _children():
            seen.setdefault(pid, _cmdline(pid) == mine)

    _ingest(logdir, db, workers, fork=fork, progress=progress)
    report = {"single_thread": single, "workers": len(seen), "forked": sorted(set(seen.values()))}
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
