"""The write transaction's error path: the real error surfaces, the connection stays usable."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import apsw
import pytest

from boardd.store.connection import immediate
from boardd.store.session import WriteSession


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


def test_an_interrupt_as_begin_returns_leaves_no_transaction_open(tmp_path: Path) -> None:
    """Ctrl-C can land as BEGIN returns (a KeyboardInterrupt raised before the body): the
    transaction BEGIN opened is rolled back, so the session's closing checkpoint can run and
    the interrupt, not "database table is locked", is what the command reports."""
    connection = _store(tmp_path)

    def interrupt(frame: Any, event: str, arg: Any) -> None:
        # Raised from the profiler as apsw's execute() returns: exactly where a signal
        # handler's KeyboardInterrupt surfaces.
        if event == "c_return" and getattr(arg, "__name__", "") == "execute":
            sys.setprofile(None)
            raise KeyboardInterrupt

    try:
        with pytest.raises(KeyboardInterrupt):
            sys.setprofile(interrupt)
            try:
                with immediate(connection):
                    pytest.fail("the body ran")
            finally:
                sys.setprofile(None)
        assert not connection.in_transaction
        connection.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_TRUNCATE)
    finally:
        connection.close()


def test_a_session_closed_inside_a_transaction_keeps_what_was_committed(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    logdir.mkdir()
    db = tmp_path / "store.sqlite"
    session = WriteSession(db, logdir)
    session.connection.execute("CREATE TABLE kept (x)")
    session.connection.execute("INSERT INTO kept VALUES (1)")
    session.connection.execute("BEGIN IMMEDIATE")  # interrupted in the middle of the next
    session.connection.execute("INSERT INTO kept VALUES (2)")
    session.close(success=False)
    with WriteSession(db, logdir) as again:
        assert [x for (x,) in again.connection.execute("SELECT x FROM kept")] == [1]
