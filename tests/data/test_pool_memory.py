"""The read pool's memory: one connection per worker thread, each with a small page cache, so
that many clients on many threads cannot grow SQLite's caches to SQLite's default 2 MiB per
thread and store (issue 12 §2)."""

from __future__ import annotations

import gc
import threading
from pathlib import Path

import apsw
import pytest
from tensorboard.compat.proto import event_pb2
from tensorboard.summary.writer.record_writer import RecordWriter

from boardd.data.connections import ReadPool
from boardd.store.connection import READER_CACHE_KIB
from tests.conftest import ingest

THREADS = 8
#: Enough rows that a full read touches several MiB of pages (more than SQLite's default cache).
POINTS = 150_000


def _big_logdir(root: Path) -> Path:
    run = root / "logs" / "run"
    run.mkdir(parents=True)
    with open(run / "events.out.tfevents.1700000000.host", "wb") as f:
        records = RecordWriter(f)
        records.write(
            event_pb2.Event(wall_time=1.0, file_version="brain.Event:2").SerializeToString()
        )
        for step in range(POINTS):
            event = event_pb2.Event(step=step, wall_time=1.0 + step)
            event.summary.value.add(tag="loss", simple_value=step * 0.5)
            records.write(event.SerializeToString())
    return root / "logs"


def _sqlite_bytes() -> int:
    used, _ = apsw.status(apsw.SQLITE_STATUS_MEMORY_USED)
    return int(used)


def test_read_connections_keep_small_page_caches(tmp_path: Path) -> None:
    db = tmp_path / "big.sqlite"
    ingest(_big_logdir(tmp_path), db, {"scalars": None})
    pool = ReadPool(db)
    rows: list[int] = []

    def read_everything() -> None:
        def points(c: apsw.Connection) -> int:
            tail = sum(1 for _ in c.execute("SELECT * FROM scalar_points"))
            return tail + sum(n for n, _ in c.execute("SELECT count, data FROM scalar_blocks"))

        rows.append(pool.call(points))

    try:
        before = _sqlite_bytes()
        for _ in range(THREADS):  # one thread after another: each opens its own connection
            thread = threading.Thread(target=read_everything)
            thread.start()
            thread.join()
        grown = _sqlite_bytes() - before
    finally:
        pool.close()
    assert rows == [POINTS] * THREADS
    # Each connection keeps at most its page cache and its schema (a few hundred KiB):
    # SQLite's default cache would hold ~2 MiB of this table per thread.
    per_connection = grown / THREADS
    assert per_connection <= (READER_CACHE_KIB + 512) * 1024, per_connection


def test_a_connection_goes_with_its_thread(tmp_path: Path) -> None:
    # anyio retires a worker thread idle for 10 s and starts another for the next burst of
    # requests; each new thread opens a connection. One kept after its thread ended held its
    # page cache and prepared statements for good: a soak's RSS crept up by ~0.4 MiB a minute.
    db = tmp_path / "s.sqlite"
    ingest(_big_logdir(tmp_path), db, {"scalars": 10})
    pool = ReadPool(db)
    opened: list[apsw.Connection] = []
    try:
        for _ in range(5):
            thread = threading.Thread(target=lambda: opened.append(pool.call(lambda c: c)))
            thread.start()
            thread.join()
            del thread
        gc.collect()
        assert len(set(map(id, opened))) == 5
        for connection in opened:
            with pytest.raises(apsw.ConnectionClosedError):
                connection.execute("SELECT 1")
        # This thread's own connection stays open while the thread lives.
        mine = pool.call(lambda c: c)
        assert mine.execute("SELECT 1").get == 1
    finally:
        pool.close()
