"""Read-only store connections for readers of data: one per thread, never on the event loop."""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import anyio.to_thread
import apsw

from boardd.data.errors import Damaged, Unavailable
from boardd.store import damage, integrity, queries
from boardd.store.connection import open_reader
from boardd.store.errors import StoreDamagedError, StoreOpenError
from boardd.store.integrity import DAMAGED

T = TypeVar("T")


def open_store(db: Path) -> apsw.Connection:
    """A read-only connection of its own (for a long read such as a streamed blob, which must
    not pin the snapshot of the pool's connections); :class:`Unavailable` if it cannot open,
    or while it is known damaged (see :mod:`boardd.store.damage`)."""
    refused = damage.damaged(db)
    if refused is not None:
        raise Unavailable(refused)
    try:
        return open_reader(db)
    except StoreDamagedError as exc:
        damage.suspect(str(exc), db)
        raise Unavailable(f"{exc}: it is checked, and rebuilt from its logdir") from exc
    except StoreOpenError as exc:
        raise Unavailable(f"the store is not ready yet: {exc}") from exc


def damage_of(exc: BaseException) -> Unavailable | None:
    """What to answer for a read that failed with ``exc`` (raised through a connection the
    caller held, so the store is not known): :class:`Unavailable` if it is SQLite's corruption
    error (the writers check their stores), else None."""
    if not integrity.is_damage(exc):
        return None
    damage.suspect(str(exc))
    return Damaged(f"a store is damaged ({exc}): it is checked, and rebuilt from its logdir")


def is_damage(exc: BaseException) -> bool:
    """Whether ``exc`` is SQLite's word for a damaged file."""
    return integrity.is_damage(exc)


def damaged_read(db: Path, exc: BaseException) -> Damaged:
    """A read of ``db`` met SQLite's corruption error: the store's writer is told, and the
    reader answers 503 (never what a damaged page gave)."""
    damage.suspect(str(exc), db)
    return Damaged(f"the store {db} is damaged ({exc}): it is checked, and rebuilt from its logdir")


def _store_id(connection: apsw.Connection) -> str:
    try:
        return queries.store_id(connection)
    except apsw.Error:
        return ""


class ReadPool:
    """Per-thread read-only connections to one store (WAL: readers never wait on the writer).

    A store replaced on disk (``boardd ingest --rebuild`` swaps a new file in) is noticed by
    its file identity: each thread reopens, and :attr:`swaps` counts the replacements so that
    whatever was cached about the old file can be dropped.
    """

    def __init__(self, db: Path) -> None:
        self.db = db
        self._local = threading.local()
        self._lock = threading.Lock()
        self._all: list[apsw.Connection] = []
        self._closed = False
        self._identity: tuple[int, int] | None = None
        self._stores: list[str] = []
        self.swaps = 0

    def refuse_if_damaged(self) -> None:
        """:class:`Unavailable` while the store is known damaged: also asked before an answer
        is taken from a cache (it may have been built from a damaged page)."""
        refused = damage.damaged(self.db)
        if refused is not None:
            raise Unavailable(refused)

    def connection(self) -> apsw.Connection:
        """This thread's connection to the current store file, opened on first use;
        :class:`Unavailable` while the store cannot be opened or the pool is closed."""
        self.refuse_if_damaged()
        identity = self._stat()
        connection: apsw.Connection | None = getattr(self._local, "connection", None)
        if connection is not None and getattr(self._local, "identity", None) != identity:
            self._forget(connection)
            connection = None
        if connection is None:
            if self._closed:
                raise Unavailable("the server is shutting down")
            connection = open_store(self.db)
            self._local.connection = connection
            self._local.identity = identity
            store = _store_id(connection)
            with self._lock:
                self._all.append(connection)
                if store and store not in self._stores:
                    self._stores.append(store)
                if identity != self._identity:
                    if self._identity is not None:
                        self.swaps += 1
                    self._identity = identity
            # The connection goes with its thread: anyio retires a worker thread idle for 10 s
            # and starts new ones for the next burst of requests, and each kept the connection
            # of a thread gone, with its page cache and statements (a soak's RSS crept up).
            weakref.finalize(threading.current_thread(), self._close_one, connection)
        return connection

    @property
    def stores(self) -> tuple[str, ...]:
        """The identities of every store file this pool has read (the current one and those
        a rebuild replaced), oldest first."""
        with self._lock:
            return tuple(self._stores)

    def file_identity(self) -> tuple[int, int] | None:
        """The store file's identity now (device, inode), None while it does not exist: a
        different one means the store was replaced (a rebuild swapped in)."""
        return self._stat()

    def _stat(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.db)
        except OSError:
            return None
        return (st.st_dev, st.st_ino)

    def _close_one(self, connection: apsw.Connection) -> None:
        """Closes the connection of a thread that ended (any thread may run this)."""
        with self._lock:
            if connection in self._all:
                self._all.remove(connection)
        with contextlib.suppress(apsw.Error):
            connection.close()

    def _forget(self, connection: apsw.Connection) -> None:
        with self._lock:
            if connection in self._all:
                self._all.remove(connection)
        connection.close()
        self._local.connection = None

    def call(self, query: Callable[[apsw.Connection], T]) -> T:
        """``query(connection)`` on this thread's connection (blocking); SQLite's corruption
        error becomes :class:`Unavailable` (see :func:`damaged_read`)."""
        connection = self.connection()
        try:
            return query(connection)
        except DAMAGED as exc:
            raise damaged_read(self.db, exc) from exc

    async def run(self, query: Callable[[apsw.Connection], T]) -> T:
        """``query(connection)`` in a worker thread (the thread pool Starlette uses too, so a
        connection serves every request that lands on its thread)."""
        return await anyio.to_thread.run_sync(functools.partial(self.call, query))

    def close(self) -> None:
        """Closes every connection; safe to call twice."""
        with self._lock:
            self._closed = True
            connections, self._all = self._all, []
        for connection in connections:
            connection.close()
