"""The client's decoding of answers into numpy: TensorBoard's non-finite spellings, tensor
values of every dtype, string tensors, and scalar CSV read as it arrives, a chunk at a time."""

from __future__ import annotations

import base64
import csv
import itertools
import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from boardd.client.answers import BoarddError, ScalarChunk, TensorDatum

NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
_NUMPY_DTYPES = {
    "DT_FLOAT": np.float32,
    "DT_DOUBLE": np.float64,
    "DT_HALF": np.float16,
    "DT_BFLOAT16": np.float32,
    "DT_INT8": np.int8,
    "DT_INT16": np.int16,
    "DT_INT32": np.int32,
    "DT_INT64": np.int64,
    "DT_UINT8": np.uint8,
    "DT_UINT16": np.uint16,
    "DT_UINT32": np.uint32,
    "DT_UINT64": np.uint64,
    "DT_BOOL": np.bool_,
    "DT_COMPLEX64": np.complex64,
    "DT_COMPLEX128": np.complex128,
}


def floats(values: Sequence[float | str]) -> npt.NDArray[np.float64]:
    """JSON scalar values (non-finite ones spelled as TensorBoard does) as float64."""
    return np.array([NON_FINITE[v] if isinstance(v, str) else v for v in values], dtype=np.float64)


def concat(arrays: list[npt.NDArray[Any]], dtype: type[np.generic]) -> npt.NDArray[Any]:
    """The arrays end to end (an empty array of ``dtype`` for none)."""
    return np.concatenate(arrays) if arrays else np.array([], dtype=dtype)


#: The columns of the data API's scalar CSV (``format=csv``), its first row.
CSV_COLUMNS = ["run", "tag", "step", "wall_time", "value"]


class CutOff(Exception):
    """A CSV answer ended within a row: it is incomplete."""


#: Rows decoded at once: the only Python objects a row gets (a list of strings, some hundred
#: bytes each) exist for so many rows at a time; the points go on as numpy columns.
ROWS_AT_ONCE = 2048


def csv_chunks(data: Iterable[bytes], chunk_points: int) -> Iterator[ScalarChunk]:
    """The points of a scalar CSV answer, given as its bytes in pieces of any size, in chunks
    of at most ``chunk_points`` points of one series each, decoded as they arrive: rows exist
    as Python objects :data:`ROWS_AT_ONCE` at a time, points as numpy columns a chunk at a
    time. :class:`CutOff` if the text ends within a row; BoarddError (``undecodable``) if it
    is not the data API's CSV."""
    rows = csv.reader(_lines(data), strict=True)
    held: list[ScalarChunk] = []  # the next chunk's parts (of one series)
    count = 0
    try:
        header = next(rows, None)
        if header is not None and header != CSV_COLUMNS:
            raise _undecodable(f"the first row is {header!r}, not {CSV_COLUMNS!r}")
        while batch := list(itertools.islice(rows, ROWS_AT_ONCE)):
            for part in _chunks_of(batch):
                if held and (held[0].run, held[0].tag) != (part.run, part.tag):
                    yield _joined(held)
                    held, count = [], 0
                while len(part):
                    room = chunk_points - count
                    held.append(_cut(part, 0, room))
                    count += len(held[-1])
                    part = _cut(part, room, len(part))
                    if count == chunk_points:
                        yield _joined(held)
                        held, count = [], 0
        if held:
            yield _joined(held)
    except csv.Error as exc:
        raise _undecodable(str(exc)) from exc


def _cut(chunk: ScalarChunk, start: int, end: int) -> ScalarChunk:
    part = slice(start, end)
    return ScalarChunk(
        chunk.run, chunk.tag, chunk.steps[part], chunk.wall_times[part], chunk.values[part]
    )


def _joined(parts: list[ScalarChunk]) -> ScalarChunk:
    """Consecutive parts of one series as one chunk (arrays of their own)."""
    first = parts[0]
    return ScalarChunk(
        first.run,
        first.tag,
        np.concatenate([p.steps for p in parts]),
        np.concatenate([p.wall_times for p in parts]),
        np.concatenate([p.values for p in parts]),
    )


def _lines(data: Iterable[bytes]) -> Iterator[str]:
    """The text's lines, each with its ``\n``, as soon as they are complete."""
    pending = b""
    for piece in data:
        end = piece.rfind(b"\n")
        if end < 0:
            pending += piece
            continue
        # A cut at a newline byte never splits a UTF-8 character.
        text = (pending + piece[: end + 1]).decode("utf-8")
        pending = piece[end + 1 :]
        lines = text.split("\n")
        lines.pop()  # after the last newline: nothing
        for line in lines:
            yield line + "\n"
    if pending:
        raise CutOff(f"the answer ends within a row ({pending[:80]!r})")


def _chunks_of(rows: list[list[str]]) -> Iterator[ScalarChunk]:
    """Consecutive rows as chunks, one per series they hold."""
    if any(len(row) != len(CSV_COLUMNS) for row in rows):
        bad = next(row for row in rows if len(row) != len(CSV_COLUMNS))
        raise _undecodable(f"a row of {len(bad)} fields, not {len(CSV_COLUMNS)}: {bad!r}")
    runs, tags, steps, walls, values = zip(*rows, strict=True)
    n = len(rows)
    try:
        step_column = np.fromiter(map(int, steps), np.int64, n)
        # float() reads repr()'s text back exactly, and NaN, Infinity, -Infinity.
        wall_column = np.fromiter(map(float, walls), np.float64, n)
        value_column = np.fromiter(map(float, values), np.float64, n)
    except ValueError as exc:
        raise _undecodable(str(exc)) from exc
    start = 0
    for (run, tag), same in itertools.groupby(zip(runs, tags, strict=True)):
        end = start + sum(1 for _ in same)
        yield ScalarChunk(
            run, tag, step_column[start:end], wall_column[start:end], value_column[start:end]
        )
        start = end


def _undecodable(what: str) -> BoarddError:
    return BoarddError(0, "undecodable", f"the answer is not the data API's scalar CSV: {what}")


def tensor_datum(datum: Mapping[str, Any]) -> TensorDatum:
    """One point of a tensor answer, its values as a numpy array of their dtype and shape."""
    dtype = str(datum["dtype"])
    shape = tuple(int(d) for d in datum["shape"])
    return TensorDatum(
        int(datum["step"]), float(datum["wall_time"]), dtype, shape, _values(datum["values"], dtype)
    )


def _values(values: Any, dtype: str) -> npt.NDArray[Any]:
    """The server's JSON tensor values as a numpy array of their dtype."""
    if isinstance(values, dict) and "error" in values:
        raise BoarddError(0, "undecodable", f"the server could not decode a tensor: {values}")
    if dtype == "DT_STRING":
        flat = np.empty(_count(values), dtype=object)
        flat[:] = [_text(v) for v in _flatten(values)]
        return flat.reshape(_shape_of(values))
    numpy_dtype = _NUMPY_DTYPES.get(dtype)
    if numpy_dtype is None:
        return np.array(values, dtype=object)
    if dtype.startswith("DT_COMPLEX"):
        pairs = np.array(unspell(values), dtype=np.float64)
        return (pairs[..., 0] + 1j * pairs[..., 1]).astype(numpy_dtype)
    return np.array(unspell(values), dtype=numpy_dtype)


def unspell(values: Any) -> Any:
    """Nested lists with TensorBoard's non-finite spellings turned back into floats."""
    if isinstance(values, list):
        return [unspell(v) for v in values]
    if isinstance(values, str):
        return NON_FINITE[values]
    return values


def _text(value: Any) -> str | bytes:
    if isinstance(value, dict):
        return base64.b64decode(value["base64"])
    return str(value)


def _flatten(values: Any) -> list[Any]:
    if isinstance(values, list):
        return [leaf for v in values for leaf in _flatten(v)]
    return [values]


def _count(values: Any) -> int:
    return len(_flatten(values))


def _shape_of(values: Any) -> tuple[int, ...]:
    shape: list[int] = []
    while isinstance(values, list):
        shape.append(len(values))
        if not values:
            break
        values = values[0]
    return tuple(shape)
