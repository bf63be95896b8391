"""Resumable, corruption-tolerant reading of TFRecord framing, the container of event files.

A record is ``u64 length | u32 masked CRC-32C of the length | payload | u32 masked CRC-32C of
the payload``, all little-endian. :class:`RecordReader` reads the complete records of one file
from a byte offset, in batches, and resumes where it stopped as the file grows. A partial
record at the end of the file is the normal state of a file being written, not an error.

Unlike TensorBoard, which stops reading a file for good at its first bad record, this reader
*resynchronises*: after a bad length CRC, an impossible length or a bad payload CRC it goes on
from the next offset where a whole record validates (:mod:`boardd.reader.framing` finds it), and
reports the skipped bytes as :class:`~boardd.reader.decoded.DataLoss`.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from types import TracebackType

import numpy as np
import numpy.typing as npt

from boardd.reader import crc
from boardd.reader.decoded import DataLoss
from boardd.reader.errors import ReaderError
from boardd.reader.framing import (
    BAD_PAYLOAD_CRC,
    HEADER_BYTES,
    OVERHEAD_BYTES,
    Framer,
    could_start_record,
    crc32c_of,
)
from boardd.reader.modes import CrcMode as CrcMode
from boardd.reader.source import LocalFileBytes, RandomAccessBytes

DEFAULT_MAX_BATCH_BYTES = 32 * 2**20
DEFAULT_MAX_RECORD_BYTES = 2**31
MIN_BATCH_BYTES = 64

_U64 = struct.Struct("<Q")
_U32 = struct.Struct("<I")
_EMPTY = np.empty(0, dtype=np.int64)
# Lengths are compared as int64; no real limit comes near this.
_MAX_LIMIT = 2**62


class RecordFileError(ReaderError):
    """An event file could not be opened or read (missing, unreadable, I/O error)."""

    def __init__(self, path: str, exc: OSError) -> None:
        super().__init__(
            f"cannot read event file {path!r}: {exc.strerror or exc}; check that it still "
            "exists and that this user may read it"
        )
        self.path = path
        self.errno = exc.errno


def masked_crc32c(data: bytes | memoryview) -> int:
    """The masked CRC-32C of ``data``, as stored in a TFRecord header or footer."""
    return crc.masked_crc32c(data)


@dataclass(slots=True)
class RecordBatch:
    """The complete records read by one :meth:`RecordReader.read_batch` call.

    Payload ``i`` is ``buffer[starts[i] : starts[i] + lengths[i]]``; ``buffer`` holds the file's
    bytes from ``base_offset``. ``data_loss`` lists the byte ranges skipped as corrupt, with
    file-absolute offsets. ``end_offset`` is where the next read resumes.
    """

    buffer: bytes
    base_offset: int
    starts: npt.NDArray[np.int64]
    lengths: npt.NDArray[np.int64]
    data_loss: list[DataLoss]
    end_offset: int
    payload_crc_checked: bool

    def __len__(self) -> int:
        return int(self.starts.shape[0])

    def payload(self, i: int) -> memoryview:
        """Record ``i``'s payload, a zero-copy view into :attr:`buffer`."""
        start = int(self.starts[i])
        return memoryview(self.buffer)[start : start + int(self.lengths[i])]

    def record_offset(self, i: int) -> int:
        """The file offset of record ``i``'s header."""
        return self.base_offset + int(self.starts[i]) - HEADER_BYTES

    def record_size(self, i: int) -> int:
        """The number of bytes record ``i`` takes in the file, header and footer included."""
        return int(self.lengths[i]) + OVERHEAD_BYTES

    def verify_payload(self, i: int) -> bool:
        """Whether record ``i``'s payload matches its CRC (for ``CrcMode.ON_ERROR``)."""
        start = int(self.starts[i])
        end = start + int(self.lengths[i])
        stored: int = _U32.unpack_from(self.buffer, end)[0]
        return crc.mask(crc32c_of(self.buffer, start, end)) == stored

    def reject(self, i: int, reason: str) -> DataLoss:
        """The data loss to record when record ``i``'s payload could not be decoded.

        The framing of the record was sound (its length CRC held and the records after it
        were found where it said), so only this record's bytes are lost. If its payload CRC
        fails, the bytes were damaged after writing and the reason says so; otherwise the
        writer wrote something we cannot read, and ``reason`` is kept.
        """
        if not self.payload_crc_checked and not self.verify_payload(i):
            reason = BAD_PAYLOAD_CRC
        return DataLoss(self.record_offset(i), self.record_size(i), reason)


class RecordReader:
    """Reads complete records of one file from a byte offset; context manager; close() safe twice.

    Each :meth:`read_batch` returns the complete records now in the file after :attr:`offset`
    (up to about ``max_batch_bytes``; a single larger record is still returned whole) and moves
    :attr:`offset` past them. Call it again later to pick up what the writer appended. The
    reader keeps one file descriptor open between calls, and reopens the file when it seems
    not to have grown, so that growth on network file systems (close-to-open consistency) is
    seen. ``source`` is a path, or any :class:`RandomAccessBytes` (the reader owns it then,
    and closes it).

    ``max_record_bytes`` bounds the length a record may claim: a longer claim is treated as
    corruption and never allocated.
    """

    def __init__(
        self,
        source: str | os.PathLike[str] | RandomAccessBytes,
        offset: int = 0,
        *,
        crc_mode: CrcMode = CrcMode.ALWAYS,
        max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
        max_record_bytes: int = DEFAULT_MAX_RECORD_BYTES,
    ) -> None:
        if offset < 0:
            raise ValueError(f"offset must be >= 0, not {offset}")
        if max_batch_bytes < MIN_BATCH_BYTES:
            raise ValueError(f"max_batch_bytes must be >= {MIN_BATCH_BYTES}, not {max_batch_bytes}")
        if max_record_bytes < 0:
            raise ValueError(f"max_record_bytes must be >= 0, not {max_record_bytes}")
        self._source = LocalFileBytes(source) if isinstance(source, (str, os.PathLike)) else source
        self.path = self._source.name
        self.crc_mode = crc_mode
        self._offset = offset
        self._max_batch = max_batch_bytes
        self._max_record = min(max_record_bytes, _MAX_LIMIT)
        self._closed = False
        # The file size below which nothing new can be framed (a partial record is waiting):
        # polls of an idle file then cost one fstat and no read.
        self._need_size = 0
        # (offset, loss reason) of a record that a resync stopped at before it was complete:
        # its payload CRC must still be checked, and if it fails the hole goes on.
        self._unverified: tuple[int, str] | None = None

    @property
    def offset(self) -> int:
        """The file offset where the next read starts."""
        return self._offset

    def read_batch(self) -> RecordBatch:
        """Reads the complete records now available after :attr:`offset` and advances it.

        Returns an empty batch (``len(batch) == 0``, ``end_offset == offset``) when nothing new
        is complete yet. A batch may hold only data loss: then ``end_offset`` still moves. Keep
        calling while ``end_offset`` moves to drain a file.
        """
        size = self._size()
        if size < max(self._offset + 1, self._need_size):
            self._refresh()
            size = self._size()
            if size < max(self._offset + 1, self._need_size):
                return self._empty()
        available = size - self._offset
        wanted = min(available, self._max_batch)
        buf = self._pread(wanted)
        framer = self._frame(buf)
        if (
            framer.end == 0
            and not framer.losses
            and framer.cut_end is not None
            and len(buf) < framer.cut_end <= available
        ):
            # A single record larger than a batch: read exactly that record.
            wanted = framer.cut_end
            buf = self._pread(wanted)
            framer = self._frame(buf)
        at_eof = len(buf) < wanted or len(buf) >= available
        return self._finish(buf, framer, at_eof)

    def at_partial_record(self) -> bool:
        """Whether bytes exist after :attr:`offset` that do not (yet) form a complete record.

        True for a record (or just a header) that the writer has not finished; false at the end
        of the file, and when what follows is complete or is corrupt (the next
        :meth:`read_batch` reports corrupt bytes as data loss).
        """
        size = self._size()
        if size <= self._offset:
            return False
        head = self._pread(HEADER_BYTES)
        if len(head) < HEADER_BYTES:
            return could_start_record(head, self._max_record)
        length: int = _U64.unpack_from(head)[0]
        stored: int = _U32.unpack_from(head, 8)[0]
        if crc.masked_crc32c(head[:8]) != stored or length > self._max_record:
            return False
        return self._offset + OVERHEAD_BYTES + length > size

    def close(self) -> None:
        """Closes the file; safe to call more than once."""
        self._closed = True
        self._source.close()

    def __enter__(self) -> RecordReader:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError(f"RecordReader for {self.path!r} is closed")

    def _refresh(self) -> None:
        try:
            self._source.refresh()
        except OSError as exc:
            raise RecordFileError(self.path, exc) from exc

    def _size(self) -> int:
        self._check_open()
        try:
            return self._source.size()
        except OSError as exc:
            raise RecordFileError(self.path, exc) from exc

    def _pread(self, count: int) -> bytes:
        try:
            return self._source.read_at(self._offset, count)
        except OSError as exc:
            raise RecordFileError(self.path, exc) from exc

    def _frame(self, buf: bytes) -> Framer:
        unverified = None
        if self._unverified is not None and self._unverified[0] == self._offset:
            unverified = self._unverified[1]
        framer = Framer(
            buf,
            check_payloads=self.crc_mode is CrcMode.ALWAYS,
            max_len=self._max_record,
            unverified=unverified,
        )
        framer.run()
        return framer

    def _finish(self, buf: bytes, framer: Framer, at_eof: bool) -> RecordBatch:
        base = self._offset
        end = framer.end
        self._offset = base + end
        self._unverified = None
        if framer.pending_reason is not None:
            self._unverified = (self._offset, framer.pending_reason)
        if framer.cut_end is not None:
            self._need_size = base + framer.cut_end
        elif at_eof and end < len(buf):
            self._need_size = base + len(buf) + 1
        else:
            self._need_size = 0
        starts = np.concatenate(framer.starts) if framer.starts else _EMPTY
        lengths = np.concatenate(framer.lengths) if framer.lengths else _EMPTY
        losses = [DataLoss(base + s, e - s, reason) for s, e, reason in framer.losses]
        return RecordBatch(
            buffer=buf,
            base_offset=base,
            starts=starts,
            lengths=lengths,
            data_loss=losses,
            end_offset=self._offset,
            payload_crc_checked=self.crc_mode is CrcMode.ALWAYS,
        )

    def _empty(self) -> RecordBatch:
        return RecordBatch(
            buffer=b"",
            base_offset=self._offset,
            starts=_EMPTY,
            lengths=_EMPTY,
            data_loss=[],
            end_offset=self._offset,
            payload_crc_checked=self.crc_mode is CrcMode.ALWAYS,
        )
