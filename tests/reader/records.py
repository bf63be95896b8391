"""Test helpers over boardd.reader.tfrecord: frame a record, read a whole file's batches."""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator

from boardd.reader import crc
from boardd.reader.source import RandomAccessBytes
from boardd.reader.tfrecord import (
    DEFAULT_MAX_BATCH_BYTES,
    DEFAULT_MAX_RECORD_BYTES,
    CrcMode,
    RecordBatch,
    RecordReader,
)

_U64 = struct.Struct("<Q")
_U32 = struct.Struct("<I")


def frame_record(payload: bytes) -> bytes:
    """The full framed TFRecord for ``payload``: length, its masked CRC, payload, its CRC."""
    length = _U64.pack(len(payload))
    return b"".join(
        (
            length,
            _U32.pack(crc.masked_crc32c(length)),
            payload,
            _U32.pack(crc.masked_crc32c(payload)),
        )
    )


def read_records(
    path: str | os.PathLike[str] | RandomAccessBytes,
    offset: int = 0,
    *,
    crc_mode: CrcMode = CrcMode.ALWAYS,
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
    max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
) -> Iterator[RecordBatch]:
    """Yields the batches of every complete record now in ``path`` after ``offset``."""
    with RecordReader(
        path,
        offset,
        crc_mode=crc_mode,
        max_batch_bytes=max_batch_bytes,
        max_record_bytes=max_record_bytes,
    ) as reader:
        while True:
            start = reader.offset
            batch = reader.read_batch()
            if batch.end_offset == start:
                return
            yield batch
