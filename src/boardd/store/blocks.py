"""Scalar points in columnar blocks: the codec, and each block's summary.

A scalar series that keeps every point stores its points in two places: sealed blocks
(``scalar_blocks``, one row of a few thousand points each) and an open tail (``scalar_points``,
one row a point), where live appends go. Every step of a block is below every step of the tail,
and blocks do not overlap, so the series is its blocks by ``first_step`` then its tail.

A block row holds:

* its summary: point count, step range, lowest and highest value (NaN skipped; ±inf counts),
  first and last value, and counts of NaN, +inf and -inf;
* ``data``: the points, compressed (see :func:`encode`);
* ``low``: its :data:`~boardd.store.block_layout.LOW_POINTS` points of lowest uniform-downsampling
  priority, from which a uniform downsampling of many blocks is chosen;
* ``segments``: for each run of :data:`SEGMENT_POINTS` points, its first, lowest, highest and
  last point, uncompressed, so that a chart of many points a pixel is answered from them
  without decoding the block (:mod:`boardd.store.scalar_reads`).
"""

from __future__ import annotations

import struct
import zlib
from typing import Any, Final, NamedTuple

import numpy as np
import numpy.typing as npt

from boardd.store import block_layout
from boardd.store.block_layout import DOWNSAMPLE_SEED, LOW_POINTS, SEGMENT_POINTS
from boardd.store.errors import BlockDamagedError

#: ``data`` layout version and flags (first byte): the high bit set when values are float32.
_VERSION: Final = 1
_FLOAT32: Final = 0x80
_HEADER = struct.Struct("<BI")  # version | flags, point count

Steps = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]


class Summary(NamedTuple):
    """What a block row says of its points without decoding them."""

    points: int
    first_step: int
    last_step: int
    min_value: float | None  # None: every value is NaN
    max_value: float | None
    first_value: float | None  # None: NaN
    last_value: float | None
    nan_count: int
    posinf_count: int
    neginf_count: int


class Block(NamedTuple):
    """A sealed block, ready for its row."""

    summary: Summary
    data: bytes
    segments: bytes
    low: bytes

    @property
    def crc(self) -> int:
        """The row's ``crc`` (:func:`boardd.store.block_layout.checksum`)."""
        return block_layout.checksum(self.segments, self.low, self.data)


def _shuffled(column: npt.NDArray[np.generic]) -> bytes:
    """The bytes of a column of fixed-size numbers, byte planes first (byte 0 of every number,
    then byte 1...): neighbouring numbers that differ only in their low bytes leave long runs
    for the compressor."""
    width = column.dtype.itemsize
    return np.ascontiguousarray(column.view(np.uint8).reshape(-1, width).T).tobytes()


def _unshuffled(raw: bytes | memoryview, count: int, dtype: type[np.generic]) -> npt.NDArray[Any]:
    width = np.dtype(dtype).itemsize
    planes = np.frombuffer(raw, dtype=np.uint8, count=count * width).reshape(width, count)
    return np.ascontiguousarray(planes.T).view(dtype).reshape(count)


def _xor_delta(bits: npt.NDArray[Any]) -> npt.NDArray[Any]:
    """Each number XOR the one before it (the first as is): close floating-point numbers share
    their sign, exponent and high mantissa bits, which become zero bytes."""
    out = bits.copy()
    out[1:] ^= bits[:-1]
    return out


def _as_float(value: float) -> float | None:
    return None if value != value else float(value)


def encode(steps: Steps, wall_times: Floats, values: Floats) -> Block:
    """A block of these points (steps strictly increasing, at least one point).

    ``data``: a header (layout version, whether values are float32, point count), then zlib of
    three byte-shuffled columns: step deltas (int64), wall times XOR the previous one's bits
    (float64), values XOR the previous one's bits (float32 when every value is a float32
    exactly, as ``simple_value`` scalars always are; else float64). Lossless: NaN payloads and
    -0.0 included."""
    steps = np.ascontiguousarray(steps, dtype=np.int64)
    wall_times = np.ascontiguousarray(wall_times, dtype=np.float64)
    values = np.ascontiguousarray(values, dtype=np.float64)
    count = int(steps.shape[0])
    if count == 0 or wall_times.shape[0] != count or values.shape[0] != count:
        raise ValueError("a block needs one wall time and one value per step, and a step")
    narrow = values.astype(np.float32)
    as_float32 = bool(
        np.array_equal(narrow.astype(np.float64).view(np.uint64), values.view(np.uint64))
    )
    deltas = np.diff(steps, prepend=np.int64(0))
    value_bits = (
        _xor_delta(narrow.view(np.uint32)) if as_float32 else _xor_delta(values.view(np.uint64))
    )
    body = b"".join(
        (
            _shuffled(deltas),
            _shuffled(_xor_delta(wall_times.view(np.uint64))),
            _shuffled(value_bits),
        )
    )
    header = _HEADER.pack(_VERSION | (_FLOAT32 if as_float32 else 0), count)
    data = header + zlib.compress(body, 1)
    return Block(
        summarise(steps, values),
        data,
        _segments(steps, wall_times, values),
        _low(steps, wall_times, values),
    )


def decode(data: bytes | memoryview) -> tuple[Steps, Floats, Floats]:
    """(steps, wall times, values) of a block's ``data``, as written. BlockDamagedError if its
    bytes are not (zlib's stream carries a checksum of what it holds)."""
    try:
        flags, count = _HEADER.unpack_from(data)
        body = zlib.decompress(memoryview(data)[_HEADER.size :])
    except (struct.error, zlib.error) as exc:
        raise BlockDamagedError(f"a block of scalar points does not decode: {exc}") from exc
    if flags & ~_FLOAT32 != _VERSION:
        raise BlockDamagedError(f"a block of scalar points of no known layout ({flags})")
    value_width = 4 if flags & _FLOAT32 else 8
    if len(body) != count * (16 + value_width):
        raise BlockDamagedError("a block of scalar points whose size is not its point count's")
    view = memoryview(body)
    steps = np.cumsum(_unshuffled(view[: 8 * count], count, np.int64))
    walls = np.bitwise_xor.accumulate(_unshuffled(view[8 * count : 16 * count], count, np.uint64))
    value_type = np.uint32 if value_width == 4 else np.uint64
    value_bits = np.bitwise_xor.accumulate(_unshuffled(view[16 * count :], count, value_type))
    if value_width == 4:
        values = value_bits.view(np.float32).astype(np.float64)
    else:
        values = value_bits.view(np.float64)
    return steps, walls.view(np.float64), values


def summarise(steps: Steps, values: Floats) -> Summary:
    """The summary of a block's points (values NaN where the store says NULL)."""
    nan = np.isnan(values)
    nan_count = int(np.count_nonzero(nan))
    real = values[~nan] if nan_count else values
    return Summary(
        points=int(steps.shape[0]),
        first_step=int(steps[0]),
        last_step=int(steps[-1]),
        min_value=float(real.min()) if real.shape[0] else None,
        max_value=float(real.max()) if real.shape[0] else None,
        first_value=_as_float(float(values[0])),
        last_value=_as_float(float(values[-1])),
        nan_count=nan_count,
        posinf_count=int(np.count_nonzero(real == np.inf)),
        neginf_count=int(np.count_nonzero(real == -np.inf)),
    )


def representative_indices(values: Floats, width: int = SEGMENT_POINTS) -> npt.NDArray[np.intp]:
    """Of each run of ``width`` points, the indices of its first, lowest, highest and last point
    (four a run, in this order; lowest and highest skip NaN and take the first of equals; a run
    of only NaN gives its first point): what :func:`boardd.data.downsample.extremes_indices`
    would keep of a bucket holding just that run."""
    count = int(values.shape[0])
    runs = -(-count // width)
    padded_low = np.full(runs * width, np.inf)
    padded_high = np.full(runs * width, -np.inf)
    nan = np.isnan(values)
    padded_low[:count] = np.where(nan, np.inf, values)
    padded_high[:count] = np.where(nan, -np.inf, values)
    base = np.arange(runs, dtype=np.intp) * width
    lowest = base + np.argmin(padded_low.reshape(runs, width), axis=1)
    highest = base + np.argmax(padded_high.reshape(runs, width), axis=1)
    last = np.minimum(base + width, count) - 1
    # A run whose points are all NaN (or padding) argmin/argmax to its first point.
    return np.stack((base, lowest, highest, last), axis=1).reshape(-1)


def _segments(steps: Steps, wall_times: Floats, values: Floats) -> bytes:
    """The ``segments`` column: the representative points of :func:`representative_indices`,
    by step, each once, as int64 steps, then float64 wall times, then float64 values."""
    chosen = np.sort(representative_indices(values).reshape(-1, 4), axis=1).reshape(-1)
    distinct = np.empty(chosen.shape[0], dtype=np.bool_)
    distinct[:1] = True
    np.not_equal(chosen[1:], chosen[:-1], out=distinct[1:])
    chosen = chosen[distinct]
    return b"".join(
        (steps[chosen].tobytes(), wall_times[chosen].tobytes(), values[chosen].tobytes())
    )


def low_priority_indices(steps: Steps, count: int = LOW_POINTS) -> npt.NDArray[np.intp]:
    """Indices (ascending) of the ``count`` points of lowest uniform-downsampling priority
    (:func:`boardd.data.downsample.downsample_indices`; all of them if there are no more)."""
    from boardd.store.reservoir import step_priorities

    if steps.shape[0] <= count:
        return np.arange(steps.shape[0])
    priorities = step_priorities(DOWNSAMPLE_SEED, steps)
    return np.sort(np.argpartition(priorities, count - 1)[:count])


def _low(steps: Steps, wall_times: Floats, values: Floats) -> bytes:
    """The ``low`` column: the points of :func:`low_priority_indices`, laid out as ``segments``."""
    chosen = low_priority_indices(steps)
    return b"".join(
        (steps[chosen].tobytes(), wall_times[chosen].tobytes(), values[chosen].tobytes())
    )


def segment_points(segments: bytes | memoryview) -> tuple[Steps, Floats, Floats]:
    """(steps, wall times, values) of a block's ``segments``: of each segment its first, lowest,
    highest and last points, by step, each once."""
    if len(segments) % 24:
        raise BlockDamagedError("a block's summary points whose size is not a whole number")
    count = len(segments) // 24
    steps = np.frombuffer(segments, dtype=np.int64, count=count)
    walls = np.frombuffer(segments, dtype=np.float64, count=count, offset=8 * count)
    values = np.frombuffer(segments, dtype=np.float64, count=count, offset=16 * count)
    return steps, walls, values
