"""Vectorized decoding of the commonest event: one legacy ``simple_value`` scalar.

tensorboardX, PyTorch's SummaryWriter and TF1's ``tf.summary.scalar`` write most of a logdir's
records as ``Event{wall_time, step, summary{value{tag, simple_value}}}``. Protobuf serializes
these fields in field-number order, so such a record has one fixed byte layout::

    09 <wall_time f64>  [10 <step varint>]  2a L1  0a L2  0a L3 <tag>  15 <value f32>

with ``L1 = L2 + 2``, ``L2 = L3 + 7`` and the step field absent when the step is 0 (proto3).
This module recognizes that layout for a whole batch of records at once with numpy and decodes
step, wall time, tag and value without touching protobuf. Anything that does not match the
layout byte for byte (another field order, metadata, a long tag, extra fields) is left for the
generic protobuf decoder, so the fast path can only be faster, never different; the tests check
it against the generic path and against TensorBoard.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

_WALL_TIME_KEY = 0x09  # field 1, fixed64
_STEP_KEY = 0x10  # field 2, varint
_SUMMARY_KEY = 0x2A  # field 5, length-delimited
_VALUE_KEY = 0x0A  # Summary.value, field 1, length-delimited
_TAG_KEY = 0x0A  # Value.tag, field 1, length-delimited
_SIMPLE_VALUE_KEY = 0x15  # Value.simple_value, field 2, fixed32
_MASK64 = (1 << 64) - 1
# The keys 2a, 0a, 0a at bytes 0, 2 and 4 of the word that starts the summary field.
_HEAD_KEYS = _SUMMARY_KEY | _VALUE_KEY << 16 | _TAG_KEY << 32
_HEAD_KEYS_MASK = 0xFF | 0xFF << 16 | 0xFF << 32
# The furthest any probe reads past a record's start: wall time, step, head, a 255-byte tag,
# the value key and four bytes of value, rounded up.
_PROBE_REACH = 512
_SHORTEST = 1 + 8 + 2 + 2 + 2 + 0 + 5  # no step, empty tag


@dataclass(slots=True)
class FastScalars:
    """The records of a batch that the fast path decoded, grouped by tag.

    ``handled`` marks, for every record of the batch, whether it was decoded here. For each tag,
    ``records[tag]`` are the record indices (ascending) and the three arrays hold the data.
    """

    handled: npt.NDArray[np.bool_]
    records: dict[str, npt.NDArray[np.int64]]
    steps: dict[str, npt.NDArray[np.int64]]
    wall_times: dict[str, npt.NDArray[np.float64]]
    values: dict[str, npt.NDArray[np.float64]]


def decode_simple_scalars(
    buffer: bytes | bytearray | memoryview,
    starts: npt.NDArray[np.int64],
    lengths: npt.NDArray[np.int64],
) -> FastScalars:
    """Decodes every record in ``buffer[starts[i]:starts[i]+lengths[i]]`` that has the layout.

    Records whose wall time is NaN are not handled here: the generic decoder records them as
    data loss. Steps whose varint is longer than 8 bytes (negative or >= 2**56) are left to the
    generic decoder too.
    """
    n = int(starts.shape[0])
    if n == 0:
        return FastScalars(np.zeros(0, dtype=np.bool_), {}, {}, {}, {})
    # Zero padding past the end lets every probe below read without bounds checks: no probe
    # reaches further than _PROBE_REACH bytes past a record's start.
    data = np.zeros(len(buffer) + _PROBE_REACH, dtype=np.uint8)
    data[: len(buffer)] = np.frombuffer(buffer, dtype=np.uint8)
    u64 = _unaligned(data, "<u8")
    starts = starts.astype(np.int64, copy=False)
    ends = starts + lengths

    ok = (lengths >= _SHORTEST) & (data[starts] == _WALL_TIME_KEY)
    pos = starts + 9
    has_step = data[pos] == _STEP_KEY
    steps, step_len = _varints(u64[pos + 1])
    ok &= ~has_step | (step_len > 0)
    steps = np.where(has_step, steps, np.uint64(0))
    pos = np.where(has_step, pos + 1 + step_len, pos)

    head = u64[pos]  # 2a L1 0a L2 0a L3, little-endian in one word
    len1 = ((head >> np.uint64(8)) & np.uint64(0xFF)).astype(np.int64)
    len2 = ((head >> np.uint64(24)) & np.uint64(0xFF)).astype(np.int64)
    len3 = ((head >> np.uint64(40)) & np.uint64(0xFF)).astype(np.int64)
    ok &= (head & np.uint64(_HEAD_KEYS_MASK)) == np.uint64(_HEAD_KEYS)
    ok &= (len1 < 0x80) & (len1 == len2 + 2) & (len2 == len3 + 7)
    tag_start = pos + 6
    value_pos = tag_start + len3
    ok &= data[value_pos] == _SIMPLE_VALUE_KEY
    ok &= value_pos + 5 == ends

    idx = np.flatnonzero(ok)
    if idx.shape[0] == 0:
        return FastScalars(ok, {}, {}, {}, {})
    wall = _unaligned(data, "<f8")[starts[idx] + 1]
    finite_wall = ~np.isnan(wall)
    if not finite_wall.all():
        ok[idx[~finite_wall]] = False
        idx = idx[finite_wall]
        wall = wall[finite_wall]
    values = _unaligned(data, "<f4")[value_pos[idx] + 1].astype(np.float64)
    step_values = steps[idx].view(np.int64)
    return _group_by_tag(u64, ok, idx, tag_start[idx], len3[idx], step_values, wall, values)


def _unaligned(data: npt.NDArray[np.uint8], dtype: str) -> npt.NDArray[Any]:
    """A view of ``data`` whose element ``i`` is the value of type ``dtype`` starting at byte i."""
    size = np.dtype(dtype).itemsize
    return np.ndarray(
        shape=(data.shape[0] - size + 1,), dtype=dtype, buffer=data, offset=0, strides=(1,)
    )


def _varints(words: npt.NDArray[np.uint64]) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.int64]]:
    """Decodes the varint at the start of each 8-byte little-endian word.

    Length 0 marks a varint that does not end within the 8 bytes.
    """
    high_bits = np.uint64(0x8080808080808080)
    ends = ~words & high_bits  # the high bit of each byte that ends a varint
    lowest = ends & (~ends + np.uint64(1))
    length = np.where(ends != 0, np.bitwise_count(lowest - np.uint64(1)) // 8 + 1, 0)
    value = np.zeros(words.shape[0], dtype=np.uint64)
    for i in range(8):
        part = ((words >> np.uint64(8 * i)) & np.uint64(0x7F)) << np.uint64(7 * i)
        value |= np.where(length > i, part, np.uint64(0))
    return value, length.astype(np.int64)


def _group_by_tag(
    u64: npt.NDArray[np.uint64],
    ok: npt.NDArray[np.bool_],
    idx: npt.NDArray[np.int64],
    tag_start: npt.NDArray[np.int64],
    tag_len: npt.NDArray[np.int64],
    steps: npt.NDArray[np.int64],
    wall: npt.NDArray[np.float64],
    values: npt.NDArray[np.float64],
) -> FastScalars:
    out = FastScalars(ok, {}, {}, {}, {})
    groups: list[tuple[str, npt.NDArray[np.int64]]] = []
    # Tags of one length are read as rows of 8-byte words and grouped by a 64-bit hash of their
    # words (a sort of integers, not of strings); every group is then compared word for word
    # with its first member, so a hash collision can never merge two tags.
    lengths_present = np.flatnonzero(np.bincount(tag_len)).tolist()
    for length in lengths_present:
        if len(lengths_present) == 1:
            sel = np.arange(tag_len.shape[0])
        else:
            sel = np.flatnonzero(tag_len == length)
        words = _tag_words(u64, tag_start[sel], length)
        h = np.full(sel.shape[0], np.uint64((length * 0x9E3779B97F4A7C15) & _MASK64))
        for j in range(words.shape[1]):
            h ^= words[:, j]
            h *= np.uint64(0xBF58476D1CE4E5B9)
            h ^= h >> np.uint64(31)
        keys, inverse = np.unique(h, return_inverse=True)
        if keys.shape[0] == 1:
            order = np.arange(sel.shape[0])
            bounds = np.array([0, sel.shape[0]])
        else:
            order = np.argsort(inverse, kind="stable")
            bounds = np.searchsorted(inverse[order], np.arange(keys.shape[0] + 1))
        for g in range(keys.shape[0]):
            members = order[bounds[g] : bounds[g + 1]]
            first = words[members[0]]
            raw_tag = first.tobytes()[:length]
            if not (words[members] == first).all():
                out.handled[idx[sel[members]]] = False  # a hash collision: leave to protobuf
                continue
            try:
                tag = raw_tag.decode("utf-8")
            except UnicodeDecodeError:
                out.handled[idx[sel[members]]] = False  # protobuf's verdict, not ours
                continue
            groups.append((tag, sel[members]))
    for tag, members in groups:
        out.records[tag] = idx[members]
        out.steps[tag] = steps[members]
        out.wall_times[tag] = wall[members]
        out.values[tag] = values[members]
    return out


def _tag_words(
    u64: npt.NDArray[np.uint64], start: npt.NDArray[np.int64], length: int
) -> npt.NDArray[np.uint64]:
    """The tags starting at ``start`` (all ``length`` bytes long) as rows of 8-byte words, the
    bytes past the tag zeroed."""
    count = max(1, (length + 7) // 8)
    words = np.empty((start.shape[0], count), dtype=np.uint64)
    for j in range(count):
        words[:, j] = u64[start + 8 * j]
    tail = length - 8 * (count - 1)
    if tail < 8:
        words[:, -1] &= np.uint64((1 << (8 * tail)) - 1)
    return words
