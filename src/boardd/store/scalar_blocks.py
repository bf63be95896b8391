"""The writer's side of scalar blocks (:mod:`boardd.store.blocks`): sealing the open tail of a
series into blocks, and opening blocks again where a preemption or an eviction cuts into them.

Every function runs inside the caller's transaction, and none changes which points a series
holds except where it says so: sealing and unsealing move points between the tail and blocks,
so readers see the same series before and after.
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import repeat
from typing import Any

import apsw
import numpy as np

from boardd.store import block_layout, blocks


def _insert_block(db: apsw.Connection, series_id: int, block: blocks.Block) -> None:
    s = block.summary
    db.execute(
        "INSERT INTO scalar_blocks (series_id, first_step, last_step, count, min_value, "
        "max_value, first_value, last_value, nan_count, posinf_count, neginf_count, crc, "
        "segments, low, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            series_id,
            s.first_step,
            s.last_step,
            s.points,
            s.min_value,
            s.max_value,
            s.first_value,
            s.last_value,
            s.nan_count,
            s.posinf_count,
            s.neginf_count,
            block.crc,
            block.segments,
            block.low,
            block.data,
        ),
    )


def _nan_to_none(values: np.ndarray) -> list[float | None]:
    return [None if v != v else v for v in values.tolist()]


def seal(db: apsw.Connection, series_id: int) -> int:
    """Seals the series' tail into blocks if it holds at least ``SEAL_AT`` points
    (:mod:`boardd.store.block_layout`); returns how many points it sealed."""
    tail = _tail_count(db, series_id)
    if tail < block_layout.SEAL_AT:
        return 0
    empty = np.empty(0, dtype=np.int64)
    seal_rows(db, series_id, empty, empty.astype(np.float64), empty.astype(np.float64))
    return tail


def _tail_count(db: apsw.Connection, series_id: int) -> int:
    return int(
        db.execute("SELECT count(*) FROM scalar_points WHERE series_id = ?", (series_id,)).get
    )


def seal_rows(
    db: apsw.Connection,
    series_id: int,
    steps: np.ndarray,
    wall_times: np.ndarray,
    values: np.ndarray,
) -> None:
    """Writes points that come after every point the series holds (steps increasing).

    Below ``SEAL_AT`` points with the tail (:mod:`boardd.store.block_layout`), they go to the
    tail, a row each: a live append costs what it adds. At ``SEAL_AT``, the series' last block
    if it is not full, the tail and the points are sealed together into blocks of
    ``BLOCK_POINTS``, the last one possibly not full: a series is whole blocks, at most one
    block that is not, and a tail of fewer than ``SEAL_AT`` points."""
    tail = _tail_count(db, series_id)
    if tail + int(steps.shape[0]) < block_layout.SEAL_AT:
        _insert_rows(db, series_id, steps, wall_times, values)
        return
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    last: Any = db.execute(
        "SELECT first_step, count, data FROM scalar_blocks WHERE series_id = ? "
        "ORDER BY first_step DESC LIMIT 1",
        (series_id,),
    ).fetchone()
    if last is not None and int(last[1]) < block_layout.BLOCK_POINTS:
        parts.append(blocks.decode(last[2]))
        db.execute(
            "DELETE FROM scalar_blocks WHERE series_id = ? AND first_step = ?", (series_id, last[0])
        )
    if tail:
        rows: list[Any] = db.execute(
            "SELECT step, wall_time, value FROM scalar_points WHERE series_id = ? ORDER BY step",
            (series_id,),
        ).fetchall()
        db.execute("DELETE FROM scalar_points WHERE series_id = ?", (series_id,))
        parts.append(
            (
                np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)),
                np.fromiter((r[1] for r in rows), dtype=np.float64, count=len(rows)),
                np.fromiter(
                    (np.nan if r[2] is None else r[2] for r in rows),
                    dtype=np.float64,
                    count=len(rows),
                ),
            )
        )
    parts.append((steps, wall_times, values))
    joined = [np.concatenate([p[i] for p in parts]) for i in range(3)]
    size = block_layout.BLOCK_POINTS
    for start in range(0, int(joined[0].shape[0]), size):
        _insert_block(db, series_id, blocks.encode(*(c[start : start + size] for c in joined)))


def _insert_rows(
    db: apsw.Connection,
    series_id: int,
    steps: np.ndarray,
    wall_times: np.ndarray,
    values: np.ndarray,
) -> None:
    if steps.shape[0]:
        db.executemany(
            "INSERT OR REPLACE INTO scalar_points (series_id, step, wall_time, value) "
            "VALUES (?, ?, ?, ?)",
            zip(
                repeat(series_id),
                steps.tolist(),
                wall_times.tolist(),
                _nan_to_none(values),
                strict=False,
            ),
        )


def drop_from(db: apsw.Connection, series_id: int, step: int) -> int:
    """Deletes every point of the series at ``step`` or later, blocks and tail (a preemption);
    the points of a block cut by ``step`` that come before it go back to the tail. Returns how
    many points it deleted."""
    dropped = 0
    found: list[Any] = db.execute(
        "SELECT first_step, count, data FROM scalar_blocks WHERE series_id = ? AND last_step >= ? "
        "ORDER BY first_step",
        (series_id, step),
    ).fetchall()
    for first, count, data in found:
        if first < step:
            steps, walls, values = blocks.decode(data)
            keep = steps < step
            _insert_rows(db, series_id, steps[keep], walls[keep], values[keep])
            dropped += int(count) - int(np.count_nonzero(keep))
        else:
            dropped += int(count)
    db.execute(
        "DELETE FROM scalar_blocks WHERE series_id = ? AND last_step >= ?", (series_id, step)
    )
    db.execute("DELETE FROM scalar_points WHERE series_id = ? AND step >= ?", (series_id, step))
    dropped += db.changes()
    return dropped


def unseal_from(db: apsw.Connection, series_id: int, step: int) -> None:
    """Moves the points of every block holding ``step`` or a later step back to the tail, so
    that rows at those steps can be deleted or replaced one by one."""
    rows: list[Any] = db.execute(
        "SELECT data FROM scalar_blocks WHERE series_id = ? AND last_step >= ?", (series_id, step)
    ).fetchall()
    for (data,) in rows:
        _insert_rows(db, series_id, *blocks.decode(data))
    if rows:
        db.execute(
            "DELETE FROM scalar_blocks WHERE series_id = ? AND last_step >= ?", (series_id, step)
        )


def seal_store(db: apsw.Connection, progress: Callable[[int, int], None] | None = None) -> int:
    """Seals the tail of every series that keeps all its scalars (capacity NULL) and holds at
    least ``SEAL_AT`` points in its tail: what converts a store whose points are all in rows.
    ``progress(done, total)`` after each series. Returns the points sealed."""
    todo = [
        int(sid)
        for (sid,) in db.execute(
            "SELECT s.id FROM series s WHERE s.data_class = 1 AND s.capacity IS NULL "
            "AND (SELECT count(*) FROM scalar_points p WHERE p.series_id = s.id) >= ?",
            (block_layout.SEAL_AT,),
        )
    ]
    sealed = 0
    for done, series_id in enumerate(todo, 1):
        sealed += seal(db, series_id)
        if progress is not None:
            progress(done, len(todo))
    return sealed
