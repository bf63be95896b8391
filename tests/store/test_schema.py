"""Schema migrations: an older store is brought up to date in place, its contents intact."""

from __future__ import annotations

from pathlib import Path

import apsw

from boardd.store.connection import PAGE_SIZE, open_reader
from boardd.store.queries import summary
from boardd.store.schema import SCHEMA_VERSION
from tests.conftest import ingest
from tests.store.conftest import LiveWriter, snapshot, write_mixed

SMALL = {"scalars": 40, "histograms": 15, "images": 3, "text": 5}


def _counted(db: Path) -> dict[str, int]:
    """The summary's point counts, counted row by row."""
    connection = open_reader(db)
    try:

        def count(sql: str) -> int:
            return int(connection.execute(sql).get)

        return {
            "scalar": count("SELECT count(*) FROM scalar_points"),
            "tensor": count("SELECT count(*) FROM tensor_points"),
            "blob_sequence": count(
                "SELECT count(*) FROM (SELECT DISTINCT series_id, step FROM blob_entries)"
            ),
        }
    finally:
        connection.close()


def _summarized(db: Path) -> dict[str, int]:
    connection = open_reader(db)
    try:
        found = summary(connection)
    finally:
        connection.close()
    return {
        "scalar": found.scalar_points,
        "tensor": found.tensor_points,
        "blob_sequence": found.blob_sequence_points,
    }


def _write(logdir: Path) -> None:
    writer = LiveWriter(logdir / "train")
    write_mixed(writer, range(300), seed=3)
    # A restart from a checkpoint: steps written again (preemption drops the orphaned tail).
    write_mixed(writer, range(200, 260), seed=4)
    writer.close()


def test_summary_counts_what_the_store_holds(tmp_path: Path) -> None:
    logdir, db = tmp_path / "logs", tmp_path / "store.db"
    _write(logdir)
    ingest(logdir, db, sampling=SMALL)
    counted = _counted(db)
    assert all(counted.values())
    assert _summarized(db) == counted
    assert snapshot(db)["miscounted"] == []


def test_store_of_schema_1_is_migrated_with_its_counts(tmp_path: Path) -> None:
    logdir, db = tmp_path / "logs", tmp_path / "store.db"
    _write(logdir)
    ingest(logdir, db, sampling=SMALL)
    before = snapshot(db)
    # Back to schema 1, as an older boardd left it: no per-series counts.
    connection = apsw.Connection(str(db))
    connection.execute("ALTER TABLE series DROP COLUMN kept")
    connection.execute("ALTER TABLE files DROP COLUMN tail")
    connection.execute("ALTER TABLE files DROP COLUMN version")
    connection.execute("ALTER TABLE series DROP COLUMN rewritten")
    connection.execute("DROP INDEX IF EXISTS files_by_run")
    connection.execute("DROP TABLE hparams")
    connection.execute("DROP TABLE scalar_blocks")
    connection.pragma("user_version", 1)
    connection.close()
    # The next writer migrates it (same fingerprint otherwise: no --rebuild needed).
    ingest(logdir, db, sampling=SMALL)
    connection = open_reader(db)
    assert connection.pragma("user_version") == SCHEMA_VERSION == 8
    connection.close()
    assert snapshot(db) == before
    assert _summarized(db) == _counted(db)


def test_new_stores_get_large_pages_and_old_ones_keep_theirs(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    _write(logdir)
    new, old = tmp_path / "new.db", tmp_path / "old.db"
    ingest(logdir, new, sampling=SMALL)
    # A store created with SQLite's default page size (as boardd did before).
    connection = apsw.Connection(str(old))
    connection.pragma("page_size", 4096)
    connection.pragma("journal_mode", "wal")
    connection.close()
    ingest(logdir, old, sampling=SMALL)
    for db, size in ((new, PAGE_SIZE), (old, 4096)):
        connection = open_reader(db)
        try:
            assert connection.pragma("page_size") == size
        finally:
            connection.close()
    assert snapshot(new, logdir) == snapshot(old, logdir)
