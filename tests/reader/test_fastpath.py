"""The vectorized scalar path must decode exactly what the generic protobuf path decodes."""

from __future__ import annotations

import math
import random
import struct
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tensorboard.compat.proto import event_pb2, summary_pb2
from tensorboardX import SummaryWriter

from boardd.reader import fastpath
from boardd.reader.events import EventDecoder
from boardd.reader.fastpath import decode_simple_scalars
from boardd.reader.pipeline import decode_batch, read_event_file
from boardd.reader.tfrecord import CrcMode, RecordBatch, RecordReader
from tests.reader.records import frame_record


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
    # And everything in the layout is handled.
    assert fast.handled.tolist() == [
        _has_layout(p, *item) for p, item in zip(payloads, items, strict=True)
    ]


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


# --- Edges of the buffer, every varint length, tag lengths, grouping and hash collisions ---


def _fast_points(
    payloads: list[bytes], *, framed: bool = True
) -> tuple[np.ndarray, dict[str, list[tuple[int, int, float, float]]]]:
    """The fast path's verdict on each payload, and its points as (record, step, wall, value)."""
    if framed:
        buf, starts, lengths = _frame_all(payloads)
    else:
        buf = b"".join(payloads)
        lengths = np.array([len(p) for p in payloads], dtype=np.int64)
        starts = np.cumsum(lengths) - lengths
    fast = decode_simple_scalars(buf, starts, lengths)
    points = {
        tag: list(
            zip(
                records.tolist(),
                fast.steps[tag].tolist(),
                fast.wall_times[tag].tolist(),
                fast.values[tag].tolist(),
                strict=True,
            )
        )
        for tag, records in fast.records.items()
    }
    return fast.handled, points


def _assert_as_protobuf_reads(payloads: list[bytes], *, framed: bool = True) -> np.ndarray:
    """Every record the fast path handled is, to protobuf, one simple_value scalar with exactly
    the tag, step, wall time and value the fast path found; returns the verdicts."""
    handled, points = _fast_points(payloads, framed=framed)
    seen = 0
    for tag, rows in points.items():
        records = [r[0] for r in rows]
        assert records == sorted(set(records))
        for record, step, wall, value in rows:
            assert handled[record]
            event = event_pb2.Event.FromString(payloads[record])
            assert {f.name for f, _ in event.ListFields()} <= {"wall_time", "step", "summary"}
            assert (event.step, event.wall_time) == (step, wall)
            (summary_value,) = event.summary.value
            assert {f.name for f, _ in summary_value.ListFields()} <= {"tag", "simple_value"}
            assert summary_value.tag == tag
            assert struct.pack("<f", summary_value.simple_value) == struct.pack("<f", value)
            seen += 1
    assert seen == int(handled.sum())
    return handled


def _payload(tag: bytes, step: int, wall: float, value: float) -> bytes:
    """A simple_value event serialized by hand, so that its tag may be any bytes."""
    value_msg = b"\x0a" + bytes([len(tag)]) + tag + b"\x15" + struct.pack("<f", value)
    summary = b"\x0a" + bytes([len(value_msg)]) + value_msg
    step_field = b"" if step == 0 else b"\x10" + _varint(step % 2**64)
    return (
        b"\x09" + struct.pack("<d", wall) + step_field + b"\x2a" + bytes([len(summary)]) + summary
    )


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        low, n = n & 0x7F, n >> 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def test_hand_serialized_events_match_protobuf() -> None:
    # (Protobuf leaves an empty tag out; _payload writes it, as other writers may.)
    for tag, step in [("a", 0), ("a", 1), ("é/x", 300), ("t" * 118, 2**40)]:
        assert _payload(tag.encode(), step, 1.5, 2.5) == _simple_event(tag, step, 1.5, 2.5)


def _has_layout(payload: bytes, tag: str, step: int, wall: float, value: float) -> bool:
    """Whether protobuf wrote this event in the layout the fast path takes (it leaves out an
    empty tag, a zero wall time or value), and the fast path must take it."""
    encoded = tag.encode()
    return (
        len(encoded) <= 118
        and 0 <= step < 2**56
        and math.isfinite(wall)
        and payload == _payload(encoded, step, wall, value)
    )


_EDGE_STEPS = [0, 1, 127, 128, 2**14, 2**21, 2**28, 2**35, 2**42, 2**49 - 1, 2**49]
_EDGE_STEPS += [2**56 - 1, 2**56, 2**63 - 1, -1, -(2**63)]


@pytest.mark.parametrize("framed", [True, False])
def test_every_varint_length_and_both_buffer_ends(framed: bool) -> None:
    # Unframed, the first record starts at byte 0 and the last ends the buffer: the windows
    # read around every record run off both ends.
    payloads = [_simple_event(f"s{i % 3}", s, 1.0 + i, float(i)) for i, s in enumerate(_EDGE_STEPS)]
    payloads += [_payload(b"", 0, 2.0, 3.0)]  # the shortest record there is, last
    handled = _assert_as_protobuf_reads(payloads, framed=framed)
    # Steps of up to 8 varint bytes (below 2**56) are the fast path's, longer ones are not.
    assert handled.tolist() == [0 <= s < 2**56 for s in _EDGE_STEPS] + [True]


@pytest.mark.parametrize("length", range(1, 11))
def test_batches_of_one_varint_length(length: int) -> None:
    # Blocks whose steps share a varint length take a path of their own.
    low, high = (1 << 7 * (length - 1)), min(1 << 7 * length, 2**63)
    steps = [low, high - 1, (low + high) // 2] * 3 if length < 10 else [-1, -5, -(2**63)] * 3
    payloads = [_simple_event(f"t{i % 2}", s, 1.0, float(i)) for i, s in enumerate(steps)]
    handled = _assert_as_protobuf_reads(payloads)
    assert handled.tolist() == [length <= 8] * len(steps)


@pytest.mark.parametrize("framed", [True, False])
def test_buffers_shorter_than_a_window(framed: bool) -> None:
    for payloads in ([_payload(b"", 0, 2.0, 3.0)], [_simple_event("ab", 5, 2.0, 3.0)]):
        handled = _assert_as_protobuf_reads(payloads, framed=framed)
        assert handled.all()


def test_nan_wall_times_and_invalid_utf8_are_left_to_protobuf() -> None:
    payloads = [
        _payload(b"ok", 1, 1.0, 1.0),
        _payload(b"ok", 2, float("nan"), 2.0),
        _payload(b"\xff\xfe", 3, 1.0, 3.0),  # not UTF-8
        _payload(b"ok", 4, 1.0, float("nan")),  # a NaN value is a value
        _payload(b"\xff\xfe", 5, 1.0, 5.0),
    ]
    handled = _assert_as_protobuf_reads(payloads)
    assert handled.tolist() == [True, False, False, True, False]


def test_crafted_records_that_only_look_alike_are_left_to_protobuf() -> None:
    wall = b"\x09" + struct.pack("<d", 1.0)
    value = b"\x15" + struct.pack("<f", 1.0)
    tag = b"t" * 119
    # A head whose L1 would be one byte of 128: to protobuf, the start of a longer varint.
    long_lengths = wall + b"\x2a" + bytes([128, 0x0A, 126, 0x0A, 119]) + tag + value
    # A 9-byte step varint whose last byte happens to be the summary key.
    nine_bytes = wall + b"\x10" + b"\x80" * 8 + b"\x2a\x0d\x0a\x0b\x0a\x04tag4" + value
    # Its 8-byte sibling, which is the fast path's.
    eight_bytes = wall + b"\x10" + b"\x80" * 7 + b"\x01\x2a\x0d\x0a\x0b\x0a\x04tag4" + value
    handled = _assert_as_protobuf_reads([long_lengths, nine_bytes, eight_bytes])
    assert handled.tolist() == [False, False, True]


def test_tags_of_many_lengths_interleaved() -> None:
    tags = ["", "a", "abcdefg", "abcdefgh", "abcdefghi", "x" * 16, "y" * 17, "z" * 118, "é" * 40]
    payloads = [_payload(tags[i % len(tags)].encode(), i, i, -i) for i in range(500)]
    payloads.append(_simple_event("w" * 119, 1, 1.0, 1.0))  # L1 would need two varint bytes
    handled, points = _fast_points(payloads)
    assert handled.tolist() == [True] * 500 + [False]
    assert set(points) == set(tags)
    for k, tag in enumerate(tags):
        assert [r[0] for r in points[tag]] == list(range(k, 500, len(tags)))
        assert [r[1] for r in points[tag]] == list(range(k, 500, len(tags)))


def test_a_tag_spanning_blocks_with_different_tag_lengths_stays_one_group() -> None:
    # More records than one block: the first blocks hold short tags only, the last a long one,
    # so blocks read different numbers of chunks; "a" must still be one tag.
    n = 40_000
    payloads = [_simple_event("a" if i % 2 else "b", i, 1.0, float(i)) for i in range(n)]
    payloads += [_simple_event("a", n + i, 1.0, 0.0) for i in range(10)]
    payloads += [_simple_event("a long tag, longer than 24 bytes", n + 10, 1.0, 0.0)]
    handled, points = _fast_points(payloads)
    assert handled.all()
    assert [r[0] for r in points["a"]] == [*range(1, n, 2), *range(n, n + 10)]
    assert [r[0] for r in points["b"]] == list(range(0, n, 2))


def test_thousands_of_distinct_tags() -> None:
    # Beyond what a 16-bit slot keeps apart: two hashes share a slot and their records
    # interleave, which takes the sort on whole hashes.
    tags = [f"metric/{i}" for i in range(3000)]
    payloads = [_simple_event(tags[i % 3000], i // 3000, 1.0, float(i)) for i in range(9000)]
    handled, points = _fast_points(payloads)
    assert handled.all()
    assert set(points) == set(tags)
    for i, tag in enumerate(tags):
        assert [r[0] for r in points[tag]] == [i, 3000 + i, 6000 + i]
        assert [r[1] for r in points[tag]] == [0, 1, 2]


def _chunks(tag: bytes) -> list[int]:
    """The tag as the fast path hashes it: 8-byte little-endian chunks from its end backwards,
    the bytes before its start zero."""
    padded = bytes(-len(tag) % 8) + tag
    return [
        int.from_bytes(padded[len(padded) - 8 * (j + 1) : len(padded) - 8 * j], "little")
        for j in range(len(padded) // 8)
    ]


def _tag_hash(tag: bytes) -> int:
    h = len(tag) * fastpath._HASH_LENGTH
    for j, chunk in enumerate(_chunks(tag)):
        h += chunk * fastpath._hash_factor(j)
    return h % 2**64


def _random_utf8(rng: random.Random, length: int) -> bytes:
    out = b""
    while len(out) < length:
        out += rng.choice("abc/_0é€ü").encode()  # 1, 2 and 3 bytes long
    return out if len(out) == length else _random_utf8(rng, length)


def _colliding_tags(lengths: tuple[int, int], seed: int) -> tuple[bytes, bytes]:
    """Two UTF-8 tags of these lengths with one hash: all bytes but the second tag's last 8
    are drawn at random and those are solved for (every hash factor is odd)."""
    rng = random.Random(seed)
    inverse = pow(fastpath._hash_factor(0), -1, 2**64)
    for _ in range(1_000_000):
        first = _random_utf8(rng, lengths[0])
        head = _random_utf8(rng, lengths[1] - 8)
        rest = _tag_hash(head + bytes(8))  # the hash of the second tag but its last chunk
        second = head + ((_tag_hash(first) - rest) * inverse % 2**64).to_bytes(8, "little")
        try:
            second.decode("utf-8")
        except UnicodeDecodeError:
            continue
        assert second != first and _tag_hash(second) == _tag_hash(first)
        return first, second
    raise AssertionError("no colliding tags found")


@pytest.mark.parametrize("lengths", [(16, 16), (24, 24), (12, 13), (9, 20), (7, 8)])
def test_hash_collisions_are_left_to_protobuf(lengths: tuple[int, int]) -> None:
    tags = _colliding_tags(lengths, seed=sum(lengths))
    payloads = [_payload(tags[i % 2], i, 1.0, float(i)) for i in range(12)]
    payloads += [_simple_event("bystander", 1, 1.0, 1.0)]
    handled = _assert_as_protobuf_reads(payloads)
    assert handled.tolist() == [False] * 12 + [True]


mutations = st.lists(
    st.one_of(
        st.tuples(st.just("set"), st.integers(0, 300), st.integers(0, 255)),
        st.tuples(st.just("cut"), st.integers(0, 300), st.just(0)),
        st.tuples(st.just("add"), st.integers(0, 300), st.integers(0, 255)),
    ),
    max_size=3,
)


def _mutate(payload: bytes, changes: list[tuple[str, int, int]]) -> bytes:
    out = bytearray(payload)
    for kind, where, byte in changes:
        where %= len(out) + 1
        if kind == "set" and where < len(out):
            out[where] = byte
        elif kind == "cut":
            del out[where:]
        elif kind == "add":
            out.insert(where, byte)
    return bytes(out)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b/c", "ü"]) | tags, steps, walls, floats32, mutations)
    )
)
def test_damaged_records_are_never_misread(
    items: list[tuple[str, int, float, float, list[tuple[str, int, int]]]],
) -> None:
    payloads = [_mutate(_simple_event(*item[:4]), item[4]) for item in items]
    _assert_as_protobuf_reads(payloads, framed=bool(len(payloads) % 2))
