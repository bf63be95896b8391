"""Is a store file intact? The checks, and what is done with a damaged one.

A damaged store is never served as data: SQLite reads a damaged b-tree page without an error
as often as with one (a series cut short, answered 200), so the writer checks the whole file
when it opens it (:func:`check_open`), and readers that meet SQLite's corruption errors say
so (:mod:`boardd.store.damage`). A damaged file is set aside under a name of its own (kept for
inspection) and the store is rebuilt from the logdir, which holds the data.
"""

from __future__ import annotations

import contextlib
import os
import time
from pathlib import Path

import apsw

from boardd.store.errors import BlockDamagedError

#: Errors that mean the file itself is damaged (or is no database at all): SQLite's, and a block
#: of scalar points whose bytes are not what was written (store/blocks.py).
DAMAGED: tuple[type[Exception], ...] = (apsw.CorruptError, apsw.NotADBError, BlockDamagedError)

#: How many of quick_check's findings a message quotes.
FINDINGS_QUOTED = 3


def is_damage(exc: BaseException | None) -> bool:
    """Whether ``exc``, or an exception it was raised from, is SQLite's corruption error."""
    seen = 0
    while exc is not None and seen < 8:
        if isinstance(exc, DAMAGED):
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


def file_size_problem(path: str | os.PathLike[str]) -> str | None:
    """What is wrong with the file's size, read from its header, or None: a file shorter than
    the pages its header counts (truncated), or not a whole number of pages.

    Only checked while no write-ahead log with content lies beside it: the log may hold pages
    the main file does not have yet (https://www.sqlite.org/fileformat.html#in_header_database_size).
    """
    target = Path(path)
    wal = Path(f"{target}-wal")
    try:
        if wal.exists() and wal.stat().st_size > 0:
            return None
        size = target.stat().st_size
        with open(target, "rb") as file:
            head = file.read(100)
    except OSError:
        return None
    if size == 0 or len(head) < 100 or not head.startswith(b"SQLite format 3\x00"):
        return None  # a new file, or not SQLite's: the open itself says so
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    if page_size < 512 or page_size & (page_size - 1):
        return f"its header names no valid page size ({page_size})"
    pages = int.from_bytes(head[28:32], "big")
    counted = head[24:28] == head[92:96] and pages > 0
    if size % page_size:
        return f"its size ({size} bytes) is not a whole number of {page_size}-byte pages"
    if counted and size < pages * page_size:
        return f"it holds {size // page_size} of the {pages} pages its header counts (truncated)"
    return None


def quick_check(connection: apsw.Connection) -> str | None:
    """SQLite's quick_check over the whole file (every page of every b-tree, not the indexes'
    agreement with their tables: https://www.sqlite.org/pragma.html#pragma_quick_check):
    None if intact, else what it found."""
    return _check(connection, "quick_check")


def integrity_check(connection: apsw.Connection) -> str | None:
    """SQLite's integrity_check (quick_check, and every index against its table): None if
    intact, else what it found."""
    return _check(connection, "integrity_check")


def _check(connection: apsw.Connection, pragma: str) -> str | None:
    try:
        rows = [str(row[0]) for row in connection.execute(f"PRAGMA {pragma}")]
    except DAMAGED as exc:
        return str(exc)
    if rows == ["ok"]:
        return _blocks_problem(connection)
    found = "; ".join(" ".join(r.split()) for r in rows[:FINDINGS_QUOTED])
    more = f" (and {len(rows) - FINDINGS_QUOTED} more)" if len(rows) > FINDINGS_QUOTED else ""
    return f"{pragma}: {found}{more}"


def _blocks_problem(connection: apsw.Connection) -> str | None:
    """The first block of scalar points whose bytes do not match their checksum, or None
    (SQLite checks its pages' structure, not the bytes of a value)."""
    from boardd.store.block_layout import checksum

    try:
        rows = connection.execute(
            "SELECT series_id, first_step, crc, segments, low, data FROM scalar_blocks"
        )
        for series_id, first_step, crc, segments, low, data in rows:
            if checksum(segments, low, data) != crc:
                return f"the block of series {series_id} from step {first_step}: bad checksum"
    except apsw.SQLError as exc:
        if "no such table" in str(exc):
            return None  # a store of a schema before blocks
        raise
    return None


def check_file(path: str | os.PathLike[str], pragma: str = "quick_check") -> str | None:
    """Checks the store at ``path`` through a read-only connection of its own (whose page
    cache is empty, unlike a long-lived connection's): None if intact, else what was found."""
    problem = file_size_problem(path)
    if problem is not None:
        return problem
    try:
        connection = apsw.Connection(str(path), flags=apsw.SQLITE_OPEN_READONLY)
    except apsw.Error as exc:
        return str(exc) if isinstance(exc, DAMAGED) else None
    try:
        return _check(connection, pragma)
    except apsw.Error:
        return None  # not damage (a lock, an I/O error): nothing is said of the file
    finally:
        connection.close()


def known_runs(path: str | os.PathLike[str]) -> list[str] | None:
    """The run names a (damaged) store knows, as far as they can still be read (with its
    write-ahead log, else from the main file alone); None if they cannot."""
    target = Path(path)
    names = (
        (str(target), apsw.SQLITE_OPEN_READONLY),
        (
            target.resolve().as_uri() + "?immutable=1",
            apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI,
        ),
    )
    for name, flags in names:
        try:
            connection = apsw.Connection(name, flags=flags)
        except apsw.Error:
            continue
        try:
            return sorted(
                str(run) for (run,) in connection.execute("SELECT name FROM runs WHERE deleted = 0")
            )
        except apsw.Error:
            continue
        finally:
            connection.close()
    return None


def set_aside(db: str | os.PathLike[str]) -> Path:
    """Moves a damaged store (and its write-ahead log and index) to
    ``STORE.damaged-<UTC time>``, kept for inspection; returns the new path of the main file.

    Connections still open on it keep reading the moved files; a new connection to ``db`` makes
    a new store."""
    target = Path(db)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    aside = target.with_name(f"{target.name}.damaged-{stamp}")
    n = 1
    while aside.exists():
        n += 1
        aside = target.with_name(f"{target.name}.damaged-{stamp}-{n}")
    # The log first: a main file moved without it would have its pages replayed into the new
    # store by the next connection (the log is found by name).
    for suffix in ("-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.replace(f"{target}{suffix}", f"{aside}{suffix}")
    os.replace(target, aside)
    return aside
