"""Read-only store connections for request handlers: one per thread, never on the event loop."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import apsw
from starlette.concurrency import run_in_threadpool

from boardd.api.errors import ApiError
from boardd.store.connection import open_reader
from boardd.store.errors import StoreOpenError

T = TypeVar("T")


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
        self.swaps = 0

    def connection(self) -> apsw.Connection:
        """This thread's connection to the current store file, opened on first use."""
        identity = self._stat()
        connection: apsw.Connection | None = getattr(self._local, "connection", None)
        if connection is not None and getattr(self._local, "identity", None) != identity:
            self._forget(connection)
            connection = None
        if connection is None:
            if self._closed:
                raise ApiError(503, "the server is shutting down")
            try:
                connection = open_reader(self.db)
            except StoreOpenError as exc:
                raise ApiError(503, f"the store is not ready yet: {exc}") from exc
            self._local.connection = connection
            self._local.identity = identity
            with self._lock:
                self._all.append(connection)
                if identity != self._identity:
                    if self._identity is not None:
                        self.swaps += 1
                    self._identity = identity
        return connection

    def _stat(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.db)
        except OSError:
            return None
        return (st.st_dev, st.st_ino)

    def _forget(self, connection: apsw.Connection) -> None:
        with self._lock:
            if connection in self._all:
                self._all.remove(connection)
        connection.close()
        self._local.connection = None

    async def run(self, query: Callable[[apsw.Connection], T]) -> T:
        """Runs ``query(connection)`` in a worker thread."""
        return await run_in_threadpool(lambda: query(self.connection()))

    def close(self) -> None:
        """Closes every connection; safe to call twice."""
        with self._lock:
            self._closed = True
            connections, self._all = self._all, []
        for connection in connections:
            connection.close()
