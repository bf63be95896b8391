"""The write transaction's error path: the real error surfaces, the connection stays usable."""

from __future__ import annotations

from pathlib import Path

import apsw
import pytest

from boardd.store.connection import immediate


def _store(tmp_path: Path) -> apsw.Connection:
    connection = apsw.Connection(str(tmp_path / "store.sqlite"))
    connection.pragma("journal_mode", "wal")
    connection.execute("CREATE TABLE t (x BLOB)")
    return connection


def test_a_full_store_raises_full_error_and_recovers_once_space_is_freed(tmp_path: Path) -> None:
    """SQLite's own page limit gives a real SQLITE_FULL, after which SQLite has already rolled
    the transaction back: a second ROLLBACK used to replace FullError with "cannot rollback -
    no transaction is active"."""
    connection = _store(tmp_path)
    try:
        pages = int(connection.pragma("page_count"))
        connection.pragma("max_page_count", pages + 1)
        with pytest.raises(apsw.FullError), immediate(connection):
            connection.execute("INSERT INTO t VALUES (randomblob(1000000))")
        assert not connection.in_transaction
        connection.pragma("max_page_count", 2**30)  # "space freed"
        with immediate(connection):
            connection.execute("INSERT INTO t VALUES (randomblob(1000000))")
        assert connection.execute("SELECT count(*) FROM t").get == 1
    finally:
        connection.close()


def test_an_error_in_the_body_rolls_back_what_it_wrote(tmp_path: Path) -> None:
    connection = _store(tmp_path)
    try:
        with pytest.raises(KeyError), immediate(connection):
            connection.execute("INSERT INTO t VALUES (1)")
            raise KeyError("boom")
        assert not connection.in_transaction
        assert connection.execute("SELECT count(*) FROM t").get == 0
    finally:
        connection.close()


def test_a_commit_that_cannot_take_its_lock_leaves_no_transaction_open(tmp_path: Path) -> None:
    """A COMMIT that fails (here SQLITE_BUSY: a reader's lock) must not leave the writer inside
    a transaction that the next BEGIN would trip over."""
    connection = _store(tmp_path)
    connection.execute("PRAGMA journal_mode = delete")
    connection.set_busy_timeout(0)
    reader = apsw.Connection(str(tmp_path / "store.sqlite"))
    try:
        connection.execute("INSERT INTO t VALUES (0)")
        # A reader in the middle of a read holds a SHARED lock: in rollback-journal mode the
        # writer cannot take the EXCLUSIVE lock its COMMIT needs.
        cursor = reader.execute("SELECT x FROM t")
        next(cursor)
        with pytest.raises(apsw.BusyError), immediate(connection):
            connection.execute("INSERT INTO t VALUES (1)")
        assert not connection.in_transaction
        cursor.close()
        with immediate(connection):
            connection.execute("INSERT INTO t VALUES (2)")
        assert [x for (x,) in connection.execute("SELECT x FROM t ORDER BY x")] == [0, 2]
    finally:
        reader.close()
        connection.close()
