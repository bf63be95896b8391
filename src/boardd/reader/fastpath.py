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

Performance notes (a batch holds ~10^5 records; what costs is the number of passes numpy makes
over arrays of that length, and fresh memory, which costs a page fault per page):

- Each record is read with two gathers: a window of its first bytes and a window of its last
  bytes (a gather costs about the same whatever the width of its items). Every field but the
  head sits at a fixed offset in one of them: the head is the only field whose place depends on
  the step's varint, and the tag ends where the value key starts, five bytes before the end.
  The buffer itself is never copied.
- Records are checked and decoded in blocks of ``_BLOCK``, so that the temporaries of the dozens
  of passes stay in the CPU cache; only the results are batch-sized. A block whose steps all
  have varints of one length (the usual case) takes shorter, constant-shift paths.
- Records are grouped by tag through a 64-bit hash of the tag's bytes, stably sorted on its top
  16 bits (numpy radix-sorts 16-bit keys in linear time). Only when two hashes of a batch share
  those bits and their records interleave does it fall back to sorting on the whole hash.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

_WALL_TIME_KEY = 0x09  # field 1, fixed64
_STEP_KEY = 0x10  # field 2, varint
_SUMMARY_KEY = 0x2A  # field 5, length-delimited
_VALUE_KEY = 0x0A  # Summary.value, field 1, length-delimited
_TAG_KEY = 0x0A  # Value.tag, field 1, length-delimited
_SIMPLE_VALUE_KEY = 0x15  # Value.simple_value, field 2, fixed32
# The bytes of a record besides the step field and the tag: the wall time and its key, the
# six bytes of keys and lengths before the tag, the value and its key.
_FIXED_BYTES = 1 + 8 + 6 + 1 + 4
_TAG_OFFSET = 1 + 8 + 6  # where the tag starts when there is no step field
_LONGEST_TAG = 0x7F - 9  # L1 = L3 + 9 must be a one-byte varint
# The head ``2a L1 0a L2 0a L3`` read as a little-endian integer is _HEAD_BASE + L3 * _HEAD_STEP.
_HEAD_BASE = _SUMMARY_KEY | 9 << 8 | _VALUE_KEY << 16 | 7 << 24 | _TAG_KEY << 32
_HEAD_STEP = 1 << 8 | 1 << 24 | 1 << 40
_HEAD_MASK = (1 << 48) - 1
# A record's first bytes, from 7 bytes before it so that its words are: the key (top byte),
# the wall time, the step key and 7 bytes of varint, and the 8 bytes after those. The head
# starts within the last two, wherever the step field ends.
_FRONT = 7
_FRONT_WIDTH = 32
_TAIL_FIXED = 5  # the value and its key end a record; the tag ends just before them
_VARINT_ENDS = 0x8080808080808000  # bit 7 of the varint bytes in a word that starts at the key
_VARINT_PAYLOAD = 0x7F7F7F7F7F7F7F7F
_ALL_ONES = (1 << 64) - 1
_HASH_LENGTH = 0x9E3779B97F4A7C15
_HASH_STEP = 0xBF58476D1CE4E5B9
_SLOT_SHIFT = 48  # a hash's top 16 bits are its slot in the radix sort
_REJECTED = 0xFFFF  # the slot of records the fast path does not handle: they sort last
# Large enough that numpy's per-call overhead is small, small enough that a block's temporaries
# (~100 bytes a record) stay in cache.
_BLOCK = 1 << 14
_U64 = np.dtype("<u8")


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


@dataclass(slots=True)
class _Decoded:
    """What the block pass found for every record of a batch; only meaningful where ``ok``."""

    ok: npt.NDArray[np.bool_]
    hashes: npt.NDArray[np.uint64]
    steps: npt.NDArray[np.uint64]
    wall_times: npt.NDArray[np.float64]
    value_bits: npt.NDArray[np.uint32]
    slots: npt.NDArray[np.uint16]
    step_bytes: npt.NDArray[np.uint8]
    tag_len: npt.NDArray[np.uint8]
    # Chunk j + 1 of each tag (see _decode_block); chunk 0 only goes into the hash.
    chunks: list[npt.NDArray[np.uint64]] = field(default_factory=list)

    @classmethod
    def empty(cls, n: int) -> _Decoded:
        # One allocation rather than seven: every page of fresh memory costs a page fault,
        # which the allocator and the kernel (huge pages) handle better in one large block.
        arena = np.empty(32 * n, dtype=np.uint8)
        return cls(
            ok=np.empty(n, dtype=np.bool_),
            hashes=arena[: 8 * n].view(np.uint64),
            steps=arena[8 * n : 16 * n].view(np.uint64),
            wall_times=arena[16 * n : 24 * n].view(np.float64),
            value_bits=arena[24 * n : 28 * n].view(np.uint32),
            slots=arena[28 * n : 30 * n].view(np.uint16),
            step_bytes=arena[30 * n : 31 * n],
            tag_len=arena[31 * n :],
        )

    def chunk(self, j: int) -> npt.NDArray[np.uint64]:
        """Where chunk ``j`` (at least 1) of the tags goes; zero until written."""
        while len(self.chunks) < j:
            self.chunks.append(np.zeros(self.ok.shape[0], dtype=np.uint64))
        return self.chunks[j - 1]


def decode_simple_scalars(
    buffer: bytes | bytearray | memoryview,
    starts: npt.NDArray[np.int64],
    lengths: npt.NDArray[np.int64],
) -> FastScalars:
    """Decodes every record in ``buffer[starts[i]:starts[i]+lengths[i]]`` that has the layout.

    Records whose wall time is NaN or infinite are not handled here: the generic decoder
    records them as data loss. Steps whose varint is longer than 8 bytes (negative or >= 2**56)
    are left to the generic decoder too, and so are tags that are not valid UTF-8.
    """
    n = int(starts.shape[0])
    if n == 0:
        return FastScalars(np.zeros(0, dtype=np.bool_), {}, {}, {}, {})
    data = np.frombuffer(buffer, dtype=np.uint8)
    starts = starts.astype(np.int64, copy=False)
    lengths = lengths.astype(np.int64, copy=False)
    out = _Decoded.empty(n)
    for a in range(0, n, _BLOCK):
        _decode_block(data, starts[a : a + _BLOCK], lengths[a : a + _BLOCK], out, a)

    ok = out.ok
    count = int(np.count_nonzero(ok))
    if count == 0:
        return FastScalars(ok, {}, {}, {}, {})
    # The three columns in one allocation, for the reason given in _Decoded.empty; until they
    # are filled, they serve as scratch.
    columns = np.empty((3, count), dtype=np.float64)
    scratch = columns[:2].view(np.uint64)
    sel, bounds = _group(out.hashes, out.slots, ok, count, scratch=scratch[0])
    # The records of a run have one tag if their lengths and chunks agree; the hash vouches for
    # chunk 0 (see _hash_factor), which is why it was not kept.
    checked: list[npt.NDArray[Any]] = list(out.chunks)
    if int(np.min(out.tag_len, where=ok, initial=255)) != int(
        np.max(out.tag_len, where=ok, initial=0)
    ):
        checked.append(out.tag_len)
    same = _constant_runs(checked, sel, bounds, scratch=scratch[1])
    steps = np.take(out.steps.view(np.int64), sel, out=columns[0].view(np.int64))
    wall = np.take(out.wall_times, sel, out=columns[1])
    # The hashes are spent: their room takes the values' bits on their way to float64.
    bits = np.take(out.value_bits, sel, out=out.hashes.view(np.uint32)[:count])
    values = columns[2]
    # A signalling NaN (a corrupt or hand-made value) raises "invalid" on the way to float64;
    # it arrives as a quiet NaN, as Python's own float conversion gives it.
    with np.errstate(invalid="ignore"):
        np.copyto(values, bits.view(np.float32))
    return _collect(data, ok, sel, bounds, same, starts, out, steps, wall, values)


def _decode_block(
    data: npt.NDArray[np.uint8],
    starts: npt.NDArray[np.int64],
    lengths: npt.NDArray[np.int64],
    out: _Decoded,
    a: int,
) -> None:
    """Checks and decodes records ``a, a + 1, ...`` into ``out``."""
    b = a + starts.shape[0]
    ok = out.ok[a:b]
    front = _windows(data, starts - _FRONT, _FRONT_WIDTH)
    np.equal(front[:, _FRONT], _WALL_TIME_KEY, out=ok)
    wall = _column(front, _FRONT + 1, out=out.wall_times[a:b].view(np.uint64)).view(np.float64)
    ok &= np.isfinite(wall)  # NaN and ±inf wall times are the generic decoder's to report
    low = _column(front, _FRONT + 9)
    high = _column(front, _FRONT + 17)
    del front
    step_bytes = out.step_bytes[a:b]
    size = _common_step_field(low, ok)
    if size is None:
        _steps(low, high, ok, out.steps[a:b], step_bytes)
        head = _head_at(low, high, step_bytes)
        tag_len = lengths - step_bytes
    else:
        # The usual block: steps of one varint length. The same work, with constant shifts.
        step_bytes.fill(size)
        _fixed_steps(low, size - 1, out.steps[a:b])
        head = _fixed_head(low, high, size)
        tag_len = lengths - size
    del low, high
    # Given the step field's size, the record's length fixes the tag's length, and with it
    # every byte of the head: one comparison checks all three keys and lengths.
    tag_len -= _FIXED_BYTES
    ok &= tag_len.view(np.uint64) <= _LONGEST_TAG  # negative lengths wrap to huge
    expected = tag_len.view(np.uint64) * np.uint64(_HEAD_STEP)
    expected += np.uint64(_HEAD_BASE)
    ok &= head == expected
    del head, expected
    np.copyto(out.tag_len[a:b], tag_len, casting="unsafe")  # exact where ok

    tag_len8 = out.tag_len[a:b]
    longest = int(np.max(tag_len8, where=ok, initial=0))
    shortest = int(np.min(tag_len8, where=ok, initial=longest))
    count = (longest + 7) // 8
    width = 8 * count + 8  # the tag's chunks, the value and its key, rounded up to 8 bytes
    ends = starts + lengths
    ends -= width
    tail = _windows(data, ends, width)
    del ends
    last = _column(tail, width - 8)  # the tag's last 3 bytes, the value key, the value
    np.right_shift(last, np.uint64(32), out=out.value_bits[a:b], casting="unsafe")
    last >>= np.uint64(24)
    last &= np.uint64(0xFF)
    ok &= last == _SIMPLE_VALUE_KEY
    del last

    h = np.multiply(tag_len.view(np.uint64), np.uint64(_HASH_LENGTH), out=out.hashes[a:b])
    scratch = np.empty_like(h)
    for j in range(count):
        chunk = _column(
            tail, width - _TAIL_FIXED - 8 * (j + 1), out=out.chunk(j)[a:b] if j else None
        )
        if shortest == longest:
            keep = min(8, longest - 8 * j)  # the chunk's bytes that belong to the tag
            if keep < 8:
                chunk &= np.uint64((_ALL_ONES << (64 - 8 * keep)) & _ALL_ONES)
        else:
            # The same, record by record (numpy shifts by 64 bits or more give 0).
            shift = np.multiply(tag_len, -8)
            shift += 64 * (j + 1)
            np.clip(shift, 0, 64, out=shift)
            chunk &= np.left_shift(np.uint64(_ALL_ONES), shift.view(np.uint64))
        np.multiply(chunk, np.uint64(_hash_factor(j)), out=scratch)
        h += scratch
    slots = np.right_shift(h, np.uint64(_SLOT_SHIFT), out=scratch)
    np.minimum(slots, np.uint64(_REJECTED - 1), out=slots)
    np.copyto(slots, np.uint64(_REJECTED), where=~ok)
    np.copyto(out.slots[a:b], slots, casting="unsafe")


def _windows(
    data: npt.NDArray[np.uint8], positions: npt.NDArray[np.int64], width: int
) -> npt.NDArray[np.uint8]:
    """Row ``i`` holds ``data[positions[i] : positions[i] + width]``, zero where that runs off the
    data on either side."""
    size = data.shape[0]
    n = positions.shape[0]
    if size < width:
        outside = np.ones(n, dtype=np.bool_)
        rows = np.empty((n, width), dtype=np.uint8)
    else:
        items = np.ndarray(
            shape=(size - width + 1,), dtype=np.dtype((np.void, width)), buffer=data, strides=(1,)
        )
        if int(positions.min()) >= 0 and int(positions.max()) <= size - width:
            return items[positions].view(np.uint8).reshape(n, width)
        outside = positions < 0
        outside |= positions > size - width
        rows = items[np.where(outside, 0, positions)].view(np.uint8).reshape(n, width)
    edge = np.flatnonzero(outside)
    if size == 0:
        rows[edge] = 0
        return rows
    at = positions[edge, None] + np.arange(width)
    rows[edge] = np.where((at >= 0) & (at < size), data[np.clip(at, 0, size - 1)], 0)
    return rows


def _column(
    rows: npt.NDArray[np.uint8], offset: int, out: npt.NDArray[np.uint64] | None = None
) -> npt.NDArray[np.uint64]:
    """The little-endian 64-bit word at byte ``offset`` of each row, as a contiguous array.

    numpy works on a strided column much slower than on a contiguous one; a copy
    costs about one such operation.
    """
    column = np.ndarray(
        shape=(rows.shape[0],), dtype=_U64, buffer=rows, offset=offset, strides=(rows.shape[1],)
    )
    if out is None:
        return column.copy()
    np.copyto(out, column)
    return out


def _common_step_field(low: npt.NDArray[np.uint64], ok: npt.NDArray[np.bool_]) -> int | None:
    """The size of the step field of the records marked in ``ok`` if they all have a step whose
    varint is as long as the first one's, of 1 to 7 bytes."""
    first = int(np.argmax(ok))
    word = int(low[first])
    if not ok[first] or word & 0xFF != _STEP_KEY:
        return None
    # The key, then varint bytes with their high bit set but the last.
    mask, pattern = 0xFF, _STEP_KEY
    for length in range(1, 8):
        mask |= 0x80 << 8 * length
        if not word & 0x80 << 8 * length:
            matches = (low & np.uint64(mask)) == np.uint64(pattern)
            matches |= ~ok
            return 1 + length if matches.all() else None
        pattern |= 0x80 << 8 * length
    return None


def _fixed_steps(low: npt.NDArray[np.uint64], length: int, steps: npt.NDArray[np.uint64]) -> None:
    """Decodes into ``steps`` the varints of ``length`` bytes that follow the step key."""
    np.right_shift(low, np.uint64(8), out=steps)
    steps &= np.uint64(_VARINT_PAYLOAD & ((1 << 8 * length) - 1))
    _pack_septets(steps, length, scratch=np.empty_like(steps))


def _fixed_head(
    low: npt.NDArray[np.uint64], high: npt.NDArray[np.uint64], size: int
) -> npt.NDArray[np.uint64]:
    """The six bytes that follow a step field of ``size`` bytes, as a little-endian integer."""
    found = low >> np.uint64(8 * size)
    if size > 2:
        found |= high << np.uint64(64 - 8 * size)
    found &= np.uint64(_HEAD_MASK)
    return found


def _steps(
    low: npt.NDArray[np.uint64],
    high: npt.NDArray[np.uint64],
    ok: npt.NDArray[np.bool_],
    steps: npt.NDArray[np.uint64],
    step_bytes: npt.NDArray[np.uint8],
) -> None:
    """Decodes the step field from the 16 bytes after the wall time into ``steps`` (0 where the
    field is absent) and ``step_bytes``, the field's size (0, or 1 + the varint's length).
    Clears ``ok`` where the varint does not end within 8 bytes."""
    has_step = low.astype(np.uint8) == _STEP_KEY
    ends = np.invert(low)
    ends &= np.uint64(_VARINT_ENDS)  # the high bit of each varint byte that may end it
    # Up to and including the lowest such bit: the key and the varint.
    mask = ends - np.uint64(1)
    mask ^= ends
    np.bitwise_count(mask, out=step_bytes)
    step_bytes >>= 3
    step_bytes *= has_step
    varint = np.bitwise_and(low, mask, out=steps)
    varint >>= np.uint64(8)
    varint &= np.uint64(_VARINT_PAYLOAD)
    np.copyto(varint, np.uint64(0), where=~has_step)
    unended = ends == 0
    unended &= has_step
    if unended.any():
        # The varint's eighth byte is the first of ``high``: it must end there.
        rows = np.flatnonzero(unended)
        last = high[rows] & np.uint64(0xFF)
        ok[rows[last >= 0x80]] = False
        step_bytes[rows] = 9
        varint[rows] = (low[rows] >> np.uint64(8) | last << np.uint64(56)) & np.uint64(
            _VARINT_PAYLOAD
        )
    _pack_septets(varint, int(step_bytes.max()) - 1, scratch=mask)


def _pack_septets(
    payload: npt.NDArray[np.uint64], size: int, scratch: npt.NDArray[np.uint64]
) -> None:
    """Packs, in place, the low 7 bits of the first ``size`` bytes of each word (its other bits
    zero) into one integer, little end first. ``scratch`` is overwritten."""
    if size >= 2:
        # Each pair of bytes b0 + 256 b1 becomes b0 + 128 b1.
        np.right_shift(payload, np.uint64(1), out=scratch)
        scratch &= np.uint64(0x3F803F803F803F80)
        payload -= scratch
    # Then each pair of 14-bit groups, then each pair of 28-bit groups.
    for fits, shift, low in ((2, 2, 0x00003FFF00003FFF), (4, 4, 0x0FFFFFFF)):
        if size <= fits:
            break
        np.right_shift(payload, np.uint64(shift), out=scratch)
        scratch &= np.uint64(low << 7 * shift)  # the upper group of each pair, moved down
        payload &= np.uint64(low)
        payload |= scratch


def _head_at(
    low: npt.NDArray[np.uint64], high: npt.NDArray[np.uint64], step_bytes: npt.NDArray[np.uint8]
) -> npt.NDArray[np.uint64]:
    """The six bytes that follow the step field of each record, as a little-endian integer."""
    # The head starts ``step_bytes`` bytes into ``low``: shift it out of ``low`` and ``high``.
    shift = step_bytes.astype(np.uint64)
    shift <<= np.uint64(3)
    found = low >> shift
    np.subtract(np.uint64(64), shift, out=shift)  # numpy shifts by 64 or more give 0
    np.left_shift(high, shift, out=shift)
    found |= shift
    found &= np.uint64(_HEAD_MASK)
    nine = step_bytes == 9  # an 8-byte varint: the head lies in ``high`` alone, one byte in
    if nine.any():
        found[nine] = (high[nine] >> np.uint64(8)) & np.uint64(_HEAD_MASK)
    return found


def _hash_factor(j: int) -> int:
    """The odd multiplier of chunk ``j`` in a tag's hash."""
    return (_HASH_STEP * (2 * j + 1)) & _ALL_ONES


# A tag's hash is tag_len * _HASH_LENGTH + sum(chunk[j] * _hash_factor(j)) modulo 2**64: the
# chunks past a tag's end are zero and add nothing, so blocks may read different numbers of
# chunks. Every factor is odd, so given the other words the hash is a bijection of any one of
# them: records with equal hashes and all words equal but one have that one equal too.


def _group(
    h: npt.NDArray[np.uint64],
    slots: npt.NDArray[np.uint16],
    ok: npt.NDArray[np.bool_],
    count: int,
    scratch: npt.NDArray[np.uint64],
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.intp]]:
    """The ``count`` records marked in ``ok``, ordered so that equal hashes are contiguous and
    ascending within, and the bounds of those runs (``bounds[g]:bounds[g+1]`` is run ``g``).
    ``slots`` are the hashes' top bits, the records not marked in ``ok`` in the last slot."""
    sel = np.argsort(slots, kind="stable")[:count]
    sorted_h = np.take(h, sel, out=scratch)
    bounds = _runs(sorted_h)
    keys = sorted_h[bounds[:-1]]
    ordered = np.sort(keys)  # (np.unique would do, but imports numpy.ma, costly once per process)
    if bool((ordered[1:] == ordered[:-1]).any()):
        # Two hashes share a slot and their records interleave: sort on the whole hash.
        idx = np.flatnonzero(ok)
        sel = idx[np.argsort(h[idx], kind="stable")]
        bounds = _runs(h[sel])
    return sel, bounds


def _runs(sorted_keys: npt.NDArray[Any]) -> npt.NDArray[np.intp]:
    """The start of every run of equal values, and the end of the last one."""
    changes = np.flatnonzero(sorted_keys[1:] != sorted_keys[:-1])
    bounds = np.empty(changes.shape[0] + 2, dtype=np.intp)
    bounds[0] = 0
    np.add(changes, 1, out=bounds[1:-1])
    bounds[-1] = sorted_keys.shape[0]
    return bounds


def _constant_runs(
    words: list[npt.NDArray[Any]],
    sel: npt.NDArray[np.intp],
    bounds: npt.NDArray[np.intp],
    scratch: npt.NDArray[np.uint64],
) -> npt.NDArray[np.bool_]:
    """For each run of ``sel``, whether ``words`` are the same for all its records: this is
    what keeps a hash collision from merging two tags."""
    same = np.ones(bounds.shape[0] - 1, dtype=np.bool_)
    inner = bounds[1:-1] - 1  # the last position of each run but the final one
    for word in words:
        w = np.take(word, sel, out=scratch) if word.dtype == scratch.dtype else word[sel]
        change = w[1:] != w[:-1]
        if int(np.count_nonzero(change)) == int(np.count_nonzero(change[inner])):
            continue
        change[inner] = False  # what remains are changes inside a run
        same &= ~np.logical_or.reduceat(np.append(change, False), bounds[:-1])
    return same


def _collect(
    data: npt.NDArray[np.uint8],
    ok: npt.NDArray[np.bool_],
    sel: npt.NDArray[np.intp],
    bounds: npt.NDArray[np.intp],
    same: npt.NDArray[np.bool_],
    starts: npt.NDArray[np.int64],
    decoded: _Decoded,
    steps: npt.NDArray[np.int64],
    wall: npt.NDArray[np.float64],
    values: npt.NDArray[np.float64],
) -> FastScalars:
    """The runs as tags, in order of first appearance; runs that are not one tag, or whose tag is
    not UTF-8, are unmarked in ``ok`` for protobuf to decide."""
    out = FastScalars(ok, {}, {}, {}, {})
    firsts = sel[bounds[:-1]].tolist()
    lows = bounds[:-1].tolist()
    highs = bounds[1:].tolist()
    for g in sorted(range(len(firsts)), key=firsts.__getitem__):
        lo, hi, first = lows[g], highs[g], firsts[g]
        if same[g]:
            start = int(starts[first]) + _TAG_OFFSET + int(decoded.step_bytes[first])
            raw = data[start : start + int(decoded.tag_len[first])].tobytes()
            try:
                tag = raw.decode("utf-8")
            except UnicodeDecodeError:
                pass  # protobuf's verdict, not ours
            else:
                out.records[tag] = sel[lo:hi]
                out.steps[tag] = steps[lo:hi]
                out.wall_times[tag] = wall[lo:hi]
                out.values[tag] = values[lo:hi]
                continue
        ok[sel[lo:hi]] = False
    return out
