"""List and read time series with bounds: which series match, whether the answer fits, and their
points after the filters (run/tag, step range, latest, downsample, index range, in that order)."""

from __future__ import annotations

import bisect
import itertools
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, TypeVar

import apsw

from boardd.data import accel, columns
from boardd.data.blobs import blob_key
from boardd.data.downsample import Indices, downsample_indices, extremes_indices
from boardd.data.errors import BadRequest, TooLarge
from boardd.data.kinds import Kind
from boardd.data.values import tensor_value
from boardd.reader.tensors import dtype_name
from boardd.store import queries, scalar_reads
from boardd.store.queries import SeriesInfo
from boardd.store.sampling import kept_indices

__all__ = [
    "DOWNSAMPLE_BY",
    "MAX_POINTS",
    "MAX_SERIES_PER_REQUEST",
    "BlobSequenceSeries",
    "BlobStep",
    "Bounds",
    "ScalarColumns",
    "Selection",
    "SeriesInfo",
    "TensorDatum",
    "TensorSeries",
    "check_plugin",
    "check_size",
    "known_plugins",
    "list_series",
    "read_blob_sequences",
    "read_scalars",
    "read_tensors",
    "scalar_chunks",
    "tensor_points",
]

#: At most this many (run, tag) pairs in one request.
MAX_SERIES_PER_REQUEST = 10_000
#: At most this many points in one answer, by kind (runs × tags × samples).
#: The ways ``downsample=`` may choose its points (see :class:`Bounds`).
DOWNSAMPLE_BY = ("uniform", "extremes")
MAX_POINTS = {"scalars": 5_000_000, "tensors": 100_000, "blob_sequences": 100_000}


class Selection(NamedTuple):
    """Which series: one plugin's, optionally only these runs and tags (cross product)."""

    plugin: str
    runs: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Bounds:
    """Which points of each series, applied in this order: the step range, the last ``latest``
    steps, ``downsample`` (at most k points), then the index range within each step (blob
    sequences). None: no bound."""

    step_min: int | None = None
    step_max: int | None = None
    latest: int | None = None
    downsample: int | None = None
    index_min: int | None = None
    index_max: int | None = None
    #: How ``downsample`` chooses (scalars): "uniform" (a uniform sample of steps) or
    #: "extremes" (each of k // 4 step buckets keeps its first, lowest, highest, last point).
    downsample_by: str = "uniform"

    def __post_init__(self) -> None:
        if (
            self.step_min is not None
            and self.step_max is not None
            and self.step_min > self.step_max
        ):
            raise BadRequest(f"step_min={self.step_min} is greater than step_max={self.step_max}")
        if (
            self.index_min is not None
            and self.index_max is not None
            and self.index_min > self.index_max
        ):
            raise BadRequest(
                f"index_min={self.index_min} is greater than index_max={self.index_max}"
            )
        if self.latest is not None and self.latest < 1:
            raise BadRequest(f"latest={self.latest}: give a number from 1")
        if self.downsample_by not in DOWNSAMPLE_BY:
            raise BadRequest(
                f"downsample_by={self.downsample_by!r}: give one of {', '.join(DOWNSAMPLE_BY)}"
            )
        for name in ("downsample", "index_min", "index_max"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise BadRequest(f"{name}={value}: give a number from 0")


def list_series(
    connection: apsw.Connection, experiment_id: int, kind: Kind, selection: Selection
) -> list[SeriesInfo]:
    """The series of live runs matching the selection, by run then tag.

    :class:`BadRequest` for a plugin that is not known: neither one of TensorBoard's plugins of
    this kind's data class nor one the store has series of (a misspelt ``scalar`` must not look
    like an empty experiment; a real plugin without data yet is an empty answer).
    """
    series = queries.list_series(
        connection,
        experiment_id,
        (kind.data_class,),
        selection.plugin,
        selection.runs,
        selection.tags,
    )
    if not series:
        check_plugin(connection, experiment_id, kind, selection.plugin)
    return series


def known_plugins(connection: apsw.Connection, experiment_id: int, kind: Kind) -> list[str]:
    """The plugins ``plugin=`` may name for this kind: TensorBoard's of its data class and every
    plugin the store has series of with that data class, sorted."""
    found = queries.plugins(connection, experiment_id)
    stored = {p for p, classes in found.items() if int(kind.data_class) in classes}
    return sorted(kind.tensorboard_plugins | stored)


def check_plugin(connection: apsw.Connection, experiment_id: int, kind: Kind, plugin: str) -> None:
    """:class:`BadRequest` naming the known plugins if ``plugin`` is not one of them."""
    if plugin in kind.tensorboard_plugins:
        return
    known = known_plugins(connection, experiment_id, kind)
    if plugin not in known:
        raise BadRequest(
            f"plugin={plugin!r} is not a plugin of {kind.name}; known: {', '.join(known)}"
        )


def check_size(
    connection: apsw.Connection, kind: Kind, series: Sequence[SeriesInfo], bounds: Bounds
) -> None:
    """:class:`TooLarge` if the answer could exceed the series or the point bound of ``kind``
    (runs × tags × samples), before any point is read."""
    if len(series) > MAX_SERIES_PER_REQUEST:
        raise TooLarge(
            f"{len(series)} series match; at most {MAX_SERIES_PER_REQUEST} per request: "
            "name runs with run= and tags with tag="
        )
    limits = [v for v in (bounds.latest, bounds.downsample) if v is not None]
    bound = min(limits) if limits else None

    def count(s: SeriesInfo) -> int:
        return queries.point_count(
            connection,
            kind.data_class,
            s.id,
            step_min=bounds.step_min,
            step_max=bounds.step_max,
        )

    # Capacities, latest= and downsample= are cheap upper bounds; short series and step
    # ranges make them overcount, so the points are counted before refusing.
    uppers = [
        min((v for v in (s.capacity, s.sample, bound) if v is not None), default=None)
        for s in series
    ]
    total = sum(count(s) if u is None else u for s, u in zip(series, uppers, strict=True))
    if total > MAX_POINTS[kind.name] and any(u is not None for u in uppers):
        total = sum(
            count(s) if u is None else min(u, count(s)) for s, u in zip(series, uppers, strict=True)
        )
    if total > MAX_POINTS[kind.name]:
        raise TooLarge(
            f"this request could return {total} points (runs × tags × samples); the limit is "
            f"{MAX_POINTS[kind.name]}: add downsample=, latest=, step_min/step_max, or fewer "
            "run= / tag="
        )


def _within(held: columns.Columns, bounds: Bounds) -> columns.Columns:
    """The step range and ``latest`` of a whole series, as the store's query would cut them
    (slices of the held columns: no copy)."""
    lo, hi = 0, len(held.steps)
    if bounds.step_min is not None:
        lo = bisect.bisect_left(held.steps, bounds.step_min)
    if bounds.step_max is not None:
        hi = max(lo, bisect.bisect_right(held.steps, bounds.step_max))
    if bounds.latest is not None:
        lo = max(lo, hi - bounds.latest)
    return columns.Columns(held.steps[lo:hi], held.wall_times[lo:hi], held.values[lo:hi])


def _take(column: memoryview, chosen: Indices, switch: accel.NumpySwitch | None) -> memoryview:
    """The points of a column at these indices (numpy once loaded: :mod:`boardd.data.accel`)."""
    np = accel.numpy_of(switch)
    if np is None:
        return memoryview(array(column.format, map(column.__getitem__, chosen)))
    taken: memoryview = memoryview(np.asarray(column)[np.asarray(chosen, dtype=np.intp)])
    return taken


class ScalarColumns(NamedTuple):
    """The points of one scalar series as columns (NaN and ±Inf kept as floats): read-only
    memoryviews of int64 steps and float64 wall times and values (``tolist()`` gives their
    values; ``numpy.asarray`` views them without a copy)."""

    run: str
    tag: str
    steps: memoryview
    wall_times: memoryview
    values: memoryview


def read_scalars(
    connection: apsw.Connection,
    series: Sequence[SeriesInfo],
    bounds: Bounds,
    *,
    cache: columns.ColumnCache | None = None,
    keep: bool = True,
    numpy: accel.NumpySwitch | None = None,
) -> list[ScalarColumns]:
    """The points of scalar series within the bounds, by step.

    With a ``cache`` (:mod:`boardd.data.columns`), a read of whole series goes through it and
    fills it (``keep`` False: only with series it already holds); a step range or ``latest``
    is cut from a series the cache holds, else read from the store (a live chart's few new
    points must not read its whole series). Without one, every read is the store's.
    ``numpy``: whether the kernels may use numpy yet (:mod:`boardd.data.accel`)."""
    whole = bounds.step_min is None and bounds.step_max is None and bounds.latest is None
    store = columns.store_key(connection) if series and cache is not None else ""
    out = []
    for s in series:
        by_summary = _extremes_by_summary(connection, s, bounds, cache, store, numpy)
        if by_summary is not None:
            out.append(by_summary)
            continue
        held: columns.Columns | None = None
        if cache is not None:
            held = (
                columns.read_whole(cache, connection, store, s.id, s.generation, keep)
                if whole or s.sample is not None
                else cache.get(store, s.id, s.generation)
            )
        if s.sample is not None:
            # The sample asked is cut from the whole series, then the bounds from the sample.
            if held is None:
                held = columns.Columns(*queries.scalar_columns(connection, s.id))
            held = _sampled_columns(s, held, numpy)
        if held is not None:
            steps, walls, values = _within(held, bounds)
        else:
            steps, walls, values = queries.scalar_columns(
                connection,
                s.id,
                step_min=bounds.step_min,
                step_max=bounds.step_max,
                latest=bounds.latest,
            )
        chosen: Indices | None = None
        if bounds.downsample is not None and bounds.downsample_by == "extremes":
            chosen = extremes_indices(steps, values, bounds.downsample, numpy)
        elif bounds.downsample is not None:
            chosen = downsample_indices(steps, bounds.downsample, numpy)
        if chosen is not None and len(chosen) < len(steps):
            steps, walls, values = (_take(c, chosen, numpy) for c in (steps, walls, values))
        out.append(ScalarColumns(s.run, s.tag, steps, walls, values))
    return out


def _extremes_by_summary(
    connection: apsw.Connection,
    s: SeriesInfo,
    bounds: Bounds,
    cache: columns.ColumnCache | None,
    store: str,
    numpy: accel.NumpySwitch | None,
) -> ScalarColumns | None:
    """A downsampled answer from a series' blocks, for a series stored in blocks and not held
    by the cache: extremes from the blocks' segment summaries
    (:func:`boardd.store.scalar_reads.extremes_candidates`), a uniform sample from their
    ``low`` points (:func:`boardd.store.scalar_reads.uniform_candidates`). Its cost grows with
    the chart's width and the blocks it touches, not with the series' length. None where that
    does not apply (the answer then comes from the points)."""
    k = bounds.downsample
    if k is None or s.sample is not None or bounds.latest is not None:
        return None
    if cache is not None and cache.get(store, s.id, s.generation) is not None:
        return None
    extremes = bounds.downsample_by == "extremes" and k >= 4
    if extremes:
        found = scalar_reads.extremes_candidates(
            connection, s.id, k // 4, step_min=bounds.step_min, step_max=bounds.step_max
        )
    else:
        found = scalar_reads.uniform_candidates(
            connection, s.id, k, step_min=bounds.step_min, step_max=bounds.step_max
        )
    if found is None:
        return None
    steps: Any = memoryview(found[0]).cast("B").cast("q").toreadonly()  # type: ignore[arg-type]
    walls: Any = memoryview(found[1]).cast("B").cast("d").toreadonly()  # type: ignore[arg-type]
    values: Any = memoryview(found[2]).cast("B").cast("d").toreadonly()  # type: ignore[arg-type]
    chosen = (
        extremes_indices(steps, values, k, numpy)
        if extremes
        else downsample_indices(steps, k, numpy)
    )
    if len(chosen) < len(steps):
        steps, walls, values = (_take(c, chosen, numpy) for c in (steps, walls, values))
    return ScalarColumns(s.run, s.tag, steps, walls, values)


def _sampled_columns(
    s: SeriesInfo, held: columns.Columns, numpy: accel.NumpySwitch | None
) -> columns.Columns:
    chosen = kept_indices(s.run, held.steps, s.sample)
    if chosen is None:
        return held
    taken = array("q", chosen)
    return columns.Columns(*(_take(c, taken, numpy) for c in held))


def _sampled_rows(s: SeriesInfo, rows: list[_Row], bounds: Bounds) -> list[_Row]:
    """Of a whole series' rows (by step), the sample asked (``s.sample``), then the bounds'
    step range and ``latest``."""
    chosen = kept_indices(s.run, [r.step for r in rows], s.sample)
    if chosen is not None:
        rows = [rows[i] for i in chosen]
    lo, hi = bounds.step_min, bounds.step_max
    if lo is not None or hi is not None:
        rows = [r for r in rows if (lo is None or r.step >= lo) and (hi is None or r.step <= hi)]
    if bounds.latest is not None:
        rows = rows[-bounds.latest :]
    return rows


#: Points :func:`scalar_chunks` reads at once.
CHUNK_POINTS = 65_536


def scalar_chunks(
    connection: apsw.Connection,
    series: SeriesInfo,
    *,
    step_min: int | None = None,
    step_max: int | None = None,
    chunk_points: int = CHUNK_POINTS,
) -> Iterator[ScalarColumns]:
    """The points of one scalar series within the step range, by step, ``chunk_points`` at a
    time (columns as :func:`read_scalars` gives them; NULL values NaN): a series of any length
    is never held whole. One statement reads them all, so the chunks are one snapshot of the
    store, however long their reader takes."""
    rows = queries.iter_scalar_rows(connection, series.id, step_min=step_min, step_max=step_max)
    while chunk := list(itertools.islice(rows, chunk_points)):
        steps, walls, values = zip(*chunk, strict=True)
        yield ScalarColumns(
            series.run,
            series.tag,
            memoryview(array("q", steps)).toreadonly(),
            memoryview(array("d", walls)).toreadonly(),
            memoryview(array("d", (_NAN if v is None else v for v in values))).toreadonly(),
        )


_NAN = float("nan")


class TensorDatum(NamedTuple):
    """One tensor point, its value converted (:func:`boardd.data.values.tensor_value`)."""

    step: int
    wall_time: float
    dtype: str
    shape: tuple[int, ...]
    value: Any


class TensorSeries(NamedTuple):
    """The points of one tensor series."""

    run: str
    tag: str
    points: list[TensorDatum]


_Row = TypeVar("_Row", queries.StoredTensor, queries.StoredBlobStep)


def _downsampled(rows: list[_Row], bounds: Bounds) -> list[_Row]:
    if bounds.downsample is None or bounds.downsample >= len(rows):
        return rows
    chosen = downsample_indices([r.step for r in rows], bounds.downsample)
    return [rows[i] for i in chosen.tolist()]


def read_tensors(
    connection: apsw.Connection, series: Sequence[SeriesInfo], bounds: Bounds
) -> list[TensorSeries]:
    """The points of tensor series within the bounds, by step, values decoded."""
    return [TensorSeries(s.run, s.tag, list(tensor_points(connection, s, bounds))) for s in series]


def tensor_points(
    connection: apsw.Connection, series: SeriesInfo, bounds: Bounds
) -> Iterator[TensorDatum]:
    """The points of one tensor series within the bounds, by step: the stored rows are read at
    once, each value decoded only as it is taken (a decoded histogram is many times its
    stored bytes, so an encoder taking a few at a time never holds a series of them)."""
    if series.sample is not None:
        rows = _sampled_rows(series, queries.tensor_rows(connection, series.id), bounds)
    else:
        rows = queries.tensor_rows(
            connection,
            series.id,
            step_min=bounds.step_min,
            step_max=bounds.step_max,
            latest=bounds.latest,
        )
    for r in _downsampled(rows, bounds):
        value = tensor_value(r.dtype, r.shape, r.content)
        yield TensorDatum(r.step, r.wall_time, dtype_name(r.dtype), r.shape, value)


class BlobStep(NamedTuple):
    """The blobs of one step of a blob sequence, as keys in index order."""

    step: int
    wall_time: float
    keys: tuple[str, ...]


class BlobSequenceSeries(NamedTuple):
    """The steps of one blob sequence."""

    run: str
    tag: str
    steps: list[BlobStep]


def read_blob_sequences(
    connection: apsw.Connection, experiment: str, series: Sequence[SeriesInfo], bounds: Bounds
) -> list[BlobSequenceSeries]:
    """The steps of blob sequences within the bounds, each with the keys of its blobs (keys
    name ``experiment`` and this store file)."""
    store = queries.store_id(connection)
    out = []
    for s in series:
        sampled = s.sample is not None
        rows = queries.blob_sequence_rows(
            connection,
            s.id,
            step_min=None if sampled else bounds.step_min,
            step_max=None if sampled else bounds.step_max,
            latest=None if sampled else bounds.latest,
            index_min=bounds.index_min,
            index_max=bounds.index_max,
        )
        if sampled:
            rows = _sampled_rows(s, rows, bounds)
        steps = [
            BlobStep(r.step, r.wall_time, tuple(blob_key(experiment, store, b) for _, b in r.blobs))
            for r in _downsampled(rows, bounds)
        ]
        out.append(BlobSequenceSeries(s.run, s.tag, steps))
    return out
