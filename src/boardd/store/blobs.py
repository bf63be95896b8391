"""Blobs (images, audio, graphs) of any size, stored as chunks of at most 1 MiB each.

A blob is one ``blobs`` row (id, size, number of chunks) and ``chunks`` rows of
``blob_chunks``; every chunk but the last holds exactly :data:`CHUNK_SIZE` bytes, so the chunk
holding byte ``i`` is ``i // CHUNK_SIZE`` and a byte range is read without reading the rest.

Writing uses plain INSERTs of memoryview slices, not ``zeroblob`` + ``Connection.blob_open``.
On this project's store (WAL, default cache, one transaction), for small chunks INSERT is
faster (blob I/O costs one more statement and one blob handle per chunk); for full 1 MiB chunks
blob I/O saves one copy, but once COMMIT writes the WAL both come out the same (run-to-run noise
larger than the difference). A memoryview slice is bound
without a Python copy, so INSERT builds no big byte strings either; one code path it is.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import apsw

from boardd.store.errors import BlobNotFoundError, StoreError

#: The largest chunk, in bytes; every chunk of a blob but its last is exactly this long.
CHUNK_SIZE = 2**20

# One statement for the whole stream, so all its chunks come from one snapshot even if the
# writer deletes the blob (and a later blob reuses its id) while a slow client reads it. The
# LEFT JOIN returns the blob's row even when no chunk is in the range (empty blob or range).
# The primary key (blob_id, chunk) delivers chunks in order: no sort, so no chunk is held back.
_STREAM_SQL = """
    SELECT b.size, b.chunks, c.chunk, c.data
    FROM blobs AS b
    LEFT JOIN blob_chunks AS c ON c.blob_id = b.id AND c.chunk >= ? AND c.chunk <= ?
    WHERE b.id = ?
    ORDER BY c.chunk
"""

# Beyond any chunk index: a blob of 2**62 chunks of 1 MiB is not going to happen.
_NO_LIMIT = 2**62


def put_blob(connection: apsw.Connection, data: bytes | memoryview) -> int:
    """Stores one blob and returns its id.

    Call it inside the writer's transaction: the blob becomes visible with that commit. On its
    own (autocommit) it still writes the blob atomically.
    """
    return put_blobs(connection, (data,))[0]


def put_blobs(connection: apsw.Connection, items: Sequence[bytes | memoryview]) -> list[int]:
    """Stores many blobs in one batch; returns their ids in the order of ``items``.

    Meant for the many small images of a run (one statement per table, not per blob), and as
    atomic as :func:`put_blob`.
    """
    views = [_byte_view(item) for item in items]
    if not views:
        return []
    # A savepoint: nested inside the writer's transaction when there is one, so a failure
    # half-way leaves no blob row without its chunks.
    with connection:
        ids: list[int] = [
            row[0]
            for row in connection.executemany(
                "INSERT INTO blobs (size, chunks) VALUES (?, ?) RETURNING id",
                [(view.nbytes, _chunk_count(view.nbytes)) for view in views],
            )
        ]
        connection.executemany(
            "INSERT INTO blob_chunks (blob_id, chunk, data) VALUES (?, ?, ?)",
            _chunk_rows(ids, views),
        )
    return ids


def blob_size(connection: apsw.Connection, blob_id: int) -> int | None:
    """The blob's size in bytes, or None if there is no such blob."""
    for (size,) in connection.execute("SELECT size FROM blobs WHERE id = ?", (blob_id,)):
        return int(size)
    return None


def iter_blob(
    connection: apsw.Connection, blob_id: int, *, start: int = 0, end: int | None = None
) -> Iterator[bytes]:
    """Streams bytes ``start`` to ``end`` (exclusive; None for the end of the blob), chunk by
    chunk, at most :data:`CHUNK_SIZE` bytes at a time.

    Raises BlobNotFoundError at once (before the first chunk) if the blob is missing, and
    ValueError if the range is not within ``0 <= start <= end <= size``. The whole stream reads
    one snapshot of the store, which stays open until the iterator is exhausted or closed:
    close it when the client goes away (a WAL cannot be checkpointed past an open snapshot).
    """
    if start < 0 or (end is not None and end < start):
        raise ValueError(f"bad byte range {start}..{end} of blob {blob_id}")
    first_chunk = start // CHUNK_SIZE
    if end is None:
        last_chunk = _NO_LIMIT
    elif end == start:
        first_chunk, last_chunk = 1, 0  # an empty range: the blob's row, no chunk
    else:
        last_chunk = (end - 1) // CHUNK_SIZE
    cursor = connection.execute(_STREAM_SQL, (first_chunk, last_chunk, blob_id))
    try:
        head = next(cursor, None)
        if head is None:
            raise _not_found(blob_id)
        size, chunks = int(head[0]), int(head[1])
        stop = size if end is None else end
        if start > size or stop > size:
            raise ValueError(f"byte range {start}..{stop} is beyond blob {blob_id} ({size} bytes)")
    except BaseException:
        cursor.close()
        raise
    return _stream(blob_id, cursor, head, size, chunks, start, stop)


def read_blob(connection: apsw.Connection, blob_id: int) -> bytes:
    """The whole blob; raises BlobNotFoundError if there is no such blob."""
    return b"".join(iter_blob(connection, blob_id))


def delete_blobs(connection: apsw.Connection, blob_ids: Iterable[int]) -> None:
    """Deletes the blobs and their chunks; ids that are not in the store are ignored.

    Call it inside the writer's transaction (on its own it is still atomic).
    """
    params = [(blob_id,) for blob_id in blob_ids]
    if not params:
        return
    with connection:
        # Chunks first and explicitly: the cascade would do it only with foreign_keys ON.
        connection.executemany("DELETE FROM blob_chunks WHERE blob_id = ?", params)
        connection.executemany("DELETE FROM blobs WHERE id = ?", params)


def _byte_view(data: bytes | memoryview) -> memoryview:
    view = memoryview(data)
    # nbytes and slices must count bytes, whatever the item type of the buffer.
    return view if view.format == "B" and view.ndim == 1 else view.cast("B")


def _chunk_count(size: int) -> int:
    return -(-size // CHUNK_SIZE)


def _chunk_rows(
    ids: Sequence[int], views: Sequence[memoryview]
) -> Iterator[tuple[int, int, memoryview]]:
    for blob_id, view in zip(ids, views, strict=True):
        size = view.nbytes
        if size <= CHUNK_SIZE:
            if size:
                yield blob_id, 0, view
            continue
        for chunk, offset in enumerate(range(0, size, CHUNK_SIZE)):
            yield blob_id, chunk, view[offset : offset + CHUNK_SIZE]


def _stream(
    blob_id: int,
    cursor: apsw.Cursor,
    head: tuple[object, ...],
    size: int,
    chunks: int,
    start: int,
    stop: int,
) -> Iterator[bytes]:
    try:
        if start == stop:
            return
        expected = start // CHUNK_SIZE
        last = (stop - 1) // CHUNK_SIZE
        rows = _chain_head(head, cursor)
        for row in rows:
            chunk, data = row[2], row[3]
            want = min(CHUNK_SIZE, size - expected * CHUNK_SIZE)
            if chunk != expected or not isinstance(data, bytes) or len(data) != want:
                raise _damaged(blob_id, expected, chunks)
            offset = expected * CHUNK_SIZE
            lo = max(start - offset, 0)
            hi = min(stop - offset, want)
            yield data if lo == 0 and hi == want else data[lo:hi]
            if expected == last:
                return
            expected += 1
        raise _damaged(blob_id, expected, chunks)
    finally:
        cursor.close()


def _chain_head(head: tuple[object, ...], cursor: apsw.Cursor) -> Iterator[tuple[object, ...]]:
    yield head
    yield from cursor


def _not_found(blob_id: int) -> BlobNotFoundError:
    return BlobNotFoundError(
        f"blob {blob_id} is not in the store: it was deleted (sampling keeps a bounded number "
        "of images and audio clips per series) or never written; list the series again for "
        "current blob ids"
    )


def _damaged(blob_id: int, chunk: int, chunks: int) -> StoreError:
    return StoreError(
        f"blob {blob_id} is damaged in the store (chunk {chunk} of {chunks} is missing or has "
        "the wrong size); rebuild the store from the logdir"
    )
