"""Issue 12 §3: a pass costs what changed, not the number of runs. SQLite's own counters (its
trace hook on the writer's real connection) count every SQL statement a pass runs and the
virtual-machine steps they took (rows scanned show there), over logdirs of different sizes."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest

from boardd.ingest.ingestor import Ingestor
from boardd.store.session import WriteSession
from tests.conftest import EventRun


class Counted:
    """A store and its ingestor in this process; ``statements(fn)`` counts what ``fn`` runs."""

    def __init__(self, logdir: Path, db: Path) -> None:
        self.session = WriteSession(db, logdir)
        self.ingestor = Ingestor(self.session.writer, logdir, workers=1)
        self.count = 0
        self.steps = 0

    def _traced(self, event: dict[str, Any]) -> None:
        if event["code"] == apsw.SQLITE_TRACE_STMT:
            self.count += 1
        else:
            self.steps += int(event["stmt_status"]["SQLITE_STMTSTATUS_VM_STEP"])

    def statements(self, action: Callable[[], object]) -> int:
        """The SQL statements ``action()`` ran on the writer's connection (and in
        :attr:`steps`, the virtual-machine steps they took)."""
        self.count = self.steps = 0
        mask = apsw.SQLITE_TRACE_STMT | apsw.SQLITE_TRACE_PROFILE
        self.session.connection.trace_v2(mask, self._traced)
        try:
            action()
        finally:
            self.session.connection.trace_v2(0, None)
        return self.count

    def close(self) -> None:
        self.ingestor.close()
        self.session.close()


def _logdir(path: Path, runs: int) -> list[EventRun]:
    made = []
    for i in range(runs):
        run = EventRun(path / f"run_{i:04d}")
        run.scalars("loss", {0: 1.0, 1: 0.5})
        made.append(run)
    return made


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[dict[int, tuple[Counted, list[EventRun]]]]:
    """Two logdirs, of 30 and 300 runs, each ingested once."""
    made: dict[int, tuple[Counted, list[EventRun]]] = {}
    for runs in (30, 300):
        logdir = tmp_path / f"logs{runs}"
        writers = _logdir(logdir, runs)
        store = Counted(logdir, tmp_path / f"store{runs}.sqlite")
        store.ingestor.run_pass()
        made[runs] = (store, writers)
    yield made
    for store, writers in made.values():
        for writer in writers:
            writer.close()
        store.close()


def test_a_pass_over_unchanged_runs_costs_the_same_whatever_their_number(
    stores: dict[int, tuple[Counted, list[EventRun]]],
) -> None:
    small, large = stores[30][0], stores[300][0]
    # Nothing new: a restart's catch-up, a periodic rescan. Sizes are looked at, not the store.
    counts = {n: s.statements(s.ingestor.run_pass) for n, s in ((30, small), (300, large))}
    assert counts[300] == counts[30], counts
    assert counts[300] <= 5, counts
    # (The rows read grow with the runs, linearly: a full pass compares every file once.)
    # What a catch-up asks first (its progress total) costs the same too.
    pending = {n: s.statements(s.ingestor.pending_bytes) for n, s in ((30, small), (300, large))}
    assert pending[300] == pending[30] <= 5, pending


def test_a_pass_costs_what_changed(stores: dict[int, tuple[Counted, list[EventRun]]]) -> None:
    costs = {}
    for n, (store, writers) in stores.items():
        writers[n // 2].scalars("loss", {2: 0.25, 3: 0.125})
        before = store.ingestor.writer.counts.scalar
        costs[n] = store.statements(store.ingestor.run_pass)
        assert store.ingestor.writer.counts.scalar == before + 2
    # One run changed in each: the same statements, however many runs sit beside it.
    assert costs[300] == costs[30], costs


def test_a_notice_costs_what_changed(
    stores: dict[int, tuple[Counted, list[EventRun]]], tmp_path: Path
) -> None:
    costs = {}
    for n, (store, writers) in stores.items():
        writers[n // 3].scalars("loss", {2: 0.25})
        changed = list((tmp_path / f"logs{n}" / f"run_{n // 3:04d}").iterdir())
        before = store.ingestor.writer.counts.scalar

        def notice(store: Counted = store, changed: list[Path] = changed) -> None:
            store.ingestor.ingest_changed(changed)
            store.ingestor.flush()

        costs[n] = store.statements(notice), store.steps
        assert store.ingestor.writer.counts.scalar == before + 1
    # Statements and the rows they went through: a notice looks up its own run and files.
    assert costs[300] == costs[30], costs


#: Directories ``os.scandir`` opened, and paths opened, while :data:`_SCANNING` is on
#: (CPython's audit events: a hook cannot be removed, so it records only while asked to).
_SCANNED: list[str] = []
_OPENED: list[str] = []
_SCANNING: list[bool] = []


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if not _SCANNING:
        return
    if event == "os.scandir":
        _SCANNED.append(os.fspath(args[0]))
    elif event == "open" and isinstance(args[0], (str, bytes, os.PathLike)):
        _OPENED.append(os.fsdecode(args[0]))


sys.addaudithook(_audit)


def test_a_catch_up_walks_the_logdir_once(
    stores: dict[int, tuple[Counted, list[EventRun]]], tmp_path: Path
) -> None:
    # The daemon sizes a catch-up (its progress total), then reads: one walk of the logdir
    # between them, not two (at 10,000 runs a walk is a tenth of a second or more).
    store, writers = stores[30]
    writers[3].scalars("loss", {2: 0.25})
    _SCANNED.clear()
    _SCANNING.append(True)
    try:
        assert store.ingestor.pending_bytes() > 0
        store.ingestor.run_pass()
    finally:
        _SCANNING.clear()
    logdir = os.fspath(tmp_path / "logs30")
    walked = [d for d in _SCANNED if d == logdir]
    assert len(walked) == 1, _SCANNED
    assert len([d for d in _SCANNED if d.startswith(logdir + os.sep)]) == 30
    assert store.ingestor.writer.counts.scalar >= 1
    # The next pass walks anew (what was found is taken once).
    _SCANNING.append(True)
    try:
        store.ingestor.run_pass()
    finally:
        _SCANNING.clear()
    assert len([d for d in _SCANNED if d == logdir]) == 2


def test_a_new_file_is_opened_three_times(tmp_path: Path) -> None:
    # At 10,000 runs of one small file, every system call per file is a cost of the catch-up:
    # a new file is opened for its first bytes (its identity), then by the reader (once, and
    # again at its end: growth on NFS is seen after a new open), whose open file also gives the
    # bytes before each committed offset (not one more open per commit).
    logdir = tmp_path / "logs"
    writers = _logdir(logdir, 12)
    store = Counted(logdir, tmp_path / "store.sqlite")
    _OPENED.clear()
    _SCANNING.append(True)
    try:
        store.ingestor.run_pass()
    finally:
        _SCANNING.clear()
    files = [os.fspath(f) for f in logdir.rglob("*tfevents*")]
    assert len(files) == 12
    opened = [p for p in _OPENED if p in files]
    assert sorted(opened) == sorted(files * 3), opened
    assert store.ingestor.writer.counts.scalar == 24
    for writer in writers:
        writer.close()
    store.close()
