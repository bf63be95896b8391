"""The vectorized scalar path must decode exactly what the generic protobuf path decodes."""

from __future__ import annotations

import math
import struct
from pathlib import Path

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboardX import SummaryWriter

from boardd.reader.events import EventDecoder
from boardd.reader.fastpath import decode_simple_scalars
from boardd.reader.pipeline import decode_batch, read_event_file
from boardd.reader.tfrecord import CrcMode, RecordBatch, RecordReader, frame_record


def _frame_all(payloads: list[bytes]) -> tuple[bytes, np.ndarray, np.ndarray]:
    buf = bytearray()
    starts, lengths = [], []
    for p in payloads:
        starts.append(len(buf) + 12)
        lengths.append(len(p))
        buf += frame_record(p)
    return bytes(buf), np.array(starts, dtype=np.int64), np.array(lengths, dtype=np.int64)


def _simple_event(tag: str, step: int, wall_time: float, value: float) -> bytes:
    event = event_pb2.Event(wall_time=wall_time, step=step)
    event.summary.value.add(tag=tag, simple_value=value)
    return event.SerializeToString()


def _generic(payloads: list[bytes]) -> dict[str, list[tuple[int, float, float]]]:
    decoder = EventDecoder()
    out: dict[str, list[tuple[int, float, float]]] = {}
    for offset, payload in enumerate(payloads):
        for value in decoder.decode(payload, offset).values:
            p = value.point
            out.setdefault(value.tag, []).append((p.step, p.wall_time, p.value))  # type: ignore[union-attr]
    return out


def _same(a: float, b: float) -> bool:
    return (math.isnan(a) and math.isnan(b)) or a == b


tags = st.text(min_size=0, max_size=140)
steps = st.one_of(st.integers(0, 2**20), st.integers(-(2**63), 2**63 - 1))
floats32 = st.floats(width=32, allow_nan=True, allow_infinity=True)
walls = st.one_of(st.floats(0, 2e9), st.just(float("nan")), st.floats(allow_nan=False))
events = st.lists(st.tuples(st.sampled_from(["a", "b/c", "ü"]) | tags, steps, walls, floats32))


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(events)
def test_fast_path_agrees_with_generic_decoder(items: list[tuple[str, int, float, float]]) -> None:
    payloads = [_simple_event(*item) for item in items]
    buf, starts, lengths = _frame_all(payloads)
    fast = decode_simple_scalars(buf, starts, lengths)
    expected = _generic(payloads)
    for tag, records in fast.records.items():
        assert np.all(np.diff(records) > 0)
        got = list(
            zip(
                fast.steps[tag].tolist(),
                fast.wall_times[tag].tolist(),
                fast.values[tag].tolist(),
                strict=True,
            )
        )
        want = [
            _generic([payloads[r]]).get(tag, [None])[0]  # type: ignore[list-item]
            for r in records.tolist()
        ]
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert w is not None
            assert g[0] == w[0] and g[1] == w[1] and _same(g[2], w[2])
    # Everything handled is a record the generic path decodes to one scalar of that tag.
    handled = int(fast.handled.sum())
    assert handled == sum(len(r) for r in fast.records.values())
    assert handled <= sum(len(v) for v in expected.values())


@settings(max_examples=100, deadline=None)
@given(events)
def test_batch_decoding_equals_event_by_event(items: list[tuple[str, int, float, float]]) -> None:
    payloads = [_simple_event(*item) for item in items]
    buf, starts, lengths = _frame_all(payloads)
    expected = _generic(payloads)
    batch = RecordBatch(
        buffer=buf,
        base_offset=0,
        starts=starts,
        lengths=lengths,
        data_loss=[],
        end_offset=len(buf),
        payload_crc_checked=True,
    )
    decoded = decode_batch(batch, EventDecoder())
    got = {
        tag: list(zip(c.steps.tolist(), c.wall_times.tolist(), c.values.tolist(), strict=True))
        for tag, c in decoded.scalars.items()
    }
    assert set(got) == set(expected)
    for tag, want in expected.items():
        assert len(got[tag]) == len(want)
        for g, w in zip(got[tag], want, strict=True):
            assert g[0] == w[0] and g[1] == w[1] and _same(g[2], w[2])


def test_other_layouts_are_left_to_the_generic_path() -> None:
    with_metadata = event_pb2.Event(wall_time=1.0, step=3)
    value = with_metadata.summary.value.add(tag="t", simple_value=1.5)
    value.metadata.display_name = "shown"
    two_values = event_pb2.Event(wall_time=1.0, step=3)
    two_values.summary.value.add(tag="x", simple_value=1.0)
    two_values.summary.value.add(tag="y", simple_value=2.0)
    tensor = event_pb2.Event(wall_time=1.0, step=3)
    tensor.summary.value.add(tag="z").tensor.float_val.append(2.0)
    long_tag = _simple_event("x" * 121, 1, 1.0, 1.0)
    negative_step = _simple_event("n", -5, 1.0, 1.0)
    file_version = event_pb2.Event(wall_time=1.0, file_version="brain.Event:2")
    payloads = [
        with_metadata.SerializeToString(),
        two_values.SerializeToString(),
        tensor.SerializeToString(),
        long_tag,
        negative_step,
        file_version.SerializeToString(),
        _simple_event("plain", 7, 2.0, 3.0),
    ]
    buf, starts, lengths = _frame_all(payloads)
    fast = decode_simple_scalars(buf, starts, lengths)
    assert fast.handled.tolist() == [False] * 6 + [True]
    assert list(fast.records) == ["plain"]


def test_metadata_of_first_value_wins_even_when_it_took_the_generic_path(tmp_path: Path) -> None:
    first = event_pb2.Event(wall_time=1.0, step=1)
    value = first.summary.value.add(tag="loss", simple_value=1.0)
    value.metadata.display_name = "Loss (train)"
    payloads = [first.SerializeToString()] + [
        _simple_event("loss", step, 1.0 + step, float(step)) for step in range(2, 50)
    ]
    path = tmp_path / "events.out.tfevents.1.host"
    path.write_bytes(b"".join(frame_record(p) for p in payloads))
    decoder = EventDecoder()
    batches = list(read_event_file(path, decoder=decoder))
    assert decoder.tags["loss"].display_name == "Loss (train)"
    steps = np.concatenate([b.scalars["loss"].steps for b in batches])
    assert steps.tolist() == list(range(1, 50))


def test_scalar_on_an_image_tag_is_data_loss_not_a_crash(tmp_path: Path) -> None:
    image = summary_pb2.Summary.Image(height=1, width=1, colorspace=1, encoded_image_string=b"x")
    first = event_pb2.Event(wall_time=1.0, step=0)
    first.summary.value.add(tag="pic", image=image)
    payloads = [first.SerializeToString(), _simple_event("pic", 1, 2.0, 3.0)]
    path = tmp_path / "events.out.tfevents.1.host"
    path.write_bytes(b"".join(frame_record(p) for p in payloads))
    (batch,) = list(read_event_file(path))
    assert "pic" in batch.blob_sequences
    assert "pic" not in batch.scalars
    assert len(batch.data_loss) == 1


def test_tensorboardx_file_decodes_identically_in_both_crc_modes(tmp_path: Path) -> None:
    with SummaryWriter(str(tmp_path)) as writer:
        for step in range(300):
            writer.add_scalar("a", step * 0.5, step)
            writer.add_scalar("b/long/name", -step, step * 1000)
    (path,) = tmp_path.glob("*tfevents*")
    results = []
    for mode in CrcMode:
        batches = list(read_event_file(path, crc_mode=mode))
        results.append(
            {
                tag: (c.steps.tolist(), c.values.tolist())
                for b in batches
                for tag, c in b.scalars.items()
            }
        )
    assert results[0] == results[1]
    assert results[0]["a"][0] == list(range(300))
    assert results[0]["b/long/name"][1] == [float(-s) for s in range(300)]


def test_records_of_reader_and_fast_path_share_offsets(tmp_path: Path) -> None:
    payloads = [_simple_event("t", i, 1.0 + i, float(i)) for i in range(10)]
    path = tmp_path / "events.out.tfevents.1.host"
    path.write_bytes(b"".join(frame_record(p) for p in payloads))
    with RecordReader(path) as reader:
        batch = reader.read_batch()
    fast = decode_simple_scalars(batch.buffer, batch.starts, batch.lengths)
    assert fast.handled.all()
    assert fast.steps["t"].tolist() == list(range(10))
    assert struct.unpack("<Q", path.read_bytes()[:8])[0] == len(payloads[0])
