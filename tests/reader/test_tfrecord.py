"""TFRecord framing: round trips with real writers, growth at every split point, resync, limits."""

from __future__ import annotations

import io
import os
import random
import struct
import time
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tensorboard.backend.event_processing.event_file_loader import RawEventFileLoader
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboard.summary.writer.event_file_writer import EventFileWriter
from tensorboard.summary.writer.record_writer import RecordWriter
from tensorboardX import SummaryWriter

from boardd.reader import framing
from boardd.reader.decoded import DataLoss
from boardd.reader.errors import ReaderError
from boardd.reader.framing import BAD_LENGTH_CRC, BAD_PAYLOAD_CRC, OVERHEAD_BYTES
from boardd.reader.tfrecord import (
    CrcMode,
    RecordBatch,
    RecordFileError,
    RecordReader,
    masked_crc32c,
)
from tests.reader.records import frame_record, read_records

MODES = list(CrcMode)
FILE_NAME = "events.out.tfevents.1700000000.host"
HYPOTHESIS = settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


@dataclass
class Drained:
    """Everything a reader returned until it stopped making progress."""

    payloads: list[bytes] = field(default_factory=list)
    offsets: list[int] = field(default_factory=list)  # record header offsets
    sizes: list[int] = field(default_factory=list)  # record sizes in the file
    losses: list[DataLoss] = field(default_factory=list)
    end: int = 0
    batches: list[RecordBatch] = field(default_factory=list)

    def add(self, batch: RecordBatch) -> None:
        self.batches.append(batch)
        for i in range(len(batch)):
            self.payloads.append(bytes(batch.payload(i)))
            self.offsets.append(batch.record_offset(i))
            self.sizes.append(batch.record_size(i))
        self.losses.extend(batch.data_loss)
        self.end = batch.end_offset

    def assert_partition(self, start: int = 0) -> None:
        """Records and losses tile ``[start, end)`` exactly: no byte is claimed twice or missed."""
        spans = sorted(
            [(o, o + s) for o, s in zip(self.offsets, self.sizes, strict=True)]
            + [(loss.offset, loss.offset + loss.length) for loss in self.losses]
        )
        position = start
        for a, b in spans:
            assert a == position, (spans, start)
            assert b > a
            position = b
        assert position == self.end


def drain(reader: RecordReader, into: Drained | None = None) -> Drained:
    """Reads batches until the reader makes no progress."""
    out = into if into is not None else Drained(end=reader.offset)
    while True:
        start = reader.offset
        batch = reader.read_batch()
        assert batch.base_offset == start
        assert batch.end_offset == reader.offset
        out.add(batch)
        if batch.end_offset == start:
            assert len(batch) == 0 and not batch.data_loss
            return out


def read_all(path: Path, **kwargs: object) -> Drained:
    with RecordReader(path, **kwargs) as reader:  # type: ignore[arg-type]
        return drain(reader)


def tb_records(path: Path) -> list[bytes]:
    """The records TensorBoard's own reader finds in ``path`` (the oracle)."""
    return list(RawEventFileLoader(str(path)).Load())


def only_file(logdir: Path) -> Path:
    (path,) = [p for p in logdir.iterdir() if "tfevents" in p.name]
    return path


def write_tensorboardx(logdir: Path, steps: int = 40) -> Path:
    """A real tensorboardX event file with scalars, text, a histogram and an image."""
    writer = SummaryWriter(str(logdir))
    rng = np.random.default_rng(0)
    for step in range(steps):
        writer.add_scalar("loss", 1.0 / (step + 1), step)
        writer.add_scalar("accuracy/top1", step / steps, step)
        if step % 10 == 0:
            writer.add_text("notes", f"step {step} " * (step + 1), step)
            writer.add_histogram("weights", rng.normal(size=500), step)
            writer.add_image("sample", rng.random((3, 16, 16)), step)
    writer.close()
    return only_file(logdir)


def write_tensorboard(logdir: Path, steps: int = 30) -> Path:
    """A real event file from TensorBoard's own writer."""
    writer = EventFileWriter(str(logdir))
    for step in range(steps):
        summary = summary_pb2.Summary(
            value=[summary_pb2.Summary.Value(tag="tb/loss", simple_value=float(step) * 0.5)]
        )
        writer.add_event(event_pb2.Event(step=step, wall_time=1.7e9 + step, summary=summary))
    writer.close()
    return only_file(logdir)


@pytest.fixture(scope="module")
def event_payloads(tmp_path_factory: pytest.TempPathFactory) -> list[bytes]:
    """Payloads of real tensorboardX records, of varied sizes."""
    path = write_tensorboardx(tmp_path_factory.mktemp("tbx"), steps=20)
    return tb_records(path)


def framed(payloads: list[bytes]) -> tuple[bytes, list[int]]:
    """The framed stream of ``payloads`` and each record's offset."""
    offsets, parts, position = [], [], 0
    for payload in payloads:
        record = frame_record(payload)
        offsets.append(position)
        parts.append(record)
        position += len(record)
    return b"".join(parts), offsets


def append(path: Path, data: bytes) -> None:
    with path.open("ab") as f:
        f.write(data)


# Framing basics -------------------------------------------------------------------------------


def test_frame_record_matches_tensorboards_record_writer() -> None:
    for payload in (b"", b"x", b"\x1a\x11CRC test, one two", os.urandom(1000)):
        sink = io.BytesIO()
        RecordWriter(sink).write(payload)
        assert frame_record(payload) == sink.getvalue()
    assert masked_crc32c(b"\x1a\x11CRC test, one two") == 0x5794D08A


@pytest.mark.parametrize("mode", MODES)
def test_round_trip_tensorboardx_file(tmp_path: Path, mode: CrcMode) -> None:
    path = write_tensorboardx(tmp_path)
    expected = tb_records(path)
    assert len(expected) > 80
    got = read_all(path, crc_mode=mode)
    assert got.payloads == expected
    assert got.losses == []
    assert got.end == path.stat().st_size
    got.assert_partition()
    batch = got.batches[0]
    assert batch.payload_crc_checked is (mode is CrcMode.ALWAYS)
    assert all(batch.verify_payload(i) for i in range(len(batch)))
    first = event_pb2.Event.FromString(batch.payload(0))
    assert first.file_version == "brain.Event:2"


@pytest.mark.parametrize("mode", MODES)
def test_round_trip_tensorboard_writer_file(tmp_path: Path, mode: CrcMode) -> None:
    path = write_tensorboard(tmp_path)
    got = read_all(path, crc_mode=mode)
    assert got.payloads == tb_records(path)
    events = [event_pb2.Event.FromString(p) for p in got.payloads]
    assert [e.summary.value[0].simple_value for e in events[1:]] == [s * 0.5 for s in range(30)]
    assert got.losses == []


def test_batches_respect_max_batch_bytes_and_tile_the_file(tmp_path: Path) -> None:
    path = write_tensorboardx(tmp_path, steps=200)
    got = read_all(path, max_batch_bytes=1000)
    assert got.payloads == tb_records(path)
    assert len(got.batches) > 10
    for batch in got.batches:
        # A batch may exceed the limit only when it is a single larger record.
        assert len(batch.buffer) <= 1000 or len(batch) == 1
    got.assert_partition()


@pytest.mark.parametrize("mode", MODES)
def test_one_batch_holds_many_windows_and_a_bad_record_deep_inside(
    tmp_path: Path, mode: CrcMode
) -> None:
    """Records are walked and CRC-checked in windows and slices; a batch spans them all, and a
    bad payload deep inside is pinned to its own record."""
    payloads = [f"payload {i} ".encode() * (i % 7 + 1) for i in range(70_000)]
    stream, offsets = framed(payloads)
    assert len(stream) > 4 * 2**20
    victim = 61_234
    corrupt = bytearray(stream)
    corrupt[offsets[victim] + 12 + 3] ^= 0x10
    path = tmp_path / FILE_NAME
    path.write_bytes(bytes(corrupt))
    got = read_all(path, crc_mode=mode)
    assert len([b for b in got.batches if len(b)]) == 1
    if mode is CrcMode.ALWAYS:
        assert got.payloads == payloads[:victim] + payloads[victim + 1 :]
        size = len(payloads[victim]) + 16
        assert got.losses == [DataLoss(offsets[victim], size, BAD_PAYLOAD_CRC)]
    else:
        (batch,) = [b for b in got.batches if len(b)]
        assert len(batch) == len(payloads) and got.losses == []
        assert not batch.verify_payload(victim) and batch.verify_payload(victim + 1)


def test_read_records_yields_batches_until_nothing_new(tmp_path: Path) -> None:
    path = write_tensorboard(tmp_path)
    batches = list(read_records(path, max_batch_bytes=256))
    assert len(batches) > 1
    payloads = [bytes(b.payload(i)) for b in batches for i in range(len(b))]
    assert payloads == tb_records(path)
    # Resuming at the end yields nothing; resuming in the middle yields the rest.
    assert list(read_records(path, batches[-1].end_offset)) == []
    middle = batches[1].base_offset
    rest = [bytes(b.payload(i)) for b in read_records(path, middle) for i in range(len(b))]
    assert rest == payloads[len(batches[0]) :]


def test_empty_file(tmp_path: Path) -> None:
    path = tmp_path / FILE_NAME
    path.write_bytes(b"")
    with RecordReader(path) as reader:
        batch = reader.read_batch()
        assert len(batch) == 0 and batch.data_loss == [] and batch.end_offset == 0
        assert not reader.at_partial_record()
    assert list(read_records(path)) == []


def test_zero_length_payloads(tmp_path: Path) -> None:
    path = tmp_path / FILE_NAME
    path.write_bytes(framed([b"", b"a", b"", b""])[0])
    got = read_all(path)
    assert got.payloads == [b"", b"a", b"", b""]
    assert got.losses == []


# Growth and resumption ------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_every_split_point_of_a_growing_file(tmp_path: Path, mode: CrcMode) -> None:
    """Split the file at every byte: read, append the rest, read again."""
    source = write_tensorboard(tmp_path / "src", steps=3)
    data = source.read_bytes()
    expected = tb_records(source)
    boundaries = {0}
    for payload in expected:
        boundaries.add(max(boundaries) + len(payload) + 16)
    path = tmp_path / FILE_NAME
    for split in range(len(data) + 1):
        path.write_bytes(data[:split])
        with RecordReader(path, crc_mode=mode) as reader:
            first = drain(reader)
            complete = max(b for b in boundaries if b <= split)
            assert first.end == complete
            assert reader.at_partial_record() == (complete < split)
            assert first.losses == []
            append(path, data[split:])
            drain(reader, first)
        assert first.payloads == expected, split
        assert first.losses == []
        first.assert_partition()


@pytest.mark.parametrize("mode", MODES)
def test_file_growing_a_few_bytes_at_a_time(tmp_path: Path, mode: CrcMode) -> None:
    source = write_tensorboardx(tmp_path / "src", steps=12)
    data = source.read_bytes()
    path = tmp_path / FILE_NAME
    path.write_bytes(b"")
    rng = random.Random(3)
    got = Drained()
    with RecordReader(path, crc_mode=mode, max_batch_bytes=512) as reader:
        position = 0
        while position < len(data):
            step = rng.choice([1, 2, 3, 5, 11, 12, 13, 17, 100, 700])
            append(path, data[position : position + step])
            position += step
            drain(reader, got)
            assert got.end <= position
        assert not reader.at_partial_record()
    assert got.payloads == tb_records(source)
    assert got.losses == []
    got.assert_partition()


def test_resume_from_a_saved_offset_with_a_new_reader(tmp_path: Path) -> None:
    path = write_tensorboardx(tmp_path)
    expected = tb_records(path)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    first = read_all(path)
    path.write_bytes(data)
    with RecordReader(path, first.end) as reader:
        second = drain(reader)
    assert first.payloads + second.payloads == expected
    second.assert_partition(first.end)


@pytest.mark.parametrize("mode", MODES)
def test_truncated_file_is_a_partial_record_not_a_loss(tmp_path: Path, mode: CrcMode) -> None:
    path = write_tensorboardx(tmp_path)
    expected = tb_records(path)
    data = path.read_bytes()
    _, offsets = framed(expected)
    for cut in (offsets[5] + 3, offsets[40] + 12, offsets[60] + 20, len(data) - 1):
        path.write_bytes(data[:cut])
        with RecordReader(path, crc_mode=mode) as reader:
            got = drain(reader)
            assert got.losses == []
            assert reader.at_partial_record()
            complete = [o for o in offsets if o < cut]
            assert got.payloads == expected[: len(complete) - 1]
            assert got.end == complete[-1]


def test_idle_polls_do_not_reread_a_pending_record(tmp_path: Path) -> None:
    path = tmp_path / FILE_NAME
    record = frame_record(os.urandom(5000))
    path.write_bytes(record[:100])
    with RecordReader(path) as reader:
        assert len(reader.read_batch()) == 0
        assert reader.at_partial_record()
        append(path, record[100:4000])
        batch = reader.read_batch()
        assert len(batch) == 0 and batch.buffer == b""  # not even read: it cannot be complete
        append(path, record[4000:])
        assert bytes(reader.read_batch().payload(0)) == record[12:-4]
        assert not reader.at_partial_record()


# Limits ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_single_100mb_record(tmp_path: Path, mode: CrcMode) -> None:
    payload = np.random.default_rng(1).bytes(100 * 2**20)
    record = frame_record(payload)
    path = tmp_path / FILE_NAME
    path.write_bytes(frame_record(b"before") + record[: 50 * 2**20])
    with RecordReader(path, crc_mode=mode) as reader:
        first = drain(reader)
        assert first.payloads == [b"before"]
        assert reader.at_partial_record()
        append(path, record[50 * 2**20 :] + frame_record(b"after"))
        batch = reader.read_batch()
        assert len(batch) == 1 and bytes(batch.payload(0)) == payload
        assert len(batch.buffer) == len(payload) + 16  # read whole, though above the batch size
        assert bytes(reader.read_batch().payload(0)) == b"after"


def test_big_record_with_bad_payload_is_skipped(tmp_path: Path) -> None:
    big = bytearray(frame_record(os.urandom(3 * 2**20)))
    big[2 * 2**20] ^= 0x40
    path = tmp_path / FILE_NAME
    path.write_bytes(frame_record(b"a") + bytes(big) + frame_record(b"b"))
    got = read_all(path, max_batch_bytes=2**20)
    assert got.payloads == [b"a", b"b"]
    assert got.losses == [DataLoss(17, len(big), BAD_PAYLOAD_CRC)]


def header(length: int, *, valid_crc: bool = True) -> bytes:
    raw = struct.pack("<Q", length)
    stored = masked_crc32c(raw) ^ (0 if valid_crc else 1)
    return raw + struct.pack("<I", stored)


@pytest.mark.parametrize("mode", MODES)
def test_length_claiming_2_to_the_60_is_not_allocated(tmp_path: Path, mode: CrcMode) -> None:
    path = tmp_path / FILE_NAME
    good = frame_record(b"good")
    claim = header(2**60) + b"x" * 64
    path.write_bytes(good + claim + good)
    tracemalloc.start()
    try:
        got = read_all(path, crc_mode=mode)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2**20
    assert got.payloads == [b"good", b"good"]
    reason = "length 1152921504606846976 exceeds max record size 2147483648"
    assert got.losses == [DataLoss(len(good), len(claim), reason)]
    got.assert_partition()


def test_plausible_length_beyond_the_file_waits_without_allocating(tmp_path: Path) -> None:
    path = tmp_path / FILE_NAME
    path.write_bytes(frame_record(b"ok") + header(1_500_000_000) + b"partial payload")
    tracemalloc.start()
    try:
        with RecordReader(path) as reader:
            got = drain(reader)
            assert reader.at_partial_record()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2**20
    assert got.payloads == [b"ok"] and got.losses == []


def test_max_record_bytes_is_configurable(tmp_path: Path) -> None:
    path = tmp_path / FILE_NAME
    path.write_bytes(framed([b"small", b"y" * 1000, b"small"])[0])
    got = read_all(path, max_record_bytes=100)
    assert got.payloads == [b"small", b"small"]
    assert got.losses == [DataLoss(21, 1016, "length 1000 exceeds max record size 100")]


# Corruption -----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
def test_zero_filled_hole_from_two_writers_of_one_file(
    tmp_path: Path, mode: CrcMode, event_payloads: list[bytes]
) -> None:
    """Writer B truncates the file A is writing; A's next writes leave a hole of zeros."""
    records = [frame_record(p) for p in event_payloads]
    path = tmp_path / FILE_NAME
    a = path.open("wb")
    b = path.open("wb")
    try:
        a.write(b"".join(records[:30]))
        a.flush()
        b.seek(0)
        b.truncate()
        b.write(b"".join(records[30:33]))
        b.flush()
        a.write(b"".join(records[33:60]))
        a.flush()
    finally:
        a.close()
        b.close()
    b_end = sum(len(r) for r in records[30:33])
    a_offset = sum(len(r) for r in records[:30])
    data = path.read_bytes()
    assert data[b_end:a_offset] == bytes(a_offset - b_end)
    got = read_all(path, crc_mode=mode)
    assert got.payloads == event_payloads[30:33] + event_payloads[33:60]
    assert got.losses == [DataLoss(b_end, a_offset - b_end, BAD_LENGTH_CRC)]
    got.assert_partition()


@pytest.mark.parametrize("mode", MODES)
def test_writer_overwriting_another_leaves_a_torn_record(
    tmp_path: Path, mode: CrcMode, event_payloads: list[bytes]
) -> None:
    """B overwrites the start of A's file and stops inside one of A's records."""
    a_part = b"".join(frame_record(p) for p in event_payloads[:40])
    _, a_offsets = framed(event_payloads[:40])
    torn = a_offsets[25] + 7  # B's data ends 7 bytes into A's record 25
    b_payloads, b_size = [], 0
    for p in [bytes([i]) * (i + 1) for i in range(200)]:
        if b_size + len(p) + 16 > torn:
            break
        b_payloads.append(p)
        b_size += len(p) + 16
    filler = torn - b_size
    b_payloads.append(b"f" * (filler - 16))  # B's last record ends exactly at `torn`
    b_part = framed(b_payloads)[0]
    assert len(b_part) == torn
    path = tmp_path / FILE_NAME
    path.write_bytes(b_part + a_part[torn:])
    got = read_all(path, crc_mode=mode)
    assert got.payloads == b_payloads + event_payloads[26:40]
    assert got.losses == [DataLoss(torn, a_offsets[26] - torn, BAD_LENGTH_CRC)]


def test_torn_record_followed_by_another_writers_records(tmp_path: Path) -> None:
    """A record cut short, then whole records from another writer inside its claimed length:
    in ALWAYS mode the records inside the bad span are recovered."""
    torn = frame_record(b"T" * 2000)[:700]
    after = [f"record {i}".encode() * 5 for i in range(40)]
    path = tmp_path / FILE_NAME
    path.write_bytes(frame_record(b"first") + torn + framed(after)[0])
    got = read_all(path, crc_mode=CrcMode.ALWAYS)
    assert got.payloads == [b"first", *after]
    assert got.losses == [DataLoss(21, 700, BAD_PAYLOAD_CRC)]
    got.assert_partition()


def test_bad_payload_crc_in_on_error_mode_is_for_the_decoder_to_reject(tmp_path: Path) -> None:
    payloads = [b"alpha", b"bravo", b"charlie"]
    data = bytearray(framed(payloads)[0])
    data[21 + 12 + 2] ^= 0x01  # inside "bravo"
    path = tmp_path / FILE_NAME
    path.write_bytes(bytes(data))
    lax = read_all(path, crc_mode=CrcMode.ON_ERROR)
    (batch,) = [b for b in lax.batches if len(b)]
    assert lax.losses == [] and len(batch) == 3
    assert [batch.verify_payload(i) for i in range(3)] == [True, False, True]
    assert batch.reject(1, "undecodable event") == DataLoss(21, 21, BAD_PAYLOAD_CRC)
    assert batch.reject(2, "undecodable event") == DataLoss(42, 23, "undecodable event")
    strict = read_all(path, crc_mode=CrcMode.ALWAYS)
    assert strict.payloads == [b"alpha", b"charlie"]
    assert strict.losses == [DataLoss(21, 21, BAD_PAYLOAD_CRC)]


@pytest.mark.parametrize("mode", MODES)
def test_garbage_file_is_all_data_loss(tmp_path: Path, mode: CrcMode) -> None:
    path = tmp_path / FILE_NAME
    path.write_bytes(np.random.default_rng(5).bytes(8 * 2**20))
    started = time.perf_counter()
    with RecordReader(path, crc_mode=mode) as reader:
        got = drain(reader)
        pending = path.stat().st_size - got.end
        assert pending < 12
        assert reader.at_partial_record() == (pending > 0)
    assert time.perf_counter() - started < 5
    assert got.payloads == []
    assert got.losses[0].offset == 0
    got.assert_partition()


@pytest.mark.parametrize("fill", ["zeros", "random"])
def test_100mb_hole_is_scanned_fast(tmp_path: Path, fill: str) -> None:
    hole = bytes(100 * 2**20) if fill == "zeros" else np.random.default_rng(2).bytes(100 * 2**20)
    path = tmp_path / FILE_NAME
    path.write_bytes(frame_record(b"before") + hole + frame_record(b"after"))
    started = time.perf_counter()
    got = read_all(path)
    elapsed = time.perf_counter() - started
    assert got.payloads == [b"before", b"after"]
    assert sum(loss.length for loss in got.losses) == len(hole)
    got.assert_partition()
    assert elapsed < 3  # typically ~0.2 s; generous for loaded CI machines


def test_growing_garbage_is_reported_once(tmp_path: Path) -> None:
    """Garbage arriving in pieces is reported piecewise, never twice; a record that starts
    after it is picked up once complete."""
    path = tmp_path / FILE_NAME
    path.write_bytes(frame_record(b"start"))
    rng = np.random.default_rng(9)
    got = Drained()
    with RecordReader(path) as reader:
        drain(reader, got)
        for _ in range(20):
            append(path, rng.bytes(5000))
            drain(reader, got)
            got.assert_partition()
            assert path.stat().st_size - got.end < 12
        record = frame_record(b"resynchronised")
        append(path, record[:10])
        drain(reader, got)
        append(path, record[10:20])
        drain(reader, got)
        assert reader.at_partial_record()
        assert got.end == 21 + 20 * 5000  # only the garbage is gone
        append(path, record[20:])
        drain(reader, got)
    assert got.payloads == [b"start", b"resynchronised"]
    assert got.losses[0].offset == 21
    assert sum(loss.length for loss in got.losses) == 20 * 5000
    got.assert_partition()


@pytest.mark.parametrize("mode", MODES)
def test_false_record_start_in_garbage_is_rejected_once_complete(
    tmp_path: Path, mode: CrcMode
) -> None:
    """A valid-looking header inside garbage, whose record is not complete yet, is waited for;
    when it completes with a bad payload CRC the hole goes on and the real record is found."""
    path = tmp_path / FILE_NAME
    fake = header(300) + b"\x07" * 50
    path.write_bytes(frame_record(b"one") + b"\xff" * 40 + fake)
    with RecordReader(path, crc_mode=mode) as reader:
        got = drain(reader)
        assert got.losses == [DataLoss(19, 40, BAD_LENGTH_CRC)]
        assert got.end == 59 and reader.at_partial_record()
        append(path, b"\x07" * 300 + frame_record(b"two"))
        drain(reader, got)
    assert got.payloads == [b"one", b"two"]
    assert got.losses == [
        DataLoss(19, 40, BAD_LENGTH_CRC),
        DataLoss(59, len(fake) + 300, BAD_LENGTH_CRC),
    ]
    got.assert_partition()


@pytest.mark.parametrize("mode", MODES)
def test_resync_checks_the_payload_of_a_candidate_record(tmp_path: Path, mode: CrcMode) -> None:
    """A sound header inside garbage is not enough: the record must pass its payload CRC too,
    in either mode, or it is part of the hole."""
    path = tmp_path / FILE_NAME
    fake = header(30) + b"\x05" * 30 + b"\x00\x00\x00\x00"  # complete, but a wrong payload CRC
    path.write_bytes(frame_record(b"one") + b"\xff" * 40 + fake + frame_record(b"two"))
    got = read_all(path, crc_mode=mode)
    assert got.payloads == [b"one", b"two"]
    assert got.losses == [DataLoss(19, 40 + len(fake), BAD_LENGTH_CRC)]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("max_batch", [64, 1000, 2**20])
@HYPOTHESIS
@given(data=st.data())
def test_random_bit_flips_lose_only_touched_records(
    tmp_path: Path, mode: CrcMode, max_batch: int, event_payloads: list[bytes], data: st.DataObject
) -> None:
    payloads = event_payloads[: data.draw(st.integers(1, 40), label="records")]
    stream, offsets = framed(payloads)
    ends = [*offsets[1:], len(stream)]
    # CRC-32C detects every error of up to 5 bits in records this short.
    flips = data.draw(
        st.lists(st.integers(0, 8 * len(stream) - 1), min_size=1, max_size=5, unique=True),
        label="bits",
    )
    corrupt = bytearray(stream)
    for bit in flips:
        corrupt[bit // 8] ^= 1 << (bit % 8)
    spans = enumerate(zip(offsets, ends, strict=True))
    touched = {i for i, (a, b) in spans for bit in flips if a <= bit // 8 < b}
    path = tmp_path / FILE_NAME
    path.write_bytes(bytes(corrupt))
    got = read_all(path, crc_mode=mode, max_batch_bytes=max_batch)
    got.assert_partition()
    assert len(stream) - got.end < 12
    untouched = [i for i in range(len(payloads)) if i not in touched]
    returned = [offsets.index(o) for o in got.offsets]
    assert set(untouched) <= set(returned)
    for loss in got.losses:
        assert loss.reason in (BAD_LENGTH_CRC, BAD_PAYLOAD_CRC) or "exceeds" in loss.reason
    if mode is CrcMode.ALWAYS:
        assert returned == untouched
        for i in touched:
            assert any(x.offset <= offsets[i] < x.offset + x.length for x in got.losses)
    else:
        # Flips inside a payload or its CRC surface only when the payload is checked.
        by_offset = {
            batch.record_offset(j): batch.verify_payload(j)
            for batch in got.batches
            for j in range(len(batch))
        }
        for i in returned:
            assert by_offset[offsets[i]] == (i not in touched)


@HYPOTHESIS
@given(
    payloads=st.lists(st.binary(max_size=300), max_size=12),
    cuts=st.lists(st.integers(0, 10_000), max_size=6),
    mode=st.sampled_from(MODES),
)
def test_property_framing_round_trip_with_arbitrary_splits(
    tmp_path: Path, payloads: list[bytes], cuts: list[int], mode: CrcMode
) -> None:
    stream, _ = framed(payloads)
    points = sorted({min(c, len(stream)) for c in cuts} | {len(stream)})
    path = tmp_path / FILE_NAME
    path.write_bytes(b"")
    got = Drained()
    with RecordReader(path, crc_mode=mode, max_batch_bytes=128) as reader:
        previous = 0
        for point in points:
            append(path, stream[previous:point])
            previous = point
            drain(reader, got)
    assert got.payloads == payloads
    assert got.losses == []
    assert got.end == len(stream)


@HYPOTHESIS
@given(
    pieces=st.lists(
        st.one_of(
            st.tuples(st.just("record"), st.binary(max_size=200)),
            st.tuples(st.just("garbage"), st.binary(min_size=1, max_size=300)),
            st.tuples(st.just("zeros"), st.integers(1, 3000)),
        ),
        max_size=12,
    ),
    cuts=st.lists(st.integers(0, 20_000), max_size=4),
    mode=st.sampled_from(MODES),
    max_batch=st.sampled_from([64, 300, 2**20]),
)
def test_property_resync_through_garbage(
    tmp_path: Path,
    pieces: list[tuple[str, object]],
    cuts: list[int],
    mode: CrcMode,
    max_batch: int,
) -> None:
    stream = bytearray()
    payloads: list[bytes] = []
    garbage: list[tuple[int, int]] = []
    for kind, value in pieces:
        if kind == "record":
            assert isinstance(value, bytes)
            payloads.append(value)
            stream += frame_record(value)
        else:
            chunk = value if isinstance(value, bytes) else bytes(value)  # type: ignore[call-overload]
            if garbage and garbage[-1][1] == len(stream):
                garbage[-1] = (garbage[-1][0], len(stream) + len(chunk))
            else:
                garbage.append((len(stream), len(stream) + len(chunk)))
            stream += chunk
    points = sorted({min(c, len(stream)) for c in cuts} | {len(stream)})
    path = tmp_path / FILE_NAME
    path.write_bytes(b"")
    got = Drained()
    with RecordReader(path, crc_mode=mode, max_batch_bytes=max_batch) as reader:
        previous = 0
        for point in points:
            append(path, bytes(stream[previous:point]))
            previous = point
            drain(reader, got)
    assert got.payloads == payloads
    got.assert_partition()
    assert len(stream) - got.end < 12
    # Every lost byte is garbage, and all garbage is lost but for a possible pending tail.
    lost = {(x.offset, x.offset + x.length) for x in got.losses}
    covered = sorted(merge_spans(sorted(lost)))
    expected = [(a, min(b, got.end)) for a, b in garbage if a < got.end]
    assert covered == expected


def merge_spans(spans: list[tuple[int, int]]) -> Iterator[tuple[int, int]]:
    current: tuple[int, int] | None = None
    for a, b in spans:
        if current is not None and current[1] == a:
            current = (current[0], b)
            continue
        if current is not None:
            yield current
        current = (a, b)
    if current is not None:
        yield current


# Lifecycle ------------------------------------------------------------------------------------


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def test_close_is_idempotent_and_releases_the_descriptor(tmp_path: Path) -> None:
    path = write_tensorboard(tmp_path)
    before = open_fds()
    reader = RecordReader(path)
    reader.read_batch()
    assert open_fds() == before + 1
    reader.close()
    reader.close()
    assert open_fds() == before
    with pytest.raises(ValueError, match="closed"):
        reader.read_batch()
    with RecordReader(path) as again:
        drain(again)
    assert open_fds() == before
    list(read_records(path))
    assert open_fds() == before


def test_missing_file_raises_a_reader_error(tmp_path: Path) -> None:
    with (
        RecordReader(tmp_path / "nope.tfevents") as reader,
        pytest.raises(RecordFileError, match="cannot read event file") as info,
    ):
        reader.read_batch()
    assert isinstance(info.value, ReaderError)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"offset": -1}, "offset"),
        ({"max_batch_bytes": 10}, "max_batch_bytes"),
        ({"max_record_bytes": -5}, "max_record_bytes"),
    ],
)
def test_invalid_arguments(tmp_path: Path, kwargs: dict[str, int], message: str) -> None:
    make: Callable[..., RecordReader] = RecordReader
    with pytest.raises(ValueError, match=message):
        make(tmp_path / FILE_NAME, **kwargs)


# -- the guessing boundary walk --------------------------------------------------------------


def _framed(payload_sizes: list[int]) -> bytes:
    out = io.BytesIO()
    writer = RecordWriter(out)
    for i, n in enumerate(payload_sizes):
        writer.write(bytes([i % 251]) * n)
    return out.getvalue()


def _walk_both(buf: bytes, pos: int, last: int) -> None:
    u64 = np.ndarray((len(buf) - 7,), dtype="<u8", buffer=buf, strides=(1,))
    expected_heads, expected_end = framing._walk_simple(buf, pos, last)
    if expected_end > len(buf):
        expected_end = expected_heads.pop()
    heads, end = framing._walk(buf, u64, pos, last)
    assert heads.tolist() == expected_heads
    assert end == expected_end


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    cycle=st.lists(st.integers(0, 90), min_size=1, max_size=20),
    repeats=st.integers(1, 400),
    noise=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 300)), max_size=8),
    cut=st.integers(0, 200),
    garbage=st.binary(max_size=64),
    last_back=st.integers(0, 5000),
)
def test_guessing_walk_finds_exactly_the_plain_walks_records(
    cycle: list[int],
    repeats: int,
    noise: list[tuple[int, int]],
    cut: int,
    garbage: bytes,
    last_back: int,
) -> None:
    # Periodic record sizes (what training loops write), broken here and there by records of
    # other sizes, then a torn tail or garbage: every guess must be checked, none trusted.
    sizes = cycle * repeats
    for where, size in noise:
        sizes.insert(where % (len(sizes) + 1), size)
    buf = _framed(sizes)
    buf = buf[: max(0, len(buf) - cut)] + garbage
    if len(buf) < OVERHEAD_BYTES:
        return
    last = len(buf) - OVERHEAD_BYTES
    _walk_both(buf, 0, last)
    _walk_both(buf, 0, max(0, last - last_back))


def test_guessing_walk_on_a_real_training_log(tmp_path: Path) -> None:
    with SummaryWriter(str(tmp_path)) as writer:
        for step in range(3000):
            writer.add_scalar("loss", 1.0 / (step + 1), step)
            writer.add_scalar("train/accuracy", step / 3000, step)
            if step % 7 == 0:
                writer.add_scalar("lr", 0.1, step)
            if step % 100 == 0:
                writer.add_histogram("weights", np.random.default_rng(step).normal(size=50), step)
    (path,) = tmp_path.glob("*tfevents*")
    buf = path.read_bytes()
    _walk_both(buf, 0, len(buf) - OVERHEAD_BYTES)
    # A torn last record, and a length field that points far past the end.
    _walk_both(buf[:-5], 0, len(buf) - 5 - OVERHEAD_BYTES)
    heads, _ = framing._walk_simple(buf, 0, len(buf) - OVERHEAD_BYTES)
    middle = heads[len(heads) // 2]
    broken = bytearray(buf)
    broken[middle : middle + 8] = (2**63).to_bytes(8, "little")
    _walk_both(bytes(broken), 0, len(buf) - OVERHEAD_BYTES)
