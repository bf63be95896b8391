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
        "max_value, first_value, last_value, nan_count, posinf_count, neginf_count, segments, "
        "low, data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
            block.segments,
            block.low,
            block.data,
        ),
    )


def _nan_to_none(values: np.ndarray) -> list[float | None]:
    return [None if v != v else v for v in values.tolist()]


def seal(db: apsw.Connection, series_id: int, size: int = block_layout.BLOCK_POINTS) -> int:
    """Seals the oldest points of the series' tail into blocks of ``size`` points while the
    tail holds at least :data:`block_layout.SEAL_AT`; returns how many points it sealed."""
    tail = int(
        db.execute("SELECT count(*) FROM scalar_points WHERE series_id = ?", (series_id,)).get
    )
    sealed = 0
    while tail - sealed >= max(block_layout.SEAL_AT, size):
        sealed += _seal_one(db, series_id, size)
    return sealed


def seal_rows(
    db: apsw.Connection,
    series_id: int,
    steps: np.ndarray,
    wall_times: np.ndarray,
    values: np.ndarray,
) -> int:
    """Writes points that come after every point the series holds (steps increasing). When the
    tail and they reach ``SEAL_AT`` (:mod:`boardd.store.block_layout`), both are sealed into
    whole blocks; the rest goes to the tail. Returns the points the tail holds after."""
    tail = int(
        db.execute("SELECT count(*) FROM scalar_points WHERE series_id = ?", (series_id,)).get
    )
    count = int(steps.shape[0])
    if tail + count < block_layout.SEAL_AT:
        _insert_rows(db, series_id, steps, wall_times, values)
        return tail + count
    if tail:
        rows = db.execute(
            "SELECT step, wall_time, value FROM scalar_points WHERE series_id = ? ORDER BY step",
            (series_id,),
        ).fetchall()
        db.execute("DELETE FROM scalar_points WHERE series_id = ?", (series_id,))
        old_steps = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        old_walls = np.fromiter((r[1] for r in rows), dtype=np.float64, count=len(rows))
        old_values = np.fromiter(
            (np.nan if r[2] is None else r[2] for r in rows), dtype=np.float64, count=len(rows)
        )
        steps = np.concatenate((old_steps, steps))
        wall_times = np.concatenate((old_walls, wall_times))
        values = np.concatenate((old_values, values))
    total = int(steps.shape[0])
    whole = total - total % block_layout.BLOCK_POINTS
    for start in range(0, whole, block_layout.BLOCK_POINTS):
        stop = start + block_layout.BLOCK_POINTS
        _insert_block(
            db,
            series_id,
            blocks.encode(steps[start:stop], wall_times[start:stop], values[start:stop]),
        )
    _insert_rows(db, series_id, steps[whole:], wall_times[whole:], values[whole:])
    return total - whole


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


def _seal_one(db: apsw.Connection, series_id: int, size: int) -> int:
    rows: list[Any] = db.execute(
        "SELECT step, wall_time, value FROM scalar_points WHERE series_id = ? "
        "ORDER BY step LIMIT ?",
        (series_id, size),
    ).fetchall()
    steps = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    walls = np.fromiter((r[1] for r in rows), dtype=np.float64, count=len(rows))
    values = np.fromiter(
        (np.nan if r[2] is None else r[2] for r in rows), dtype=np.float64, count=len(rows)
    )
    _insert_block(db, series_id, blocks.encode(steps, walls, values))
    db.execute(
        "DELETE FROM scalar_points WHERE series_id = ? AND step <= ?", (series_id, int(steps[-1]))
    )
    return len(rows)


def last_sealed_step(db: apsw.Connection, series_id: int) -> int | None:
    """The last step the series' blocks hold (None: it has none)."""
    value = db.execute(
        "SELECT max(last_step) FROM scalar_blocks WHERE series_id = ?", (series_id,)
    ).get
    return None if value is None else int(value)


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
