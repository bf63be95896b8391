"""Read-only store connections for request handlers: one per thread, never on the event loop."""

from __future__ import annotations

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
    """Per-thread read-only connections to one store (WAL: readers never wait on the writer)."""

    def __init__(self, db: Path) -> None:
        self.db = db
        self._local = threading.local()
        self._lock = threading.Lock()
        self._all: list[apsw.Connection] = []
        self._closed = False

    def connection(self) -> apsw.Connection:
        """This thread's connection, opened on first use."""
        connection: apsw.Connection | None = getattr(self._local, "connection", None)
        if connection is None:
            if self._closed:
                raise ApiError(503, "the server is shutting down")
            try:
                connection = open_reader(self.db)
            except StoreOpenError as exc:
                raise ApiError(503, f"the store is not ready yet: {exc}") from exc
            self._local.connection = connection
            with self._lock:
                self._all.append(connection)
        return connection

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
