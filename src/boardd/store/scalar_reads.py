"""Reading scalar series from their blocks and their open tail (:mod:`boardd.store.blocks`).

Each function reads in one snapshot of the store (a series' points move from its tail into a
block when the writer seals them: read apart, the two could show a point twice or not at all),
and touches only the blocks its step range reaches. A series without blocks (most series: a
block holds thousands of points) is read without numpy, which ``boardd serve`` imports only after
its first answers (:mod:`boardd.data.accel`).
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import apsw

from boardd.store import block_layout

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Columns = tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.float64]]

_LOW = -(1 << 63)
_HIGH = (1 << 63) - 1


_NAN = float("nan")


def _tail_rows(
    connection: apsw.Connection, series_id: int, lo: int, hi: int, latest: int | None = None
) -> list[Any]:
    sql = (
        "SELECT step, wall_time, value FROM scalar_points WHERE series_id = ? "
        "AND step >= ? AND step <= ? ORDER BY step"
    )
    params: list[int] = [series_id, lo, hi]
    if latest is not None:
        sql += " DESC LIMIT ?"
        params.append(latest)
    rows: list[Any] = connection.execute(sql, params).fetchall()
    if latest is not None:
        rows.reverse()
    return rows


def _row_arrays(rows: list[Any]) -> tuple[array[int], array[float], array[float]]:
    return (
        array("q", [r[0] for r in rows]),
        array("d", [r[1] for r in rows]),
        array("d", [_NAN if r[2] is None else r[2] for r in rows]),
    )


def _row_columns(rows: list[Any]) -> Columns:
    import numpy as np

    return tuple(np.frombuffer(a, dtype=a.typecode) for a in _row_arrays(rows))  # type: ignore[return-value]


def _cut(columns: Columns, lo: int, hi: int) -> Columns:
    import numpy as np

    steps = columns[0]
    if not steps.shape[0] or (steps[0] >= lo and steps[-1] <= hi):
        return columns
    a = int(np.searchsorted(steps, lo, side="left"))
    b = int(np.searchsorted(steps, hi, side="right"))
    return (columns[0][a:b], columns[1][a:b], columns[2][a:b])


def _blocks_reached(
    connection: apsw.Connection, series_id: int, lo: int, hi: int
) -> tuple[int, int]:
    """How many blocks of the series the step range reaches, and how many points they hold."""
    counted: Any = connection.execute(
        "SELECT count(*), coalesce(sum(count), 0) FROM scalar_blocks WHERE series_id = ? "
        "AND last_step >= ? AND first_step <= ?",
        (series_id, lo, hi),
    ).fetchone()
    return int(counted[0]), int(counted[1])


def _joined(parts: list[Columns]) -> Columns:
    import numpy as np

    if len(parts) == 1:
        return parts[0]
    return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))  # type: ignore[return-value]


def columns(
    connection: apsw.Connection,
    series_id: int,
    *,
    step_min: int | None = None,
    step_max: int | None = None,
    latest: int | None = None,
) -> tuple[Any, Any, Any]:
    """(steps, wall times, values) of a scalar series within the step range (then its last
    ``latest`` points), by step; NULL values NaN. Arrays of the ``array`` module when no block
    is read, else numpy arrays."""
    lo = _LOW if step_min is None else step_min
    hi = _HIGH if step_max is None else step_max
    with connection:
        tail = _tail_rows(connection, series_id, lo, hi, latest)
        if latest is not None and len(tail) >= latest:
            return _row_arrays(tail)
        found = connection.execute(
            "SELECT data FROM scalar_blocks WHERE series_id = ? AND last_step >= ? "
            "AND first_step <= ? ORDER BY first_step" + (" DESC" if latest is not None else ""),
            (series_id, lo, hi),
        )
        parts: list[Columns] = []
        have = len(tail)
        for (data,) in found:
            from boardd.store import blocks

            # Cut to the range before counting: a block the range cuts holds fewer of it.
            parts.append(_cut(blocks.decode(data), lo, hi))
            have += parts[-1][0].shape[0]
            if latest is not None and have >= latest:
                break
    if not parts:
        return _row_arrays(tail)
    if latest is not None:
        parts.reverse()
    parts.append(_row_columns(tail))
    whole = _joined(parts)
    if latest is not None and whole[0].shape[0] > latest:
        whole = (whole[0][-latest:], whole[1][-latest:], whole[2][-latest:])
    return whole


def iter_rows(
    connection: apsw.Connection,
    series_id: int,
    *,
    step_min: int | None = None,
    step_max: int | None = None,
) -> Iterator[tuple[int, float, float | None]]:
    """(step, wall time, value or None for NaN) of a scalar series within the step range, by
    step, a block at a time: one snapshot, however slowly it is read, holding one block."""
    lo = _LOW if step_min is None else step_min
    hi = _HIGH if step_max is None else step_max
    with connection:
        cursor = connection.execute(
            "SELECT data FROM scalar_blocks WHERE series_id = ? AND last_step >= ? "
            "AND first_step <= ? ORDER BY first_step",
            (series_id, lo, hi),
        )
        for (data,) in cursor:
            from boardd.store import blocks

            steps, walls, values = _cut(blocks.decode(data), lo, hi)
            yield from zip(
                steps.tolist(),
                walls.tolist(),
                [None if v != v else v for v in values.tolist()],
                strict=True,
            )
        yield from connection.execute(
            "SELECT step, wall_time, value FROM scalar_points WHERE series_id = ? "
            "AND step >= ? AND step <= ? ORDER BY step",
            (series_id, lo, hi),
        )


def count(
    connection: apsw.Connection,
    series_id: int,
    *,
    step_min: int | None = None,
    step_max: int | None = None,
) -> int:
    """How many points of a scalar series lie within the step range: blocks inside it by their
    summaries, the (at most two) it cuts decoded."""
    lo = _LOW if step_min is None else step_min
    hi = _HIGH if step_max is None else step_max
    with connection:
        total = int(
            connection.execute(
                "SELECT count(*) FROM scalar_points WHERE series_id = ? AND step >= ? "
                "AND step <= ?",
                (series_id, lo, hi),
            ).get
        )
        total += int(
            connection.execute(
                "SELECT coalesce(sum(count), 0) FROM scalar_blocks WHERE series_id = ? "
                "AND first_step >= ? AND last_step <= ?",
                (series_id, lo, hi),
            ).get
        )
        for (data,) in connection.execute(
            "SELECT data FROM scalar_blocks WHERE series_id = ? AND last_step >= ? "
            "AND first_step <= ? AND (first_step < ? OR last_step > ?)",
            (series_id, lo, hi, lo, hi),
        ):
            from boardd.store import blocks

            total += int(_cut(blocks.decode(data), lo, hi)[0].shape[0])
    return total


#: With fewer points than this many segments' worth a bucket, :func:`extremes_candidates` decodes
#: every point of the window: at that zoom the segments' representatives would be most of them.
RAW_SEGMENTS_PER_BUCKET = 4


def extremes_candidates(
    connection: apsw.Connection,
    series_id: int,
    buckets: int,
    *,
    step_min: int | None = None,
    step_max: int | None = None,
) -> Columns | None:
    """Points of a scalar series within the step range among which a min/max-preserving
    downsampling into ``buckets`` step buckets finds its answer
    (:func:`boardd.data.downsample.extremes_indices`), by step; None if the series has no
    block in the range (its rows are read as they are).

    Where buckets hold many segments' worth of points, a block the range holds whole gives its
    segments' first, lowest, highest and last points, not its points: every segment's extremes
    are among the candidates (so every spike of the series is), as are the range's first and
    last points. Only a bucket whose edge cuts a segment may differ from the answer over every
    point: its first, lowest or highest point is then that segment's, not the part's in it.
    Blocks the range cuts, and the tail, give every point within it."""
    lo = _LOW if step_min is None else step_min
    hi = _HIGH if step_max is None else step_max
    with connection:
        found, in_blocks = _blocks_reached(connection, series_id, lo, hi)
        if not found:
            return None
        from boardd.store import blocks

        tail = _row_columns(_tail_rows(connection, series_id, lo, hi))
        points = int(in_blocks) + tail[0].shape[0]
        raw = points < RAW_SEGMENTS_PER_BUCKET * block_layout.SEGMENT_POINTS * max(buckets, 1)
        # Each block gives its points or its segments, never both: reading a column copies it.
        rows = connection.execute(
            "SELECT CASE WHEN whole THEN segments END, CASE WHEN whole THEN NULL ELSE data END "
            "FROM (SELECT *, NOT ? AND first_step >= ? AND last_step <= ? AS whole "
            "FROM scalar_blocks WHERE series_id = ? AND last_step >= ? AND first_step <= ?) "
            "ORDER BY first_step",
            (raw, lo, hi, series_id, lo, hi),
        )
        parts: list[Columns] = []
        for segments, data in rows:
            if segments is None:
                parts.append(_cut(blocks.decode(data), lo, hi))
            else:
                parts.append(blocks.segment_points(segments))
    parts.append(tail)
    return _joined(parts)


def uniform_candidates(
    connection: apsw.Connection,
    series_id: int,
    k: int,
    *,
    step_min: int | None = None,
    step_max: int | None = None,
) -> Columns | None:
    """Points of a scalar series within the step range among which a uniform downsampling to
    ``k`` points (:func:`boardd.data.downsample.downsample_indices`) finds exactly the answer it
    finds among every point, by step; None if the series has no block in the range, or the
    blocks and tail it reaches hold at most ``k`` points (every point is then the answer).

    The range's first and last points are in it (its first and last blocks are decoded, and
    the tail read), and of each block between them, its ``low`` points. Those hold the block's
    share of the answer unless the block holds more of it than they: when the ``k - 2``-th
    lowest priority among the candidates is above the highest of a block's ``low`` points, that
    block's points are all read, and the choice made again."""
    lo = _LOW if step_min is None else step_min
    hi = _HIGH if step_max is None else step_max
    with connection:
        found, in_blocks = _blocks_reached(connection, series_id, lo, hi)
        if not found:
            return None
        tail_rows = _tail_rows(connection, series_id, lo, hi)
        if int(in_blocks) + len(tail_rows) <= k:
            return None
        rows: list[Any] = connection.execute(
            "SELECT first_step, last_step, count, low FROM scalar_blocks WHERE series_id = ? "
            "AND last_step >= ? AND first_step <= ? ORDER BY first_step",
            (series_id, lo, hi),
        ).fetchall()
        from boardd.store import blocks

        parts: list[Any] = []
        for i, (first, last, count, low) in enumerate(rows):
            # The range's first point, and its last if the tail holds none of it, are the
            # answer's: their blocks are read whole, as are those the range cuts.
            edge = first < lo or last > hi or i == 0 or (i == len(rows) - 1 and not tail_rows)
            if edge or int(count) <= block_layout.LOW_POINTS:
                parts.append([_block_points(connection, series_id, first, lo, hi), None])
            else:
                parts.append([blocks.segment_points(low), first])
        tail = _row_columns(tail_rows)
        import numpy as np

        while True:
            chosen = _joined([p[0] for p in parts] + [tail])
            priorities = _priorities(chosen[0])
            bound = _priority_bound(priorities, k)
            # Each part's highest priority, in one pass over the candidates (a part cut to no
            # point has none; the tail's, after the parts, is left out by the sentinel's slot).
            offsets = np.cumsum([0, *(p[0][0].shape[0] for p in parts)])
            filled = [i for i in range(len(parts)) if offsets[i + 1] > offsets[i]]
            padded = np.concatenate((priorities, np.zeros(1, dtype=np.int64)))
            tops = np.maximum.reduceat(padded, [*offsets[filled], offsets[-1]])[:-1]
            highest = dict(zip(filled, tops.tolist(), strict=True))
            short = [
                p for i, p in enumerate(parts) if p[1] is not None and highest.get(i, bound) < bound
            ]
            if not short:
                break
            for p in short:
                p[0], p[1] = _block_points(connection, series_id, p[1], lo, hi), None
    return chosen


def _block_points(
    connection: apsw.Connection, series_id: int, first_step: int, lo: int, hi: int
) -> Columns:
    from boardd.store import blocks

    data = connection.execute(
        "SELECT data FROM scalar_blocks WHERE series_id = ? AND first_step = ?",
        (series_id, first_step),
    ).get
    return _cut(blocks.decode(data), lo, hi)


def _priorities(steps: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    from boardd.store.reservoir import step_priorities

    return step_priorities(block_layout.DOWNSAMPLE_SEED, steps)


def _priority_bound(priorities: npt.NDArray[np.int64], k: int) -> float:
    """Of the points' priorities, the ``k - 2``-th lowest of those between the first and the
    last: the highest a point may have and be chosen (+inf: every such point is)."""
    import numpy as np

    inner = priorities[1:-1]
    if k - 2 <= 0:
        return -np.inf
    if inner.shape[0] < k - 2:
        return np.inf
    return int(np.partition(inner, k - 3)[k - 3])
