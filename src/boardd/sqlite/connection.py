"""The rules of a boardd SQLite connection, and its write transaction.

Each rule is one function taking the connection, so that an opener lists the ones it applies.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import apsw


def use_busy_timeout(connection: apsw.Connection, milliseconds: int) -> None:
    """Wait up to ``milliseconds`` for a lock instead of failing at once."""
    connection.set_busy_timeout(milliseconds)


def no_double_quoted_strings(connection: apsw.Connection) -> None:
    """Double quotes are for identifiers only (https://www.sqlite.org/quirks.html#dblquote)."""
    connection.config(apsw.SQLITE_DBCONFIG_DQS_DML, 0)
    connection.config(apsw.SQLITE_DBCONFIG_DQS_DDL, 0)


def use_wal(connection: apsw.Connection) -> None:
    """Write-ahead logging: readers never block the writer, and the writer never blocks them."""
    connection.pragma("journal_mode", "wal")


def use_normal_sync(connection: apsw.Connection) -> None:
    """In WAL mode, NORMAL loses no committed data on a crash of the process, only (at most)
    the last commits on a power loss, and avoids an fsync per commit
    (https://www.sqlite.org/pragma.html#pragma_synchronous)."""
    connection.pragma("synchronous", "NORMAL")


def int_pragma(connection: apsw.Connection, name: str) -> int:
    """An integer pragma's value (0 when SQLite answers nothing)."""
    value = connection.pragma(name)
    return int(value) if value is not None else 0


@contextlib.contextmanager
def immediate(connection: apsw.Connection) -> Iterator[apsw.Connection]:
    """A write transaction that takes the write lock at BEGIN, so a read-then-write inside it
    cannot race another writer (https://www.sqlite.org/lang_transaction.html#immediate).

    On an error (in the body or at COMMIT) what is still open is rolled back and the error
    itself is raised. SQLite has often rolled back already: after SQLITE_FULL, SQLITE_IOERR or
    SQLITE_NOMEM it may end the transaction itself
    (https://www.sqlite.org/lang_transaction.html#response_to_errors_within_a_transaction),
    and a ROLLBACK then would raise "no transaction is active" in place of the real error.
    A COMMIT that failed (SQLITE_BUSY, SQLITE_FULL) may leave the transaction open: it is
    rolled back here, so the connection can begin the next one.
    """
    try:
        # Inside the try: a KeyboardInterrupt raised as BEGIN returns (Ctrl-C) would otherwise
        # leave the transaction open, and a later checkpoint would then fail with "database
        # table is locked" in place of the interrupt.
        connection.execute("BEGIN IMMEDIATE")
        yield connection
        connection.execute("COMMIT")
    except BaseException as exc:
        if connection.in_transaction:
            try:
                connection.execute("ROLLBACK")
            except apsw.Error as rollback_error:
                exc.add_note(f"and the rollback failed too: {rollback_error}")
        raise
