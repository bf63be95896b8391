"""Tests of boardd.store.export: a consistent, lease-free copy, also while a writer is writing."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import apsw
import numpy as np
import pytest

from boardd.store.blobs import put_blob, read_blob
from boardd.store.connection import immediate, open_reader, open_writer
from boardd.store.errors import ExportError, StoreOpenError
from boardd.store.export import ExportResult, export_store
from boardd.store.lease import current_holder
from boardd.store.schema import APPLICATION_ID, SCHEMA_VERSION


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "store.db"


@pytest.fixture
def writer(db: Path) -> Iterator[apsw.Connection]:
    connection = open_writer(db)
    yield connection
    connection.close()


def wal_files() -> list[str]:
    """The files beside the source store while its writer has it open."""
    return ["store.db-shm", "store.db-wal"]


def populate(connection: apsw.Connection, *, blob_bytes: int = 3 * 2**20) -> None:
    """A small store through plain SQL on the real schema: runs, series, points, blobs."""
    rng = np.random.default_rng(1)
    with immediate(connection):
        connection.execute(
            "INSERT INTO lease (id, owner, host, pid, started, heartbeat, expiry_seconds) "
            "VALUES (1, 'owner-a', 'host-a', 4242, 1.0, 2.0, 30.0)"
        )
        connection.execute("INSERT INTO meta (key, value) VALUES ('fingerprint', 'abc')")
        connection.execute(
            "INSERT INTO experiments (id, name, logdir, creation_time) "
            "VALUES (1, 'exp', '/logs', 100.0)"
        )
        for run_id, name in ((1, "train"), (2, "eval")):
            connection.execute(
                "INSERT INTO runs (id, experiment_id, name, start_time) VALUES (?, 1, ?, 100.0)",
                (run_id, name),
            )
            connection.execute(
                "INSERT INTO files (run_id, path, size, consumed) VALUES (?, ?, 1000, 1000)",
                (run_id, f"/logs/{name}/events.out.tfevents.1"),
            )
        series = [(1, 1, "loss", "scalars", 1), (2, 2, "loss", "scalars", 1)]
        series += [(3, 1, "images", "images", 3)]
        for series_id, run_id, tag, plugin, data_class in series:
            connection.execute(
                "INSERT INTO series (id, run_id, tag, plugin_name, plugin_content, data_class, "
                "display_name, description) VALUES (?, ?, ?, ?, x'', ?, '', '')",
                (series_id, run_id, tag, plugin, data_class),
            )
        connection.executemany(
            "INSERT INTO scalar_points (series_id, step, wall_time, value) VALUES (?, ?, ?, ?)",
            [
                (series_id, step, 100.0 + step, float(value))
                for series_id in (1, 2)
                for step, value in enumerate(rng.normal(size=500))
            ],
        )
        for step in range(3):
            data = rng.integers(0, 256, blob_bytes, dtype=np.uint8).tobytes()
            blob_id = put_blob(connection, data)
            connection.execute(
                "INSERT INTO blob_entries (series_id, step, idx, wall_time, blob_id) "
                "VALUES (3, ?, 0, ?, ?)",
                (step, 100.0 + step, blob_id),
            )


def table_names(connection: apsw.Connection) -> list[str]:
    return [
        str(name)
        for (name,) in connection.execute(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
            "ORDER BY name"
        )
    ]


def table_rows(connection: apsw.Connection, table: str) -> list[tuple[object, ...]]:
    return sorted(
        (tuple(row) for row in connection.execute(f"SELECT * FROM {table}")),
        key=repr,
    )


def test_export_equals_source_without_the_lease(
    db: Path, writer: apsw.Connection, tmp_path: Path
) -> None:
    populate(writer)
    out = tmp_path / "exports" / "copy.db"
    out.parent.mkdir()
    calls: list[tuple[int, int]] = []

    started = time.monotonic()
    result = export_store(db, out, progress=lambda done, total: calls.append((done, total)))
    elapsed = time.monotonic() - started

    assert isinstance(result, ExportResult)
    assert result.path == out
    assert result.bytes == out.stat().st_size
    assert 0 < result.seconds <= elapsed  # the export's own duration, not a clock reading
    assert sorted(p.name for p in out.parent.iterdir()) == ["copy.db"]  # one file, no leftovers

    copy = open_reader(out)  # checks application_id and user_version
    try:
        assert copy.pragma("application_id") == APPLICATION_ID
        assert copy.pragma("user_version") == SCHEMA_VERSION
        assert copy.pragma("journal_mode") == "delete"
        assert result.pages == copy.pragma("page_count")
        assert result.bytes == result.pages * copy.pragma("page_size")
        assert table_names(copy) == table_names(writer)
        for table in table_names(writer):
            if table not in ("lease", "meta"):
                assert table_rows(copy, table) == table_rows(writer, table), table
        # The copy is another store: same meta but for a fresh store id.
        meta_copy = dict(table_rows(copy, "meta"))
        meta_source = dict(table_rows(writer, "meta"))
        assert meta_copy.pop("store_id") != meta_source.pop("store_id")
        assert meta_copy == meta_source
        assert table_rows(copy, "lease") == []
        assert current_holder(copy) is None
        assert len(table_rows(copy, "scalar_points")) == 1000
        for (blob_id,) in writer.execute("SELECT blob_id FROM blob_entries"):
            assert read_blob(copy, blob_id) == read_blob(writer, blob_id)
        assert copy.pragma("quick_check") == "ok"
    finally:
        copy.close()

    # The source keeps its writer's lease.
    holder = current_holder(writer)
    assert holder is not None and holder.owner == "owner-a"

    # Progress: pages done rise to the total, which does not change (one snapshot).
    assert calls and calls[-1] == (result.pages, result.pages)
    assert {total for _, total in calls} == {result.pages}
    assert [done for done, _ in calls] == sorted(done for done, _ in calls)
    assert len(calls) == -(-result.pages // 256)


def test_a_writer_can_open_the_copy(db: Path, writer: apsw.Connection, tmp_path: Path) -> None:
    populate(writer, blob_bytes=1000)
    out = tmp_path / "copy.db"
    export_store(db, out)

    again = open_writer(out)
    try:
        assert current_holder(again) is None
        with immediate(again):
            again.execute("INSERT INTO meta (key, value) VALUES ('touched', 'yes')")
        assert again.execute("SELECT count(*) FROM scalar_points").get == 1000
    finally:
        again.close()


WRITER_SCRIPT = textwrap.dedent(
    """
    import sys, time
    from boardd.store.connection import immediate, open_writer

    db, seconds = sys.argv[1], float(sys.argv[2])
    connection = open_writer(db)
    n = 0
    slowest = 0.0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        began = time.monotonic()
        with immediate(connection):
            for _ in range(5):
                n += 1
                connection.execute(
                    "INSERT INTO scalar_points (series_id, step, wall_time, value) "
                    "VALUES (1, ?, ?, ?)",
                    (n, time.time(), float(n)),
                )
            connection.execute(
                "INSERT INTO run_events (run_id, kind, step, wall_time, detail) "
                "VALUES (1, 'commit', ?, ?, '')",
                (n, time.time()),
            )
            connection.execute("UPDATE series SET last_step = ? WHERE id = 1", (n,))
            connection.execute("UPDATE lease SET heartbeat = ? WHERE id = 1", (time.time(),))
        slowest = max(slowest, time.monotonic() - began)
        if n == 5:
            print("writing", flush=True)
        time.sleep(0.0005)
    connection.close()
    print(n, slowest, flush=True)
    """
)


def scalar_count(db: Path) -> int:
    connection = open_reader(db)
    try:
        return int(connection.execute("SELECT count(*) FROM scalar_points").get)
    finally:
        connection.close()


@pytest.mark.slow
def test_export_while_another_process_writes(
    db: Path, writer: apsw.Connection, tmp_path: Path
) -> None:
    # About 16 MiB of blobs, so that the export takes many steps while the writer commits.
    with immediate(writer):
        writer.execute("INSERT INTO experiments VALUES (1, 'exp', '/logs', 0.0)")
        writer.execute("INSERT INTO runs (id, experiment_id, name) VALUES (1, 1, 'train')")
        writer.execute(
            "INSERT INTO series (id, run_id, tag, plugin_name, plugin_content, data_class, "
            "display_name, description) VALUES (1, 1, 'loss', 'scalars', x'', 1, '', '')"
        )
        writer.execute(
            "INSERT INTO lease VALUES (1, 'owner-w', 'host-w', 1, 0.0, 0.0, 30.0)",
        )
        rng = np.random.default_rng(2)
        for _ in range(16):
            put_blob(writer, rng.integers(0, 256, 2**20, dtype=np.uint8).tobytes())
    writer.close()

    process = subprocess.Popen(
        [sys.executable, "-c", WRITER_SCRIPT, str(db), "4"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "writing"
        before = scalar_count(db)
        seen: list[int] = []

        def progress(done: int, total: int) -> None:
            # Slow the copy down, and watch the source grow while it runs.
            if not seen or done == total:
                seen.append(scalar_count(db))
            assert process.poll() is None, "the writer stopped before the export finished"
            time.sleep(0.002)

        out = tmp_path / "copy.db"
        result = export_store(db, out, progress=progress, pages_per_step=16)
        stdout, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0, stderr
    assert stderr == ""
    written, slowest = stdout.split()
    assert result.pages > 16 * 256 // 16  # many steps

    copy = open_reader(out)
    try:
        assert copy.pragma("quick_check") == "ok"
        steps = [int(s) for (s,) in copy.execute("SELECT step FROM scalar_points ORDER BY step")]
        last = len(steps)
        # A consistent prefix: rows 1..N, no gap, whole transactions only, and every table
        # that the same transactions touched agrees on N.
        assert steps == list(range(1, last + 1))
        assert last % 5 == 0
        assert copy.execute("SELECT max(step) FROM run_events").get == last
        assert copy.execute("SELECT count(*) FROM run_events").get == last // 5
        assert copy.execute("SELECT last_step FROM series WHERE id = 1").get == last
        assert table_rows(copy, "lease") == []
        assert copy.execute("SELECT count(*) FROM blobs").get == 16
    finally:
        copy.close()

    # The copy is the state when the export began: not older, and the writer kept going
    # while the copy ran (the backup did not restart, nor block the writer).
    assert before <= last <= seen[0] < seen[-1] < int(written)
    assert float(slowest) < 1.0, f"a writer commit took {float(slowest):.2f} s during the export"


def test_refuses_an_existing_output(db: Path, writer: apsw.Connection, tmp_path: Path) -> None:
    populate(writer, blob_bytes=1000)
    out = tmp_path / "copy.db"
    out.write_bytes(b"precious")

    with pytest.raises(ExportError, match=r"already exists.*--force"):
        export_store(db, out)
    assert out.read_bytes() == b"precious"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy.db", "store.db", *wal_files()]

    export_store(db, out, overwrite=True)
    copy = open_reader(out)
    try:
        assert copy.execute("SELECT count(*) FROM scalar_points").get == 1000
    finally:
        copy.close()


def test_refuses_to_overwrite_a_database_in_use(
    db: Path, writer: apsw.Connection, tmp_path: Path
) -> None:
    populate(writer, blob_bytes=1000)
    other = tmp_path / "other.db"
    in_use = open_writer(other)
    try:
        with immediate(in_use):
            in_use.execute("INSERT INTO meta VALUES ('k', 'v')")
        assert (tmp_path / "other.db-wal").stat().st_size > 0
        with pytest.raises(ExportError, match="in use"):
            export_store(db, other, overwrite=True)
        assert in_use.execute("SELECT value FROM meta WHERE key = 'k'").get == "v"
    finally:
        in_use.close()


def test_refuses_to_export_onto_itself(db: Path, writer: apsw.Connection) -> None:
    populate(writer, blob_bytes=10)
    with pytest.raises(ExportError, match="onto itself"):
        export_store(db, db, overwrite=True)
    assert writer.execute("SELECT count(*) FROM scalar_points").get == 1000


def test_bad_source_or_target(db: Path, writer: apsw.Connection, tmp_path: Path) -> None:
    with pytest.raises(StoreOpenError, match="no store at"):
        export_store(tmp_path / "absent.db", tmp_path / "copy.db")
    with pytest.raises(ExportError, match="does not exist; create it first"):
        export_store(db, tmp_path / "no" / "such" / "copy.db")
    with pytest.raises(ExportError, match="is a directory"):
        export_store(db, tmp_path)
    not_a_store = tmp_path / "plain.db"
    plain = apsw.Connection(str(not_a_store))
    plain.execute("CREATE TABLE t (x)")
    plain.close()
    with pytest.raises(StoreOpenError, match="not a boardd store"):
        export_store(not_a_store, tmp_path / "copy.db")
    assert not (tmp_path / "copy.db").exists()


def test_an_exception_from_progress_cancels_and_cleans_up(
    db: Path, writer: apsw.Connection, tmp_path: Path
) -> None:
    populate(writer)
    out = tmp_path / "copy.db"

    def cancel(done: int, total: int) -> None:
        if done > 100:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        export_store(db, out, progress=cancel, pages_per_step=50)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store.db", *wal_files()]
    # The source is untouched and still writable: the export left no lock behind.
    with immediate(writer):
        writer.execute("DELETE FROM scalar_points WHERE series_id = 2")
    assert writer.execute("SELECT count(*) FROM scalar_points").get == 500


def test_force_never_replaces_a_device_a_fifo_or_a_symbolic_link(
    db: Path, writer: apsw.Connection, tmp_path: Path
) -> None:
    """Before: ``--force --out /dev/null`` replaced the device with a file (a FIFO stands in
    for the device here: the same check, and a regression cannot break the machine)."""
    populate(writer, blob_bytes=10)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(ExportError, match="not a regular file"):
        export_store(db, fifo, overwrite=True)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    precious = tmp_path / "precious.db"
    precious.write_bytes(b"precious")
    link = tmp_path / "link.db"
    link.symlink_to(precious)
    with pytest.raises(ExportError, match="symbolic link"):
        export_store(db, link, overwrite=True)
    assert link.is_symlink() and precious.read_bytes() == b"precious"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
