"""From event file bytes to decoded batches: framing, the vectorized fast path, the generic path.

One :class:`EventFileReader` tails one event file from a byte offset. Each :meth:`read_batch`
frames the complete records now in the file, decodes the common legacy scalars with
:mod:`boardd.reader.fastpath` in bulk and everything else with :class:`EventDecoder`, in file
order, and returns a :class:`DecodedBatch` whose ``end_offset`` is the resume point.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from types import TracebackType

import numpy as np
import numpy.typing as npt

from boardd.reader.decoded import (
    BlobSequencePoint,
    DataClass,
    DataLoss,
    DecodedBatch,
    ScalarColumns,
    ScalarPoint,
    TensorPoint,
)
from boardd.reader.events import DecodedEvent, EventDecodeError, EventDecoder, simple_value_metadata
from boardd.reader.fastpath import FastScalars, decode_simple_scalars
from boardd.reader.source import RandomAccessBytes
from boardd.reader.tfrecord import CrcMode, RecordBatch, RecordReader

DEFAULT_BATCH_BYTES = 16 * 2**20


class EventFileReader:
    """Reads and decodes one event file incrementally; a context manager, ``close()`` idempotent.

    ``decoder`` carries the run's tag metadata across files: pass the same one to every file of
    a run, in order. ``crc_mode`` chooses whether every payload CRC is checked (the default) or
    only those of records that fail to decode (rustboard's behaviour; faster). ``source`` is
    a path, or any :class:`RandomAccessBytes` (a remote object, bytes in memory), which the
    reader then owns and closes.
    """

    def __init__(
        self,
        source: str | os.PathLike[str] | RandomAccessBytes,
        offset: int = 0,
        *,
        decoder: EventDecoder | None = None,
        crc_mode: CrcMode = CrcMode.ALWAYS,
        max_batch_bytes: int = DEFAULT_BATCH_BYTES,
    ) -> None:
        self.decoder = decoder if decoder is not None else EventDecoder()
        self._records = RecordReader(
            source, offset, crc_mode=crc_mode, max_batch_bytes=max_batch_bytes
        )
        #: What messages call the file (its path for a local file).
        self.path = Path(self._records.path)

    @property
    def offset(self) -> int:
        """The file offset where the next read starts."""
        return self._records.offset

    def at_partial_record(self) -> bool:
        """Whether bytes after :attr:`offset` do not (yet) form a complete record."""
        return self._records.at_partial_record()

    def read_batch(self) -> DecodedBatch:
        """Decodes the next batch of complete records; ``records == 0`` when nothing is new."""
        return decode_batch(self._records.read_batch(), self.decoder)

    def __iter__(self) -> Iterator[DecodedBatch]:
        """Yields batches until the records now in the file are consumed."""
        while True:
            start = self.offset
            batch = self.read_batch()
            if batch.records or batch.data_loss or batch.end_offset != start:
                yield batch
            if batch.end_offset == start:
                return

    def close(self) -> None:
        """Closes the file; safe to call more than once."""
        self._records.close()

    def __enter__(self) -> EventFileReader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def read_event_file(
    path: str | os.PathLike[str] | RandomAccessBytes,
    *,
    offset: int = 0,
    decoder: EventDecoder | None = None,
    crc_mode: CrcMode = CrcMode.ALWAYS,
) -> Iterator[DecodedBatch]:
    """Yields decoded batches of every complete record now in ``path`` from ``offset``."""
    with EventFileReader(path, offset, decoder=decoder, crc_mode=crc_mode) as reader:
        yield from reader


def decode_batch(batch: RecordBatch, decoder: EventDecoder) -> DecodedBatch:
    """Decodes one framed batch: fast path in bulk, the rest one by one, merged in file order."""
    out = DecodedBatch(records=len(batch), end_offset=batch.end_offset)
    out.data_loss.extend(batch.data_loss)
    if not len(batch):
        return out
    fast = decode_simple_scalars(batch.buffer, batch.starts, batch.lengths)
    # Fast tags not seen before take their metadata when their first record comes up in file
    # order, so that a generic record of the same tag earlier in the batch wins, as it should.
    pending = sorted((int(recs[0]), tag) for tag, recs in fast.records.items())
    pending.reverse()
    slow_scalars: dict[str, list[tuple[int, ScalarPoint]]] = {}
    for i in np.flatnonzero(~fast.handled).tolist():
        while pending and pending[-1][0] < i:
            _establish_fast_tag(pending.pop()[1], decoder, out)
        event = _decode_one(batch, i, decoder, out)
        if event is not None:
            _collect(event, i, out, slow_scalars)
    while pending:
        _establish_fast_tag(pending.pop()[1], decoder, out)
    _merge_scalars(fast, slow_scalars, decoder, batch, out)
    return out


def _establish_fast_tag(tag: str, decoder: EventDecoder, out: DecodedBatch) -> None:
    if tag not in decoder.tags:
        metadata = simple_value_metadata(tag)
        decoder.tags[tag] = metadata
        out.new_tags[tag] = metadata


def _decode_one(
    batch: RecordBatch, i: int, decoder: EventDecoder, out: DecodedBatch
) -> DecodedEvent | None:
    offset = batch.record_offset(i)
    try:
        return decoder.decode(batch.payload(i), offset)
    except EventDecodeError as exc:
        out.data_loss.append(batch.reject(i, f"undecodable event: {exc}"))
        return None


def _collect(
    event: DecodedEvent,
    record: int,
    out: DecodedBatch,
    slow_scalars: dict[str, list[tuple[int, ScalarPoint]]],
) -> None:
    out.run_events.extend(event.run_events)
    out.data_loss.extend(event.data_loss)
    for value in event.values:
        if value.first:
            out.new_tags[value.tag] = value.metadata
        point = value.point
        if isinstance(point, ScalarPoint):
            slow_scalars.setdefault(value.tag, []).append((record, point))
        elif isinstance(point, TensorPoint):
            out.tensors.setdefault(value.tag, []).append(point)
        elif isinstance(point, BlobSequencePoint):
            out.blob_sequences.setdefault(value.tag, []).append(point)


def _merge_scalars(
    fast: FastScalars,
    slow: dict[str, list[tuple[int, ScalarPoint]]],
    decoder: EventDecoder,
    batch: RecordBatch,
    out: DecodedBatch,
) -> None:
    for tag, records in fast.records.items():
        if decoder.tags[tag].data_class is not DataClass.SCALAR:
            # The tag was established as a tensor or blob sequence: these scalars conflict.
            for r in records.tolist():
                out.data_loss.append(
                    DataLoss(batch.record_offset(r), 0, f"scalar value on non-scalar tag {tag!r}")
                )
            continue
        columns = ScalarColumns(fast.steps[tag], fast.wall_times[tag], fast.values[tag])
        extra = slow.pop(tag, None)
        if extra:
            columns = _merge_columns(records, columns, extra)
        out.scalars[tag] = columns
    for tag, items in slow.items():
        out.scalars[tag] = _columns([p for _, p in items])


def _merge_columns(
    records: npt.NDArray[np.int64],
    columns: ScalarColumns,
    extra: list[tuple[int, ScalarPoint]],
) -> ScalarColumns:
    more = _columns([p for _, p in extra])
    order = np.argsort(
        np.concatenate([records, np.array([r for r, _ in extra], dtype=np.int64)]), kind="stable"
    )
    return ScalarColumns(
        np.concatenate([columns.steps, more.steps])[order],
        np.concatenate([columns.wall_times, more.wall_times])[order],
        np.concatenate([columns.values, more.values])[order],
    )


def _columns(points: list[ScalarPoint]) -> ScalarColumns:
    return ScalarColumns(
        np.fromiter((p.step for p in points), dtype=np.int64, count=len(points)),
        np.fromiter((p.wall_time for p in points), dtype=np.float64, count=len(points)),
        np.fromiter((p.value for p in points), dtype=np.float64, count=len(points)),
    )
