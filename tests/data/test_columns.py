"""The column cache: whole scalar series kept decoded, against stores ingested from real event
files. A cached read must answer exactly what the store's query answers, never older than the
generation asked for, and stay within its bound."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path
from typing import Any

import apsw
import numpy as np
import pytest

from boardd.data import accel, columns, experiments, series
from boardd.data.connections import open_store
from boardd.data.kinds import SCALARS
from boardd.data.series import Bounds, Selection
from boardd.store import queries
from tests.conftest import EventRun, ingest


@pytest.fixture
def column_cache() -> columns.ColumnCache:
    """A cache of the default bound, empty, as an application gives its data providers."""
    return columns.ColumnCache()


def _from_store(
    connection: apsw.Connection, s: queries.SeriesInfo, bounds: Bounds
) -> tuple[list[int], list[float], list[float]]:
    """The store's own query for the bounds (no cache), downsampling aside."""
    steps, walls, values = queries.scalar_columns(
        connection, s.id, step_min=bounds.step_min, step_max=bounds.step_max, latest=bounds.latest
    )
    return steps.tolist(), walls.tolist(), values.tolist()


def _same(a: list[float], b: list[float]) -> bool:
    return np.array_equal(np.array(a), np.array(b), equal_nan=True)


BOUNDS = [
    Bounds(),
    Bounds(step_min=100),
    Bounds(step_max=99),
    Bounds(step_min=100, step_max=199),
    Bounds(step_min=150, step_max=150),
    Bounds(step_min=10_000_000),
    Bounds(step_max=-1),
    Bounds(latest=1),
    Bounds(latest=50),
    Bounds(latest=10**9),
    Bounds(step_min=100, step_max=199, latest=7),
    Bounds(step_min=-(2**63), step_max=2**63 - 1),
    Bounds(step_min=2**63 - 1),
]


@pytest.mark.parametrize("bounds", BOUNDS, ids=repr)
def test_a_cached_series_is_cut_as_the_store_cuts_it(
    connection: apsw.Connection, exp_id: int, bounds: Bounds, column_cache: columns.ColumnCache
) -> None:
    found = series.list_series(connection, exp_id, SCALARS, Selection("scalars"))
    assert found
    # The whole series read first: every series is then held, and the bounds cut it.
    series.read_scalars(connection, found, Bounds(), cache=column_cache)
    assert column_cache.stats.entries == len(found)
    hits = column_cache.stats.hits
    got = series.read_scalars(connection, found, bounds, cache=column_cache)
    assert column_cache.stats.hits == hits + len(found)
    for s, col in zip(found, got, strict=True):
        steps, walls, values = _from_store(connection, s, bounds)
        assert col.steps.tolist() == steps
        assert col.wall_times.tolist() == walls
        assert _same(col.values.tolist(), values)  # NaN and ±inf included


def test_downsampled_reads_are_the_same_with_and_without_the_cache(
    connection: apsw.Connection, exp_id: int, column_cache: columns.ColumnCache
) -> None:
    found = series.list_series(connection, exp_id, SCALARS, Selection("scalars"))
    for bounds in (
        Bounds(downsample=10),
        Bounds(downsample=40, downsample_by="extremes"),
        Bounds(step_min=5, downsample=3),
    ):
        column_cache.clear()
        cold = series.read_scalars(
            connection, found, bounds, cache=column_cache
        )  # whole: fills, or cut: reads
        series.read_scalars(connection, found, Bounds(), cache=column_cache)
        warm = series.read_scalars(connection, found, bounds, cache=column_cache)
        for a, b in zip(cold, warm, strict=True):
            assert a.steps.tolist() == b.steps.tolist()
            assert a.wall_times.tolist() == b.wall_times.tolist()
            assert _same(a.values.tolist(), b.values.tolist())


@pytest.mark.parametrize(
    "bounds",
    [
        Bounds(),
        Bounds(downsample=0),
        Bounds(downsample=1),
        Bounds(downsample=3),
        Bounds(downsample=10),
        Bounds(downsample=10**6),
        Bounds(step_min=5, downsample=7),
        Bounds(latest=20, downsample=5),
    ],
    ids=repr,
)
def test_reads_before_numpy_is_imported_answer_the_same(
    connection: apsw.Connection,
    exp_id: int,
    bounds: Bounds,
    column_cache: columns.ColumnCache,
) -> None:
    # `boardd serve` answers its first requests before its warm-up imports numpy
    # (boardd.data.accel): the pure-Python kernels choose the same points.
    found = series.list_series(connection, exp_id, SCALARS, Selection("scalars"))
    with_numpy = series.read_scalars(connection, found, bounds, cache=column_cache)
    column_cache.clear()
    deferred = accel.NumpySwitch(deferred=True)
    # From the store (or filling the cache), then from the cache.
    cold = series.read_scalars(connection, found, bounds, cache=column_cache, numpy=deferred)
    series.read_scalars(connection, found, Bounds(), cache=column_cache, numpy=deferred)
    warm = series.read_scalars(connection, found, bounds, cache=column_cache, numpy=deferred)
    assert deferred.module() is None  # nothing asked for numpy
    for a, b, c in zip(with_numpy, cold, warm, strict=True):
        assert a.steps.tolist() == b.steps.tolist() == c.steps.tolist()
        assert a.wall_times.tolist() == b.wall_times.tolist() == c.wall_times.tolist()
        assert _same(a.values.tolist(), b.values.tolist())
        assert _same(a.values.tolist(), c.values.tolist())


def test_a_step_range_not_held_reads_only_the_range(
    connection: apsw.Connection, exp_id: int, column_cache: columns.ColumnCache
) -> None:
    found = series.list_series(connection, exp_id, SCALARS, Selection("scalars"))
    series.read_scalars(connection, found, Bounds(step_min=100), cache=column_cache)
    # A live chart's delta must not make the daemon read (and hold) whole series.
    assert column_cache.stats.entries == 0


def test_cached_arrays_are_read_only(
    connection: apsw.Connection, exp_id: int, column_cache: columns.ColumnCache
) -> None:
    found = series.list_series(connection, exp_id, SCALARS, Selection("scalars"))
    (col, *_) = series.read_scalars(connection, found, Bounds(), cache=column_cache)
    with pytest.raises(TypeError, match="read-only"):
        col.values[0] = 1.0
    with pytest.raises(ValueError, match="read-only"):
        np.asarray(col.values)[0] = 1.0


def _store_of(tmp_path: Path, points: dict[int, float]) -> tuple[Path, Path, EventRun]:
    logdir = tmp_path / "logs"
    run = EventRun(logdir / "run")
    run.scalars("loss", points)
    db = tmp_path / "store.sqlite"
    ingest(logdir, db, experiment="exp")
    return logdir, db, run


def _loss(connection: apsw.Connection) -> queries.SeriesInfo:
    exp = experiments.experiment_id(connection, "exp")
    (found,) = series.list_series(connection, exp, SCALARS, Selection("scalars", (), ("loss",)))
    return found


def test_a_commit_to_the_series_is_never_answered_from_before_it(
    tmp_path: Path, column_cache: columns.ColumnCache
) -> None:
    logdir, db, run = _store_of(tmp_path, {s: float(s) for s in range(100)})
    connection = open_store(db)
    try:
        before = _loss(connection)
        (col,) = series.read_scalars(connection, [before], Bounds(), cache=column_cache)
        assert col.steps.tolist() == list(range(100))
        run.scalars("loss", {s: -float(s) for s in range(100, 150)})
        run.close()
        ingest(logdir, db, experiment="exp")
        after = _loss(connection)
        assert after.generation > before.generation
        (col,) = series.read_scalars(connection, [after], Bounds(), cache=column_cache)
        assert col.steps.tolist() == list(range(150))
        assert col.values[-1] == -149.0
        (cut,) = series.read_scalars(connection, [after], Bounds(latest=3), cache=column_cache)
        assert cut.steps.tolist() == [147, 148, 149]
    finally:
        connection.close()


def test_a_copy_of_a_store_file_does_not_share_its_entries(
    tmp_path: Path, column_cache: columns.ColumnCache
) -> None:
    _logdir, db, run = _store_of(tmp_path, {s: float(s) for s in range(10)})
    run.close()
    copy = tmp_path / "copy.sqlite"
    shutil.copyfile(db, copy)
    # The copy evolves on its own: same store id, same series id and generation, other points.
    writer = apsw.Connection(str(copy))
    writer.execute("UPDATE scalar_points SET value = value + 1000")
    writer.close()
    first, second = open_store(db), open_store(copy)
    try:
        (a,) = series.read_scalars(first, [_loss(first)], Bounds(), cache=column_cache)
        (b,) = series.read_scalars(second, [_loss(second)], Bounds(), cache=column_cache)
        assert a.values[0] == 0.0 and b.values[0] == 1000.0
    finally:
        first.close()
        second.close()


def _cols(n: int) -> columns.Columns:
    return columns.Columns(
        memoryview(np.arange(n, dtype=np.int64)),
        memoryview(np.zeros(n, dtype=np.float64)),
        memoryview(np.ones(n, dtype=np.float64)),
    )


def test_the_cache_is_bounded_least_recently_used_first_out() -> None:
    cache = columns.ColumnCache(max_bytes=8 * (24 * 1000 + 400))
    for i in range(8):
        cache.put("s", i, 1, _cols(1000))
    assert cache.stats.entries == 8
    assert cache.get("s", 0, 1) is not None  # 0 is now the most recently used
    cache.put("s", 8, 1, _cols(1000))
    assert cache.stats.entries == 8 and cache.stats.bytes <= cache.max_bytes
    assert cache.get("s", 1, 1) is None  # the least recently used went
    assert cache.get("s", 0, 1) is not None
    # One series larger than an eighth of the bound is not kept (nor does it empty the cache).
    cache.put("s", 9, 1, _cols(2000))
    assert cache.get("s", 9, 1) is None and cache.stats.entries == 8


def test_an_older_reading_never_replaces_a_newer_one() -> None:
    cache = columns.ColumnCache()
    cache.put("s", 1, 5, _cols(3))
    cache.put("s", 1, 4, _cols(2))
    held = cache.get("s", 1, 5)
    assert held is not None and len(held.steps) == 3
    assert cache.get("s", 1, 6) is None  # asked for newer than held: a miss
    assert cache.get("s", 1, 3) is not None  # newer than asked for is fine


def test_preload_fills_in_the_dashboards_order_up_to_its_share(data_store: Path) -> None:
    connection = open_store(data_store)
    try:
        todo = queries.scalar_series_by_tag(connection)
        tags = [
            connection.execute("SELECT tag FROM series WHERE id = ?", (i,)).get for i, _, _ in todo
        ]
        assert tags == sorted(tags)
        sizes = [24 * kept + 400 for _, _, kept in todo]
        # The preload's share of the bound holds only the first series.
        small = columns.ColumnCache(max_bytes=int(sum(sizes) / 2), largest=sum(sizes))
        share = small.max_bytes * columns.PRELOAD_SHARE
        fit = next(
            n for n in range(len(sizes) + 1) if n == len(sizes) or sum(sizes[: n + 1]) > share
        )
        assert 0 < fit < len(todo)
        assert columns.preload(small, connection) == fit
        store = columns.store_key(connection)
        assert small.get(store, todo[0][0], todo[0][1]) is not None
        assert small.get(store, todo[fit][0], todo[fit][1]) is None
        # Again: what is held is skipped, nothing more fits.
        assert columns.preload(small, connection) == 0
        stop = threading.Event()
        stop.set()
        small.clear()
        assert columns.preload(small, connection, stop) == 0
    finally:
        connection.close()


def _read_is_the_stores(
    connection: apsw.Connection, column_cache: columns.ColumnCache
) -> queries.SeriesInfo:
    """Reads the loss series whole through the cache; asserts it is what the store holds."""
    found = _loss(connection)
    (col,) = series.read_scalars(connection, [found], Bounds(), cache=column_cache)
    steps, walls, values = _from_store(connection, found, Bounds())
    assert col.steps.tolist() == steps
    assert col.wall_times.tolist() == walls
    assert _same(col.values.tolist(), values)
    return found


def test_a_series_that_grew_reads_only_its_new_points(
    tmp_path: Path, column_cache: columns.ColumnCache
) -> None:
    logdir, db, run = _store_of(tmp_path, {s: float(s) for s in range(100)})
    connection = open_store(db)
    try:
        _read_is_the_stores(connection, column_cache)
        grown = column_cache.stats.grown  # the process's count so far
        for k in range(3):
            run.scalars("loss", {s: -float(s) for s in range(100 + 50 * k, 150 + 50 * k)})
            ingest(logdir, db, experiment="exp")
            _read_is_the_stores(connection, column_cache)
            assert column_cache.stats.grown == grown + k + 1
        run.close()
    finally:
        connection.close()


def _evicted(logdir: Path, db: Path, run: EventRun) -> None:
    # A capacity of 120 while the series had 100: the next 50 points evict 30 of the first.
    run.scalars("loss", {s: -float(s) for s in range(100, 150)})
    ingest(logdir, db, {"scalars": 120}, experiment="exp")


def _restarted(logdir: Path, db: Path, run: EventRun) -> None:
    # A job restarted from step 50 writes steps 50 to 99 again: as many points as before,
    # other values.
    run.scalars("loss", {s: 1000.0 + s for s in range(50, 100)})
    ingest(logdir, db, experiment="exp")


def _replaced(logdir: Path, db: Path, run: EventRun) -> None:
    # The run is deleted and another takes its place: its series may get the same id.
    run.close()
    shutil.rmtree(logdir / "run")
    ingest(logdir, db, experiment="exp")
    other = EventRun(logdir / "other")
    other.scalars("loss", {s: 7.0 for s in range(100, 150)})
    other.close()
    ingest(logdir, db, experiment="exp")


@pytest.mark.parametrize("change", [_evicted, _restarted, _replaced])
def test_a_series_changed_otherwise_is_read_whole(
    tmp_path: Path, change: Any, column_cache: columns.ColumnCache
) -> None:
    sampling = {"scalars": 120} if change is _evicted else None
    logdir = tmp_path / "logs"
    run = EventRun(logdir / "run")
    run.scalars("loss", {s: float(s) for s in range(100)})
    db = tmp_path / "store.sqlite"
    ingest(logdir, db, sampling, experiment="exp")
    connection = open_store(db)
    try:
        before = _read_is_the_stores(connection, column_cache)
        grown = column_cache.stats.grown
        change(logdir, db, run)
        after = _read_is_the_stores(connection, column_cache)
        assert after.generation > before.generation
        if change is _replaced:
            assert after.id == before.id  # the case that matters: an id used again
        assert column_cache.stats.grown == grown
    finally:
        run.close()
        connection.close()


def test_a_read_that_keeps_nothing_files_nothing_new(
    tmp_path: Path, column_cache: columns.ColumnCache
) -> None:
    _logdir, db, run = _store_of(tmp_path, {s: float(s) for s in range(100)})
    run.close()
    connection = open_store(db)
    try:
        found = _loss(connection)
        (col,) = series.read_scalars(connection, [found], Bounds(), keep=False, cache=column_cache)
        assert col.steps.tolist() == list(range(100))
        assert column_cache.stats.entries == 0
        series.read_scalars(connection, [found], Bounds(), cache=column_cache)
        hits = column_cache.stats.hits
        # A series already held is read from the cache all the same.
        (again,) = series.read_scalars(
            connection, [found], Bounds(), keep=False, cache=column_cache
        )
        assert again.steps.tolist() == list(range(100))
        assert column_cache.stats.hits == hits + 1
        assert column_cache.stats.entries == 1
    finally:
        connection.close()
