"""Scalar series read whole, kept decoded in memory: a store holds a point per row, and turning
rows into columns costs Python work per point (noticeable on a dashboard's first view of many
long series), while slicing and downsampling columns already decoded is cheap.

A cache is bounded by bytes (LRU) and owned by whoever serves the stores: an application's
data providers share its one cache (:mod:`boardd.data.sqlite_provider`). An entry is filed
under its store file and series and holds the series as of its generation: a commit that
writes the series bumps the generation, so a read never gets points older than the generation
it asked for. The daemon fills it in the
background once an experiment is caught up (:func:`preload`), series by series in the order the
dashboard shows them, so that the first view after a start does not read rows.
"""

from __future__ import annotations

import logging
import threading
from array import array
from collections import OrderedDict
from pathlib import Path
from typing import NamedTuple

import apsw

from boardd.store import queries

__all__ = [
    "DEFAULT_MAX_BYTES",
    "PRELOAD_SHARE",
    "ColumnCache",
    "ColumnStats",
    "Columns",
    "preload",
    "preload_store",
    "read_whole",
    "store_key",
]

log = logging.getLogger(__name__)

#: The cache's bound: ~1.4 million points (24 bytes each: step, wall time, value).
DEFAULT_MAX_BYTES = 32 * 2**20
#: The share of the bound a preload fills: the rest is for what requests read.
PRELOAD_SHARE = 0.75
#: Bytes an entry costs beside its arrays (three array headers, the key, the LRU's node).
_OVERHEAD = 400


class Columns(NamedTuple):
    """A scalar series by step: steps, wall times, values (NaN for a NULL value), as read-only
    memoryviews of int64 and float64 (entries are shared by every reader; slicing them copies
    nothing, ``numpy.asarray`` views them without a copy, and no numpy is needed to read them:
    :mod:`boardd.data.accel`)."""

    steps: memoryview
    wall_times: memoryview
    values: memoryview


class ColumnStats(NamedTuple):
    """Counters of a :class:`ColumnCache`."""

    hits: int
    misses: int
    entries: int
    bytes: int
    max_bytes: int
    #: Misses answered from an older reading and the points appended since.
    grown: int


class ColumnCache:
    """Whole scalar series by (store id, series id), each with the generation it was read at;
    least recently used first out once over ``max_bytes``. Thread-safe."""

    def __init__(self, max_bytes: int = DEFAULT_MAX_BYTES, largest: int | None = None) -> None:
        self.max_bytes = max_bytes
        #: The largest entry kept (default an eighth of the bound: a single huge series must
        #: not empty the cache).
        self.largest = max_bytes // 8 if largest is None else largest
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple[str, int], tuple[int, Columns, int]] = OrderedDict()
        self._bytes = 0
        self._hits = 0
        self._misses = 0
        self._grown = 0

    def get(self, store: str, series_id: int, generation: int) -> Columns | None:
        """The series as of ``generation`` or later; None if not held (or held older)."""
        key = (store, series_id)
        with self._lock:
            found = self._entries.get(key)
            if found is None or found[0] < generation:
                self._misses += 1
                return None
            self._entries.move_to_end(key)
            self._hits += 1
            return found[1]

    def held(self, store: str, series_id: int) -> tuple[int, Columns] | None:
        """The series as held, whatever its generation: (generation, columns), or None."""
        with self._lock:
            found = self._entries.get((store, series_id))
            return None if found is None else (found[0], found[1])

    def put(self, store: str, series_id: int, generation: int, columns: Columns) -> None:
        """Files the series read at ``generation``, replacing an older reading; one larger than
        :attr:`largest` is not kept."""
        size = sum(column.nbytes for column in columns) + _OVERHEAD
        key = (store, series_id)
        with self._lock:
            old = self._entries.get(key)
            if old is not None and old[0] > generation:
                return  # a newer reading is already there
            if old is not None:
                del self._entries[key]
                self._bytes -= old[2]
            if size > self.largest:
                return
            self._entries[key] = (generation, columns, size)
            self._bytes += size
            while self._bytes > self.max_bytes and self._entries:
                _, (_, _, dropped) = self._entries.popitem(last=False)
                self._bytes -= dropped

    def room(self) -> int:
        """Bytes left before the bound."""
        with self._lock:
            return self.max_bytes - self._bytes

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0

    @property
    def stats(self) -> ColumnStats:
        with self._lock:
            return ColumnStats(
                self._hits,
                self._misses,
                len(self._entries),
                self._bytes,
                self.max_bytes,
                self._grown,
            )

    def count_grown(self) -> None:
        with self._lock:
            self._grown += 1


def store_key(connection: apsw.Connection) -> str:
    """What files a store's series in the cache: its identity and its file's path (a copy of a
    store file shares the identity but not the path, and evolves on its own)."""
    return f"{queries.store_id(connection)}@{connection.filename}"


def read_whole(
    cache: ColumnCache,
    connection: apsw.Connection,
    store: str,
    series_id: int,
    generation: int,
    keep: bool = True,
) -> Columns:
    """The whole series from ``cache``, else read from the store and filed there (unless
    ``keep`` is False: a read of every series once, such as a streamed export, must not evict
    what the charts read again and again). A series held as of an older generation that has
    only grown since (points appended after its last one: a live run's series, between the
    reservoir's evictions) reads only the new points."""
    found = cache.get(store, series_id, generation)
    if found is not None:
        return found
    held = cache.held(store, series_id)
    columns = _grown(connection, series_id, held) if held is not None else None
    if columns is None:
        columns = Columns(*queries.scalar_columns(connection, series_id))
    else:
        cache.count_grown()
    if keep or held is not None:
        cache.put(store, series_id, generation, columns)
    return columns


def _grown(
    connection: apsw.Connection, series_id: int, held: tuple[int, Columns]
) -> Columns | None:
    """The series as it is now, from ``held`` and the points after its last one; None if the
    series changed otherwise since (or is gone)."""
    generation, old = held
    count = len(old.steps)
    if not count:
        return None
    # One snapshot for both reads: a commit in between must not be half seen.
    with connection:
        marks = queries.series_marks(connection, series_id)
        if marks is None or marks.rewritten > generation:
            return None
        kept = marks.kept
        new = queries.scalar_columns(connection, series_id, step_min=old.steps[count - 1] + 1)
    if count + len(new[0]) != kept:
        return None  # not what the series counts: read it whole
    return Columns(*(_joined(a, b) for a, b in zip(old, new, strict=True)))


def _joined(old: memoryview, new: memoryview) -> memoryview:
    if not len(new):
        return old
    joined = array(old.format)
    joined.frombytes(old.cast("B"))
    joined.frombytes(new.cast("B"))
    return memoryview(joined).toreadonly()


def preload(
    cache: ColumnCache, connection: apsw.Connection, stop: threading.Event | None = None
) -> int:
    """Reads the store's scalar series into ``cache`` by tag, then run (the dashboard's order),
    until :data:`PRELOAD_SHARE` of the bound is used or ``stop`` is set; returns how many it
    read. Series already held at their generation are skipped. Errors are logged, not raised:
    a request reads what the preload did not."""
    read = 0
    try:
        store = store_key(connection)
        todo = queries.scalar_series_by_tag(connection)
    except apsw.Error as exc:
        log.debug("columns: no preload: %s", exc)
        return 0
    reserve = int(cache.max_bytes * (1 - PRELOAD_SHARE))
    for series_id, generation, kept in todo:
        if stop is not None and stop.is_set():
            break
        size = 24 * kept + _OVERHEAD
        if size > cache.largest:
            continue  # not kept anyway
        if cache.room() - size < reserve:
            break
        if cache.get(store, series_id, generation) is not None:
            continue
        try:
            read_whole(cache, connection, store, series_id, generation)
        except apsw.Error as exc:
            log.debug("columns: preloading series %d: %s", series_id, exc)
            break
        read += 1
    return read


def preload_store(cache: ColumnCache, db: Path, stop: threading.Event | None = None) -> None:
    """:func:`preload` on a connection of its own (the daemon calls it in a thread once an
    experiment is caught up)."""
    from boardd.data.connections import open_store  # the API's; not needed otherwise

    try:
        connection = open_store(db)
    except Exception:  # not there (yet): requests read what they need
        return
    try:
        count = preload(cache, connection, stop)
        stats = cache.stats
        log.debug(
            "columns: preloaded %d series of %s (%d of %d bytes held)",
            count,
            db,
            stats.bytes,
            stats.max_bytes,
        )
    finally:
        connection.close()
