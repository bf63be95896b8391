"""Issue 12 §1 in one process: a bad name or a bad entry of a logdir never stops its ingest.

Names that are not valid UTF-8 are made here for real (bytes on a Linux file system); the store
is a real one, read back through SQL and through the HTTP API's data layer.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

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
