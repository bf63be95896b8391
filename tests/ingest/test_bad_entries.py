"""Issue 12 §1 in one process: a bad name or a bad entry of a logdir never stops its ingest.

Names that are not valid UTF-8 are made here for real (bytes on a Linux file system); the store
is a real one, read back through SQL and through the HTTP API's data layer.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pytest
from tensorboard.compat.proto import event_pb2 as tb_event_pb2
from tensorboard.compat.proto import types_pb2 as tb_types_pb2
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from boardd.data.experiments import data_loss, runs
from boardd.store.connection import open_reader
from boardd.store.names import escape, unescape
from tests.conftest import EventRun, ingest

ALL = {"*": None}


def _write(directory: Path, steps: range, suffix: str = "") -> Path:
    """An event file of scalars ``loss`` at ``steps`` in ``directory``; its path."""
    run = EventRun(directory, suffix)
    run.scalars("loss", {s: s / 10 for s in steps})
    run.close()
    (path,) = (p for p in directory.iterdir() if p.name.endswith(suffix) and "tfevents" in p.name)
    return path


def _rename(path: Path, name: bytes) -> Path:
    """Renames ``path`` (in its directory) to these bytes, as ``os.listdir`` hands them back
    (TensorBoard's writer cannot create such a name itself)."""
    target = os.fsencode(path.parent) + b"/" + name
    os.rename(os.fsencode(path), target)
    return Path(os.fsdecode(target))


@pytest.mark.parametrize(
    "name",
    [
        "plain",
        "a%FFb",
        "%25",
        "100%",
        "x%8",
        "caf\u00e9",
        os.fsdecode(b"a\xffb"),
        os.fsdecode(b"%\xfe%FF%25\x80"),
        os.fsdecode(b"\xed\xa0\x80"),  # a UTF-8-encoded surrogate: not valid UTF-8 either
    ],
)
def test_escaped_names_round_trip_and_are_valid_text(name: str) -> None:
    stored = escape(name)
    stored.encode("utf-8")  # storable: no lone surrogate left
    assert unescape(stored) == name
    if name.isascii() and "%" not in name:
        assert stored == name


def test_escaping_tells_apart_names_that_backslashreplace_would_merge() -> None:
    names = ["a%FF", os.fsdecode(b"a\xff"), "a%25FF", "a\\xff"]
    assert len({escape(n) for n in names}) == len(names)


def test_non_utf8_run_and_file_names_are_ingested_under_escaped_names(tmp_path: Path) -> None:
    """Before: ``UnicodeEncodeError: 'utf-8' codec can't encode character '\\udcff' ...:
    surrogates not allowed`` from ensure_run, and the pass (the daemon's thread) stopped."""
    logdir = tmp_path / "logs"
    _write(logdir / "good", range(10))
    _write(logdir / "bad", range(20))
    bad_run = _rename(logdir / "bad", b"run-\xff")
    # A valid name that reads like the escaped one: both are kept, apart.
    _write(logdir / "run-%FF", range(5))
    # A file whose own name is not valid UTF-8, in a valid run.
    _rename(_write(logdir / "files", range(7)), b"events.out.tfevents.1.\xfe")
    db = tmp_path / "store.db"
    first = ingest(logdir, db, sampling=ALL)
    assert first.bytes_read > 0
    connection = open_reader(db)
    try:
        (experiment_id,) = connection.execute("SELECT id FROM experiments").fetchone()
        names = sorted(r.name for r in runs(connection, experiment_id))
        assert names == ["files", "good", "run-%25FF", "run-%FF"]
        counts = dict(
            connection.execute(
                "SELECT r.name, count(*) FROM scalar_points p JOIN series s ON s.id = p.series_id "
                "JOIN runs r ON r.id = s.run_id GROUP BY r.name"
            ).fetchall()
        )
        assert counts == {"files": 7, "good": 10, "run-%25FF": 5, "run-%FF": 20}
        paths = [str(p) for (p,) in connection.execute("SELECT path FROM files ORDER BY path")]
        # Every stored path leads back to its file.
        assert all(os.path.isfile(unescape(p)) for p in paths), paths
        assert any(p.endswith("/files/events.out.tfevents.1.%FE") for p in paths)
        assert data_loss(connection, experiment_id) == []
    finally:
        connection.close()
    # Found again by its stored name: nothing read twice, nothing deleted.
    again = ingest(logdir, db, sampling=ALL)
    assert again.bytes_read == 0
    assert again.runs_deleted == ()
    # The run grows: read on from its offset.
    staged = _write(tmp_path / "staging", range(20, 25))
    os.rename(staged, os.fsencode(bad_run / "events.out.tfevents.9"))
    assert ingest(logdir, db, sampling=ALL).bytes_read > 0
    connection = open_reader(db)
    try:
        (count,) = connection.execute(
            "SELECT count(*) FROM scalar_points p JOIN series s ON s.id = p.series_id "
            "JOIN runs r ON r.id = s.run_id WHERE r.name = 'run-%FF'"
        ).fetchone()
        assert count == 25
    finally:
        connection.close()


def _hostile_file(directory: Path, bad: list[tb_event_pb2.Event]) -> Path:
    """An event file (TensorBoard's writer): scalars ``before`` at steps 0-2, the ``bad``
    events, then scalars ``after`` at steps 0-2."""
    writer = EventFileWriter(str(directory))
    for tag, events in (("before", None), (None, bad), ("after", None)):
        if tag is None:
            for event in events or ():
                writer.add_event(event)
            continue
        for step in range(3):
            event = tb_event_pb2.Event(wall_time=1000.0 + step, step=step)
            event.summary.value.add(tag=tag, simple_value=float(step))
            writer.add_event(event)
    writer.close()
    (path,) = directory.iterdir()
    return path


def _claimed_tensor(step: int, elements: int, content: bytes = b"") -> tb_event_pb2.Event:
    """A histograms tensor whose shape claims ``elements`` floats, with no values (or only
    ``content``): a record of a few bytes."""
    event = tb_event_pb2.Event(wall_time=2000.0, step=step)
    value = event.summary.value.add(tag=f"claims-{elements}")
    value.metadata.plugin_data.plugin_name = "histograms"
    value.tensor.dtype = tb_types_pb2.DT_FLOAT
    value.tensor.tensor_shape.dim.add(size=elements)
    if content:
        value.tensor.float_val.extend(np.frombuffer(content, dtype=np.float32).tolist())
    return event


def test_values_no_summary_holds_are_data_loss_and_the_rest_is_kept(tmp_path: Path) -> None:
    """Before: a 51-byte tensor record claiming 2**28 floats failed the commit (SQLite: string
    or blob too big) and with it every pass of the experiment, for good; one claiming 2**40
    made its file unreadable (MemoryError); one event with an infinite wall time was stored
    and made every scalar answer of its tag a 500 (JSON cannot carry it)."""
    logdir = tmp_path / "logs"
    (logdir / "bombs").mkdir(parents=True)
    (logdir / "times").mkdir(parents=True)
    _hostile_file(
        logdir / "bombs",
        [_claimed_tensor(1, 2**28), _claimed_tensor(2, 2**40), _claimed_tensor(3, 2**24)],
    )
    times = []
    for step, wall in ((5, math.inf), (6, -math.inf), (7, math.nan)):
        event = tb_event_pb2.Event(wall_time=wall, step=step)
        event.summary.value.add(tag="before", simple_value=1.0)
        times.append(event)
    _hostile_file(logdir / "times", times)
    # A tensor filled in from one value within the bound is kept, as TensorFlow reads it.
    (logdir / "ok").mkdir()
    _hostile_file(logdir / "ok", [_claimed_tensor(1, 1000, np.ones(1, np.float32).tobytes())])
    _write(logdir / "other", range(100))

    db = tmp_path / "store.db"
    result = ingest(logdir, db, sampling=ALL)
    assert result.bytes_read > 0
    connection = open_reader(db)
    try:
        (experiment_id,) = connection.execute("SELECT id FROM experiments").fetchone()
        counts = dict(
            connection.execute(
                "SELECT r.name || '/' || s.tag, count(*) FROM scalar_points p "
                "JOIN series s ON s.id = p.series_id JOIN runs r ON r.id = s.run_id "
                "GROUP BY r.name, s.tag"
            ).fetchall()
        )
        assert counts == {
            "bombs/before": 3,
            "bombs/after": 3,
            "times/before": 3,
            "times/after": 3,
            "ok/before": 3,
            "ok/after": 3,
            "other/loss": 100,
        }
        wall_max = connection.execute("SELECT max(abs(wall_time)) FROM scalar_points").get
        assert math.isfinite(wall_max)
        (filled,) = connection.execute(
            "SELECT length(t.content) FROM tensor_points t JOIN series s ON s.id = t.series_id "
            "WHERE s.tag = 'claims-1000'"
        ).fetchall()
        assert filled == (4000,)
        (tensors,) = connection.execute("SELECT count(*) FROM tensor_points").fetchone()
        assert tensors == 1
        reasons = sorted((r.run, r.reason) for r in data_loss(connection, experiment_id))
        assert [run for run, _ in reasons] == ["bombs"] * 3 + ["times"] * 3, reasons
        text = " | ".join(reason for _, reason in reasons)
        assert "would take 4398046511104 bytes" in text and "would take 1073741824 bytes" in text
        assert "gives 0 values for 16777216: filled in, 67108864 bytes" in text
        assert "step 5 has an infinite wall time" in text
        assert "step 6 has an infinite wall time" in text
        assert "step 7 has a NaN wall time" in text
    finally:
        connection.close()
