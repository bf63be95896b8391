"""The reader reads through RandomAccessBytes: bytes in memory frame and decode like a file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tensorboardX import SummaryWriter

from boardd.reader.decoded import merge_batches
from boardd.reader.pipeline import EventFileReader, read_event_file
from boardd.reader.source import LocalFileBytes, RandomAccessBytes
from boardd.reader.tfrecord import RecordFileError, RecordReader


class GrowingBytes:
    """Bytes in memory that a test appends to; counts refreshes and closes."""

    def __init__(self, data: bytes = b"") -> None:
        self.data = bytearray(data)
        self.refreshes = 0
        self.closed = 0

    @property
    def name(self) -> str:
        return "memory://events"

    def size(self) -> int:
        return len(self.data)

    def read_at(self, offset: int, count: int) -> bytes:
        return bytes(self.data[offset : offset + count])

    def refresh(self) -> None:
        self.refreshes += 1

    def close(self) -> None:
        self.closed += 1


class GoneBytes(GrowingBytes):
    """An object that can no longer be fetched."""

    def size(self) -> int:
        raise FileNotFoundError(2, "No such object")


@pytest.fixture(scope="module")
def event_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("events")
    rng = np.random.default_rng(2)
    with SummaryWriter(str(directory)) as w:
        for step in range(300):
            w.add_scalar("loss", float(rng.normal()), step)
            if step % 30 == 0:
                w.add_histogram("h", rng.normal(size=30), step)
                w.add_text("t", f"step {step}", step)
    return next(directory.glob("*tfevents*"))


def test_protocol_is_met() -> None:
    assert isinstance(GrowingBytes(), RandomAccessBytes)
    assert isinstance(LocalFileBytes("x"), RandomAccessBytes)


def test_bytes_in_memory_decode_like_the_file(event_file: Path) -> None:
    from_file = merge_batches(list(read_event_file(event_file)))
    from_memory = merge_batches(list(read_event_file(GrowingBytes(event_file.read_bytes()))))
    assert from_memory.records == from_file.records > 300
    assert from_memory.end_offset == from_file.end_offset == event_file.stat().st_size
    assert from_memory.scalars.keys() == from_file.scalars.keys()
    for tag, columns in from_file.scalars.items():
        assert np.array_equal(from_memory.scalars[tag].values, columns.values)
    assert from_memory.tensors.keys() == from_file.tensors.keys()


def test_growth_is_read_on_and_the_reader_owns_the_source(event_file: Path) -> None:
    data = event_file.read_bytes()
    cut = len(data) // 2 + 3  # inside a record
    source = GrowingBytes(data[:cut])
    with EventFileReader(source, max_batch_bytes=4096) as reader:
        first = merge_batches(list(reader))
        assert 0 < first.end_offset < cut
        assert reader.at_partial_record()
        source.data.extend(data[cut:])
        rest = merge_batches(list(reader))
        assert rest.end_offset == len(data)
        assert (
            first.records + rest.records == merge_batches(list(read_event_file(event_file))).records
        )
        assert reader.path == Path("memory://events")
    assert source.closed == 1
    # Nothing new at the end: the source was asked to look again for growth.
    assert source.refreshes >= 1


def test_a_source_that_fails_is_a_record_file_error() -> None:
    with (
        RecordReader(GoneBytes()) as reader,
        pytest.raises(RecordFileError, match=r"memory://events.*No such object"),
    ):
        reader.read_batch()
