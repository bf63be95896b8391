"""Opening store connections: one function per connection policy, writer and reader flavours.

The rules both of boardd's SQLite stores follow (and ``immediate``, the write transaction) are
boardd.sqlite.connection's; those of the logdir store alone are here."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import apsw

from boardd.sqlite import connection as rules
from boardd.sqlite.connection import immediate as immediate  # the store's callers use it here
from boardd.sqlite.connection import no_double_quoted_strings, use_normal_sync, use_wal
from boardd.store.errors import StoreDamagedError, StoreOpenError, StoreReadOnlyError
from boardd.store.integrity import DAMAGED, file_size_problem, quick_check
from boardd.store.schema import APPLICATION_ID, check_readable, migrate

#: How long a connection waits for a lock before raising BusyError. The writer holds write
#: transactions briefly; readers in WAL mode never wait on it.
BUSY_TIMEOUT_MS = 5_000


#: Page size of new stores. Histogram tensors (a few KiB each) fit a page instead of a chain of
#: overflow pages, and a commit writes fewer, fuller WAL frames: a keep-everything catch-up
#: runs ~8% faster than with SQLite's default 4 KiB (bench_ingest), sampled ones ~2%.
PAGE_SIZE = 16384


def use_large_pages(connection: apsw.Connection) -> None:
    """New stores get :data:`PAGE_SIZE` pages; an existing store keeps its own (SQLite only
    changes the page size of an empty database, https://www.sqlite.org/pragma.html#pragma_page_size)."""
    connection.pragma("page_size", PAGE_SIZE)


def use_foreign_keys(connection: apsw.Connection) -> None:
    """Foreign keys are off by default in SQLite; our cascades depend on them."""
    connection.pragma("foreign_keys", "ON")


#: The page cache of a read connection, in KiB (SQLite's default is 2,000 KiB). A reader's cache
#: is dropped whenever another connection has committed since its last read (WAL), so on a live
#: store it only serves the one query; and there is one read connection per worker thread and
#: store (up to 40 threads each), so SQLite's default would let the caches alone grow to
#: 80 MiB per store under many clients. 64 pages of 16 KiB cover a scalar series of 10,000
#: points read at once; the response cache keeps whole answers.
READER_CACHE_KIB = 1024


def small_page_cache(connection: apsw.Connection) -> None:
    """A read connection's page cache of :data:`READER_CACHE_KIB` (a negative ``cache_size``
    is in KiB: https://www.sqlite.org/pragma.html#pragma_cache_size)."""
    connection.pragma("cache_size", -READER_CACHE_KIB)


def use_busy_timeout(connection: apsw.Connection) -> None:
    """Wait briefly for locks instead of failing at once."""
    rules.use_busy_timeout(connection, BUSY_TIMEOUT_MS)


def read_only_reason(path: str | os.PathLike[str]) -> str | None:
    """Why an existing store cannot be written by this process (its file, its directory, where
    the write-ahead log and its index live, or its filesystem), or None if it can be. access()
    asks the kernel, so a read-only mount and an immutable file count even for root."""
    target = Path(path)
    if not target.exists():
        return None
    with contextlib.suppress(OSError):
        if os.statvfs(target).f_flag & os.ST_RDONLY:
            return f"{target} is on a read-only filesystem"
    if not os.access(target, os.W_OK):
        return f"{target} is read-only (its permissions, or an immutable file)"
    if not os.access(target.parent, os.W_OK):
        return f"the directory of {target} is read-only (its write-ahead log cannot be made)"
    return None


def looks_like_a_store(target: Path) -> bool:
    """Whether ``target`` begins as a boardd store does (SQLite's header with boardd's
    application id): a file that does not is never taken for a damaged store, and never
    moved aside (https://www.sqlite.org/fileformat.html#the_database_header)."""
    try:
        with open(target, "rb") as file:
            head = file.read(72)
    except OSError:
        return False
    return head[:16] == b"SQLite format 3\x00" and head[68:72] == APPLICATION_ID.to_bytes(4, "big")


def damaged_error(target: Path, found: str, doing: str = "open") -> StoreOpenError:
    """A damaged boardd store says so (and is rebuilt from its logdir); any other damaged
    file is only refused."""
    if looks_like_a_store(target):
        return StoreDamagedError(f"store {target} is damaged ({found})")
    return StoreOpenError(f"cannot {doing} store {target}: {found}")


def store_error(target: Path, exc: BaseException, doing: str = "open") -> StoreOpenError:
    """The StoreOpenError that says why ``target`` cannot be opened: damaged, read-only, or
    something else (its cause kept)."""
    if isinstance(exc, DAMAGED):
        return damaged_error(target, str(exc), doing)
    if doing == "open" or isinstance(exc, apsw.ReadOnlyError):
        reason = read_only_reason(target)
        if reason is not None or isinstance(exc, apsw.ReadOnlyError):
            return StoreReadOnlyError(
                f"store {target} cannot be written: {reason or exc}; it can only be read"
            )
    return StoreOpenError(f"cannot {doing} store {target}: {exc}")


def open_writer(
    path: str | os.PathLike[str], *, check: bool = True, scan: bool = True
) -> apsw.Connection:
    """Opens (creating if needed) the store for writing and migrates its schema.

    With ``check``, an existing file's size is checked against its header (cheap); with
    ``scan`` too, the file is read whole (SQLite's quick_check). A damaged store raises
    StoreDamagedError, and is never written or served. ``boardd serve`` opens without the scan
    (its cost grows with the store, and a restart answers first) and runs it right after, in
    the background. Whoever calls this must hold, or be about to take, the store's lease.
    """
    target = Path(path)
    # Said before any check: a store that cannot be written is served as it is, and the
    # writer tries it again now and then (without reading it whole each time).
    reason = read_only_reason(target)
    if reason is not None:
        raise StoreReadOnlyError(f"store {target} cannot be written: {reason}; it can only be read")
    if check:
        problem = file_size_problem(target)
        if problem is not None:
            raise damaged_error(target, problem)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        connection = apsw.Connection(str(target))
    except (OSError, apsw.Error) as exc:
        raise store_error(target, exc) from exc
    try:
        policies = (
            use_busy_timeout,
            no_double_quoted_strings,
            use_large_pages,  # before WAL: a WAL database keeps its page size
            use_wal,
            use_normal_sync,
        )
        for policy in policies:
            policy(connection)
        use_foreign_keys(connection)
        found = quick_check(connection) if check and scan else None
        if found is not None:
            raise damaged_error(target, found)
        migrate(connection)
    except StoreOpenError:
        connection.close()
        raise
    except Exception as exc:
        connection.close()
        raise store_error(target, exc) from exc
    return connection


def open_reader(path: str | os.PathLike[str]) -> apsw.Connection:
    """Opens an existing store read-only; never takes a write lock, never waits on the writer."""
    target = Path(path)
    if not target.exists():
        raise StoreOpenError(f"no store at {target}: run `boardd ingest` or `boardd serve` first")
    try:
        return _reader(str(target), apsw.SQLITE_OPEN_READONLY)
    except apsw.CantOpenError as exc:
        if not _immutable_is_safe(target):
            raise store_error(target, exc, "read") from exc
    except Exception as exc:
        raise store_error(target, exc, "read") from exc
    # SQLite cannot open a WAL store read-only when its shared-memory index does not exist and
    # cannot be made (https://www.sqlite.org/wal.html#readonly). Where the directory cannot be
    # written, no writer can be making a log there either: the file is read as immutable.
    try:
        uri = target.resolve().as_uri() + "?immutable=1"
        return _reader(uri, apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
    except Exception as exc:
        raise store_error(target, exc, "read") from exc


def _reader(name: str, flags: int) -> apsw.Connection:
    connection = apsw.Connection(name, flags=flags)
    try:
        use_busy_timeout(connection)
        no_double_quoted_strings(connection)
        small_page_cache(connection)
        check_readable(connection)
    except BaseException:
        connection.close()
        raise
    return connection


def _immutable_is_safe(target: Path) -> bool:
    """Whether a store that cannot be opened read-only may be read as immutable: its
    directory cannot be written and no write-ahead log with content lies beside it."""
    wal = Path(f"{target}-wal")
    try:
        has_log = wal.exists() and wal.stat().st_size > 0
    except OSError:
        return False
    return not has_log and not os.access(target.parent, os.W_OK)
