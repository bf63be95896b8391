"""Tests of boardd.store.blobs: chunking, byte ranges, batches, deletion, WAL readers."""

from __future__ import annotations

import io
import time
from collections.abc import Iterator
from pathlib import Path

import apsw
import numpy as np
import pytest
from PIL import Image
from tensorboardX.summary import make_image

from boardd.store import blobs
from boardd.store.blobs import (
    CHUNK_SIZE,
    blob_size,
    delete_blobs,
    iter_blob,
    put_blob,
    put_blobs,
    read_blob,
)
from boardd.store.connection import immediate, open_reader, open_writer
from boardd.store.errors import BlobNotFoundError


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "store.db"


@pytest.fixture
def writer(db: Path) -> Iterator[apsw.Connection]:
    connection = open_writer(db)
    yield connection
    connection.close()


@pytest.fixture
def reader(db: Path, writer: apsw.Connection) -> Iterator[apsw.Connection]:
    connection = open_reader(db)
    yield connection
    connection.close()


def random_bytes(size: int, seed: int = 0) -> bytes:
    return np.random.default_rng(seed).integers(0, 256, size, dtype=np.uint8).tobytes()


def chunk_rows(connection: apsw.Connection, blob_id: int) -> list[tuple[int, int]]:
    """(chunk index, length) of each stored chunk, in order."""
    return [
        (int(chunk), int(length))
        for chunk, length in connection.execute(
            "SELECT chunk, length(data) FROM blob_chunks WHERE blob_id = ? ORDER BY chunk",
            (blob_id,),
        )
    ]


def store_one(writer: apsw.Connection, data: bytes | memoryview) -> int:
    with immediate(writer):
        return put_blob(writer, data)


def test_png_of_five_mib_round_trips_through_chunks(
    writer: apsw.Connection, reader: apsw.Connection
) -> None:
    pixels = np.random.default_rng(7).integers(0, 256, (1300, 1300, 3), dtype=np.uint8)
    png = make_image(pixels).encoded_image_string
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    assert len(png) > 4 * CHUNK_SIZE  # random pixels do not compress: 5 chunks at least

    blob_id = store_one(writer, png)

    chunks = chunk_rows(reader, blob_id)
    assert [index for index, _ in chunks] == list(range(-(-len(png) // CHUNK_SIZE)))
    assert all(length == CHUNK_SIZE for _, length in chunks[:-1])
    assert 0 < chunks[-1][1] <= CHUNK_SIZE
    assert blob_size(reader, blob_id) == len(png)
    assert reader.execute("SELECT chunks FROM blobs WHERE id = ?", (blob_id,)).get == len(chunks)

    stored = read_blob(reader, blob_id)
    assert stored == png
    decoded = np.asarray(Image.open(io.BytesIO(stored)))
    np.testing.assert_array_equal(decoded, pixels)


@pytest.mark.parametrize(
    "size",
    [0, 1, CHUNK_SIZE - 1, CHUNK_SIZE, CHUNK_SIZE + 1, 2 * CHUNK_SIZE, 3 * CHUNK_SIZE - 1],
)
def test_sizes_around_chunk_boundaries(
    writer: apsw.Connection, reader: apsw.Connection, size: int
) -> None:
    data = random_bytes(size, seed=size)
    blob_id = store_one(writer, data)

    expected_chunks = -(-size // CHUNK_SIZE)
    lengths = [length for _, length in chunk_rows(reader, blob_id)]
    assert len(lengths) == expected_chunks
    assert sum(lengths) == size
    pieces = list(iter_blob(reader, blob_id))
    assert [len(piece) for piece in pieces] == lengths  # streamed one chunk at a time
    assert b"".join(pieces) == data
    assert read_blob(reader, blob_id) == data
    assert blob_size(reader, blob_id) == size


def test_empty_blob(writer: apsw.Connection, reader: apsw.Connection) -> None:
    blob_id = store_one(writer, b"")

    assert blob_size(reader, blob_id) == 0
    assert read_blob(reader, blob_id) == b""
    assert list(iter_blob(reader, blob_id)) == []
    assert list(iter_blob(reader, blob_id, start=0, end=0)) == []
    assert chunk_rows(reader, blob_id) == []
    with pytest.raises(ValueError):
        iter_blob(reader, blob_id, start=0, end=1)


def test_byte_ranges_across_chunk_boundaries(
    writer: apsw.Connection, reader: apsw.Connection
) -> None:
    size = 3 * CHUNK_SIZE + 17
    data = random_bytes(size, seed=3)
    blob_id = store_one(writer, data)

    edges = [0, 1, CHUNK_SIZE - 1, CHUNK_SIZE, CHUNK_SIZE + 1, 2 * CHUNK_SIZE, 3 * CHUNK_SIZE]
    edges += [size - 1, size]
    ranges: list[tuple[int, int | None]] = [(a, b) for a in edges for b in edges if a <= b]
    ranges += [(a, None) for a in edges]
    rng = np.random.default_rng(11)
    for _ in range(100):
        a, b = sorted(int(x) for x in rng.integers(0, size + 1, 2))
        ranges.append((a, b))

    for start, end in ranges:
        pieces = list(iter_blob(reader, blob_id, start=start, end=end))
        stop = size if end is None else end
        assert b"".join(pieces) == data[start:stop], (start, end)
        # One piece per chunk touched, none longer than a chunk, none empty.
        touched = 0 if stop == start else (stop - 1) // CHUNK_SIZE - start // CHUNK_SIZE + 1
        assert len(pieces) == touched, (start, end)
        assert all(0 < len(piece) <= CHUNK_SIZE for piece in pieces)


def test_bad_ranges_raise_before_streaming(
    writer: apsw.Connection, reader: apsw.Connection
) -> None:
    blob_id = store_one(writer, random_bytes(CHUNK_SIZE + 10))
    size = CHUNK_SIZE + 10
    for start, end in [(-1, None), (5, 4), (0, size + 1), (size + 1, None), (size + 1, size + 2)]:
        with pytest.raises(ValueError):
            iter_blob(reader, blob_id, start=start, end=end)  # no next(): raised at the call


def test_missing_blob(writer: apsw.Connection, reader: apsw.Connection) -> None:
    existing = store_one(writer, b"x")
    missing = existing + 1000

    assert blob_size(reader, missing) is None
    with pytest.raises(BlobNotFoundError, match=f"blob {missing} is not in the store"):
        read_blob(reader, missing)
    with pytest.raises(BlobNotFoundError):
        iter_blob(reader, missing)  # raised at the call, before any HTTP header would be sent
    with pytest.raises(BlobNotFoundError):
        iter_blob(reader, missing, start=0, end=0)


def test_many_small_blobs_in_one_batch(writer: apsw.Connection, reader: apsw.Connection) -> None:
    items = [random_bytes(3 * 1024, seed=i) for i in range(10_000)]

    # (How fast is the benchmarks' business: a timed assertion here failed on a loaded machine.)
    with immediate(writer):
        ids = put_blobs(writer, items)

    assert len(ids) == len(set(ids)) == len(items)
    assert reader.execute("SELECT count(*) FROM blobs").get == len(items)
    for blob_id, item in zip(ids, items, strict=True):
        assert read_blob(reader, blob_id) == item
    assert put_blobs(writer, []) == []


def test_batch_mixes_sizes_and_buffer_types(
    writer: apsw.Connection, reader: apsw.Connection
) -> None:
    floats = np.arange(300_000, dtype=np.float32)  # 1.2 MB: two chunks, items of 4 bytes
    items: list[bytes | memoryview] = [
        b"",
        random_bytes(2 * CHUNK_SIZE + 5, seed=1),
        memoryview(floats),
        memoryview(bytearray(b"abc")),
        memoryview(random_bytes(CHUNK_SIZE + 100, seed=2))[50 : CHUNK_SIZE + 60],
    ]
    with immediate(writer):
        ids = put_blobs(writer, items)

    expected = [bytes(memoryview(item).cast("B")) for item in items]
    assert [blob_size(reader, blob_id) for blob_id in ids] == [len(e) for e in expected]
    assert [read_blob(reader, blob_id) for blob_id in ids] == expected


def test_delete_removes_blobs_and_chunks(writer: apsw.Connection, reader: apsw.Connection) -> None:
    with immediate(writer):
        ids = put_blobs(writer, [random_bytes(CHUNK_SIZE * 2 + 1, seed=i) for i in range(4)])
    keep = random_bytes(CHUNK_SIZE * 2 + 1, seed=3)

    with immediate(writer):
        delete_blobs(writer, [ids[0], ids[2], 999_999])  # an unknown id is ignored
        delete_blobs(writer, [])

    for gone in (ids[0], ids[2]):
        assert blob_size(reader, gone) is None
        assert chunk_rows(reader, gone) == []
        with pytest.raises(BlobNotFoundError):
            read_blob(reader, gone)
    assert read_blob(reader, ids[3]) == keep
    assert reader.execute("SELECT count(*) FROM blob_chunks").get == 2 * 3


def test_failed_put_leaves_no_partial_blob(writer: apsw.Connection) -> None:
    # A real SQLite failure in the middle of a blob: its third chunk is refused.
    writer.execute(
        "CREATE TEMP TRIGGER refuse_third_chunk BEFORE INSERT ON main.blob_chunks "
        "WHEN NEW.chunk = 2 BEGIN SELECT RAISE(ABORT, 'disk says no'); END"
    )
    with pytest.raises(apsw.ConstraintError, match="disk says no"):
        put_blob(writer, random_bytes(3 * CHUNK_SIZE))
    assert writer.execute("SELECT count(*) FROM blobs").get == 0
    assert writer.execute("SELECT count(*) FROM blob_chunks").get == 0

    # Inside the writer's transaction, only the failed blob is undone; the caller decides.
    with immediate(writer):
        kept = put_blob(writer, b"kept")
        with pytest.raises(apsw.ConstraintError):
            put_blobs(writer, [b"small", random_bytes(3 * CHUNK_SIZE)])
    assert writer.execute("SELECT id FROM blobs").fetchall() == [(kept,)]
    assert read_blob(writer, kept) == b"kept"


def test_reader_sees_last_commit_while_writer_holds_a_transaction(
    writer: apsw.Connection, reader: apsw.Connection
) -> None:
    old_data = random_bytes(2 * CHUNK_SIZE + 3, seed=1)
    new_data = random_bytes(CHUNK_SIZE + 3, seed=2)
    old = store_one(writer, old_data)

    writer.execute("BEGIN IMMEDIATE")
    try:
        new = put_blob(writer, new_data)
        delete_blobs(writer, [old])

        began = time.monotonic()
        assert read_blob(reader, old) == old_data  # the deletion is not committed yet
        assert blob_size(reader, new) is None
        with pytest.raises(BlobNotFoundError):
            read_blob(reader, new)
        # Far below the 5 s busy timeout: the reader did not wait for the writer.
        assert time.monotonic() - began < 1.0
    finally:
        writer.execute("COMMIT")

    assert read_blob(reader, new) == new_data
    assert blob_size(reader, old) is None


def test_a_stream_reads_one_snapshot(writer: apsw.Connection, reader: apsw.Connection) -> None:
    data = random_bytes(3 * CHUNK_SIZE, seed=5)
    blob_id = store_one(writer, data)

    stream = iter_blob(reader, blob_id)
    first = next(stream)
    # The writer deletes the blob mid-stream and stores another (which may get the same id).
    with immediate(writer):
        delete_blobs(writer, [blob_id])
        replacement = put_blob(writer, random_bytes(3 * CHUNK_SIZE, seed=6))

    assert first + b"".join(stream) == data
    if replacement != blob_id:
        assert blob_size(reader, blob_id) is None
    assert read_blob(reader, replacement) == random_bytes(3 * CHUNK_SIZE, seed=6)


def test_streaming_query_reads_chunks_in_index_order(reader: apsw.Connection) -> None:
    # A sort would hold every chunk of a (possibly huge) blob before yielding the first.
    plan = " ".join(
        str(row[3]) for row in reader.execute("EXPLAIN QUERY PLAN " + blobs._STREAM_SQL, (0, 1, 1))
    )
    assert "TEMP B-TREE" not in plan
    assert "SEARCH c USING" in plan  # chunks found through the primary key, not a scan
