"""A local event file rewritten in place at the same size (``cp`` of a re-run over the logdir
keeps the inode): its new modification time makes the next pass look at its first bytes and
at those before the read offset, so the new values are read, live and across a restart."""

from __future__ import annotations

import io
import os
from pathlib import Path

from tensorboard.compat.proto import event_pb2
from tensorboard.summary.writer.record_writer import RecordWriter

from boardd.store.connection import open_reader
from tests.conftest import ingest

ALL = {"*": None}
NAME = "events.out.tfevents.1700000000.host"


def _event_file(values: dict[int, float], wall: float = 1.0) -> bytes:
    """An event file's bytes: a file_version event, then scalar ``loss`` at these steps (wall
    times fixed, so two files differ only where their values do)."""
    buffer = io.BytesIO()
    writer = RecordWriter(buffer)
    writer.write(event_pb2.Event(wall_time=wall, file_version="brain.Event:2").SerializeToString())
    for step, value in values.items():
        event = event_pb2.Event(wall_time=wall + step, step=step)
        event.summary.value.add(tag="loss", simple_value=value)
        writer.write(event.SerializeToString())
    return buffer.getvalue()


def _rewrite_in_place(path: Path, data: bytes) -> None:
    inode = path.stat().st_ino
    with open(path, "r+b") as f:  # as cp does: same inode
        f.write(data)
    assert path.stat().st_ino == inode and path.stat().st_size == len(data)
    # A modification time of its own even on a coarse clock.
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000))


def _values(db: Path) -> dict[int, float]:
    connection = open_reader(db)
    try:
        return dict(
            connection.execute("SELECT step, value FROM scalar_points ORDER BY step").fetchall()
        )
    finally:
        connection.close()


def test_a_file_rewritten_in_place_at_the_same_size_is_read_again(tmp_path: Path) -> None:
    logdir, db = tmp_path / "logs", tmp_path / "store.db"
    (logdir / "run").mkdir(parents=True)
    path = logdir / "run" / NAME
    first = _event_file({s: float(s) for s in range(100)})
    path.write_bytes(first)
    ingest(logdir, db, sampling=ALL)
    assert _values(db) == {s: float(s) for s in range(100)}

    # The same first bytes, the last record changed (its value and CRC): the bytes before
    # the read offset tell.
    tail_changed = _event_file({s: 999.0 if s == 99 else float(s) for s in range(100)})
    assert len(tail_changed) == len(first) and tail_changed[:1024] == first[:1024]
    _rewrite_in_place(path, tail_changed)
    assert ingest(logdir, db, sampling=ALL).bytes_read == len(first)
    assert _values(db) == {s: 999.0 if s == 99 else float(s) for s in range(100)}

    # Other first bytes (another run's file written over it): read again from the start.
    head_changed = _event_file({s: s + 0.5 for s in range(100)}, wall=2.0)
    assert len(head_changed) == len(first)
    _rewrite_in_place(path, head_changed)
    ingest(logdir, db, sampling=ALL)
    assert _values(db) == {s: s + 0.5 for s in range(100)}

    # Touched, unchanged: looked at (two small reads), nothing read again.
    _rewrite_in_place(path, head_changed)
    assert ingest(logdir, db, sampling=ALL).bytes_read == 0
    assert _values(db) == {s: s + 0.5 for s in range(100)}
