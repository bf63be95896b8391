"""Scalars in columnar blocks: the codec is lossless, the writer seals a series' tail into blocks
and opens them where a restarted job rewrites steps, readers see one series across blocks and
tail, and a store of the schema before blocks is converted with nothing lost."""

from __future__ import annotations

import math
from pathlib import Path

import apsw
import numpy as np
import pytest

from boardd.cli import ExitCode, main
from boardd.data.downsample import downsample_indices, extremes_indices
from boardd.store import block_layout, blocks, integrity, scalar_reads
from boardd.store.connection import open_reader
from boardd.store.errors import BlockDamagedError, SamplingGrowsError
from tests.conftest import EventRun, as_schema_7, ingest

N = 3 * block_layout.BLOCK_POINTS + 123  # several blocks, the last one not full


def test_a_block_round_trips_every_bit() -> None:
    rng = np.random.default_rng(7)
    steps = np.cumsum(rng.integers(1, 5, 5000)) - 2**40
    walls = 1.7e9 + np.cumsum(rng.random(5000))
    for values in (
        rng.random(5000).astype(np.float32).astype(np.float64),  # simple_value: float32
        rng.standard_normal(5000),  # float64 tensors
    ):
        values[[3, 10, 11]] = [math.nan, math.inf, -math.inf]
        values[20] = -0.0
        block = blocks.encode(steps, walls, values)
        got = blocks.decode(block.data)
        assert got[0].tolist() == steps.tolist()
        assert got[1].view(np.uint64).tolist() == walls.view(np.uint64).tolist()
        assert got[2].view(np.uint64).tolist() == values.view(np.uint64).tolist()
        real = values[~np.isnan(values)]
        assert block.summary == blocks.Summary(
            5000, int(steps[0]), int(steps[-1]), -math.inf, math.inf,
            float(values[0]), float(values[-1]), 1, 1, 1,
        )  # fmt: skip
        assert block.summary.min_value == real.min()
    # A float32 series packs into a few bytes a point (steps 1 apart, close wall times).
    steps = np.arange(8192)
    loss = (np.exp(-steps / 3000) + 0.01 * rng.random(8192)).astype(np.float32)
    block = blocks.encode(steps, 1.7e9 + 0.05 * steps, loss.astype(np.float64))
    assert len(block.data) < 6 * 8192


def test_segments_hold_each_segments_extremes() -> None:
    values = np.arange(300, dtype=np.float64)
    values[5], values[200], values[260:] = 1e9, -1e9, math.nan
    chosen = blocks.representative_indices(values, width=128).reshape(-1, 4).tolist()
    assert chosen == [[0, 0, 5, 127], [128, 200, 255, 255], [256, 256, 259, 299]]


def _series(db: Path, tag: str = "loss") -> tuple[int, apsw.Connection]:
    connection = open_reader(db)
    sid = connection.execute("SELECT id FROM series WHERE tag = ?", (tag,)).get
    return int(sid), connection


def _write(run: EventRun, steps: range, scale: float = 1.0, tag: str = "loss") -> None:
    run.scalars(tag, {s: scale * math.sin(s / 50) for s in steps})


def test_the_writer_seals_blocks_and_readers_see_every_point(tmp_path: Path) -> None:
    logdir, db = tmp_path / "logs", tmp_path / "s.db"
    run = EventRun(logdir / "train")
    _write(run, range(N // 2))
    ingest(logdir, db)
    _write(run, range(N // 2, N))  # appended later: the tail reaches the seal and goes on
    run.close()
    ingest(logdir, db)
    sid, connection = _series(db)
    count, sealed = connection.execute(
        "SELECT count(*), sum(count) FROM scalar_blocks WHERE series_id = ?", (sid,)
    ).fetchone()
    tail = connection.execute("SELECT count(*) FROM scalar_points WHERE series_id = ?", (sid,)).get
    assert count >= 3 and sealed + tail == N and tail < block_layout.SEAL_AT
    steps, _, values = scalar_reads.columns(connection, sid)
    assert np.asarray(steps).tolist() == list(range(N))
    expected = np.float32([math.sin(s / 50) for s in range(N)]).astype(np.float64)
    assert np.array_equal(np.asarray(values), expected)
    # A step range and latest touch a block's middle and the tail.
    lo, hi = block_layout.BLOCK_POINTS + 17, N - 5
    part = scalar_reads.columns(connection, sid, step_min=lo, step_max=hi)
    assert np.asarray(part[0]).tolist() == list(range(lo, hi + 1))
    assert scalar_reads.count(connection, sid, step_min=lo, step_max=hi) == hi - lo + 1
    last = scalar_reads.columns(connection, sid, latest=block_layout.SEAL_AT + 5)
    assert np.asarray(last[0]).tolist() == list(range(N - block_layout.SEAL_AT - 5, N))
    # latest within a step range that cuts the last block to a few of its points.
    hi = 2 * block_layout.BLOCK_POINTS + 3
    last = scalar_reads.columns(connection, sid, step_max=hi, latest=1000)
    assert np.asarray(last[0]).tolist() == list(range(hi - 999, hi + 1))
    rows = list(scalar_reads.iter_rows(connection, sid, step_min=5, step_max=block_layout.SEAL_AT))
    assert [r[0] for r in rows] == list(range(5, block_layout.SEAL_AT + 1))
    assert connection.execute("SELECT kept FROM series WHERE id = ?", (sid,)).get == N
    connection.close()


def test_a_restart_from_a_checkpoint_rewrites_steps_inside_a_block(tmp_path: Path) -> None:
    logdir, db = tmp_path / "logs", tmp_path / "s.db"
    first = EventRun(logdir / "train", suffix=".a")
    _write(first, range(N))
    first.close()
    ingest(logdir, db)
    restart = block_layout.BLOCK_POINTS + 1000  # inside the second block
    second = EventRun(logdir / "train", suffix=".b")
    _write(second, range(restart, restart + 500), scale=2.0)
    second.close()
    ingest(logdir, db)
    sid, connection = _series(db)
    steps, _, values = (np.asarray(c) for c in scalar_reads.columns(connection, sid))
    assert steps.tolist() == list(range(restart + 500))
    assert values[restart - 1] == np.float32(math.sin((restart - 1) / 50))
    assert values[restart] == np.float32(2 * math.sin(restart / 50))
    assert connection.execute("SELECT kept FROM series WHERE id = ?", (sid,)).get == restart + 500
    (tail,) = connection.execute(
        "SELECT count(*) FROM scalar_points WHERE series_id = ?", (sid,)
    ).fetchone()
    assert tail < block_layout.SEAL_AT  # the reopened block's points were sealed again
    connection.close()


def test_extremes_from_segments_keep_a_one_step_spike_at_every_zoom(tmp_path: Path) -> None:
    logdir, db = tmp_path / "logs", tmp_path / "s.db"
    run = EventRun(logdir / "train")
    spike = 23_456
    points = {s: 1.0 / (1 + s / 1000) for s in range(60_000)}
    points[spike] = 25.0
    run.scalars("loss", points)
    run.close()
    ingest(logdir, db)
    sid, connection = _series(db)
    every = [np.asarray(c) for c in scalar_reads.columns(connection, sid)]
    for lo, hi in ((None, None), (0, 59_999), (20_000, 30_000), (spike - 3, spike + 500)):
        for k in (40, 400, 4000):
            found = scalar_reads.extremes_candidates(
                connection, sid, k // 4, step_min=lo, step_max=hi
            )
            assert found is not None
            steps, walls, values = found
            chosen = extremes_indices(steps, values, k)
            got_steps, got_values = steps[chosen], values[chosen]
            assert spike in got_steps.tolist() and 25.0 in got_values.tolist()
            # Real points, by step, the window's first and last among them.
            at = np.searchsorted(every[0], got_steps)
            assert np.array_equal(every[0][at], got_steps)
            assert np.array_equal(every[2][at], got_values)
            assert np.array_equal(every[1][at], walls[chosen])
            assert np.all(np.diff(got_steps) > 0) and len(chosen) <= k
            assert got_steps[0] == (0 if lo is None else lo)
            assert got_steps[-1] == (59_999 if hi is None else hi)
    connection.close()


def test_an_older_store_that_kept_every_scalar_is_converted(tmp_path: Path) -> None:
    logdir, db = tmp_path / "logs", tmp_path / "s.db"
    run = EventRun(logdir / "train")
    _write(run, range(N))
    run.close()
    ingest(logdir, db, sampling={"scalars": None})
    sid, connection = _series(db)
    before = [np.asarray(c).tolist() for c in scalar_reads.columns(connection, sid)]
    connection.close()
    as_schema_7(db, "scalars=all")
    ingest(logdir, db, sampling={"scalars": None})  # opens, converts, finds nothing new
    sid, connection = _series(db)
    assert connection.pragma("user_version") == 8
    assert connection.execute("SELECT count(*) FROM scalar_blocks").get >= 3
    after = [np.asarray(c).tolist() for c in scalar_reads.columns(connection, sid)]
    connection.close()
    assert after == before
    # What `boardd export --scalars` writes of it is what it writes of a store built fresh.
    fresh = tmp_path / "fresh.db"
    ingest(logdir, fresh)
    for store, out in ((db, tmp_path / "converted.csv"), (fresh, tmp_path / "fresh.csv")):
        assert main(["export", "--db", str(store), "--scalars", str(out)]) == ExitCode.OK
    converted = (tmp_path / "converted.csv").read_text()
    assert converted == (tmp_path / "fresh.csv").read_text() and converted.count("\n") == N + 1


def test_an_older_store_of_sampled_scalars_is_not_taken_for_every_point(tmp_path: Path) -> None:
    logdir, db = tmp_path / "logs", tmp_path / "s.db"
    run = EventRun(logdir / "train")
    _write(run, range(300))
    run.close()
    ingest(logdir, db)
    as_schema_7(db, "defaults")  # the older defaults: a sample of 10,000 scalars a series
    with pytest.raises(SamplingGrowsError) as raised:
        ingest(logdir, db)
    assert "scalars=10000" in str(raised.value) and "--rebuild" in str(raised.value)
    ingest(logdir, db, sampling={"scalars": 10_000})  # what it keeps: used as it is
    connection = open_reader(db)
    assert connection.pragma("user_version") == 8
    connection.close()


def test_a_uniform_sample_from_low_points_is_the_sample_of_every_point(tmp_path: Path) -> None:
    logdir, db = tmp_path / "logs", tmp_path / "s.db"
    run = EventRun(logdir / "train")
    _write(run, range(0, 3 * 60_000, 3))  # steps 3 apart: priorities of other steps
    run.close()
    ingest(logdir, db)
    sid, connection = _series(db)
    every = [np.asarray(c) for c in scalar_reads.columns(connection, sid)]
    # A window between two steps holds no point: the block it cuts gives none.
    windows = ((None, None), (1, 179_997), (50_000, 120_000), (30_001, 30_600), (30_001, 30_002))
    for lo, hi in windows:
        a = 0 if lo is None else int(np.searchsorted(every[0], lo))
        b = len(every[0]) if hi is None else int(np.searchsorted(every[0], hi, side="right"))
        window = [c[a:b] for c in every]
        # Few points a block (its low points suffice) and many (blocks are read whole).
        for k in (2, 3, 50, 1000, 30_000):
            found = scalar_reads.uniform_candidates(connection, sid, k, step_min=lo, step_max=hi)
            if found is None:  # no more points than asked: every point is the answer
                assert b - a <= k
                continue
            got = found[0][downsample_indices(found[0], k)]
            want = window[0][downsample_indices(window[0], k)]
            assert got.tolist() == want.tolist(), (lo, hi, k)
            if lo is None and k <= 50:  # the low points answer: a few of every point read
                assert len(found[0]) < (b - a) / 4
    connection.close()


def test_small_appends_fill_the_last_block_before_starting_another(tmp_path: Path) -> None:
    logdir, db = tmp_path / "logs", tmp_path / "s.db"
    run = EventRun(logdir / "train")
    total = 0
    for size in (1500, 700, 1, 3000, 999, 5000, 2500, 4000, 7):
        _write(run, range(total, total + size))
        total += size
        ingest(logdir, db)
    run.close()
    sid, connection = _series(db)
    counts = [
        int(n)
        for (n,) in connection.execute(
            "SELECT count FROM scalar_blocks WHERE series_id = ? ORDER BY first_step", (sid,)
        )
    ]
    tail = connection.execute("SELECT count(*) FROM scalar_points WHERE series_id = ?", (sid,)).get
    assert all(n == block_layout.BLOCK_POINTS for n in counts[:-1]) and counts[-1] > 0
    assert sum(counts) + tail == total and tail < block_layout.SEAL_AT
    assert np.asarray(scalar_reads.columns(connection, sid)[0]).tolist() == list(range(total))
    connection.close()


def test_a_block_whose_bytes_changed_is_damage(tmp_path: Path) -> None:
    logdir, db = tmp_path / "logs", tmp_path / "s.db"
    run = EventRun(logdir / "train")
    _write(run, range(5000))
    run.close()
    ingest(logdir, db)
    writer = apsw.Connection(str(db))
    with writer:  # one byte of the compressed points, as a bad disk sector would change it
        data = bytearray(writer.execute("SELECT data FROM scalar_blocks LIMIT 1").get)
        data[len(data) // 2] ^= 0x40
        writer.execute("UPDATE scalar_blocks SET data = ? WHERE rowid = 1", (bytes(data),))
    writer.close()
    sid, connection = _series(db)
    assert connection.execute("PRAGMA quick_check").get == "ok"  # SQLite sees no damage
    found = integrity.quick_check(connection)
    assert found is not None and "bad checksum" in found
    with pytest.raises(BlockDamagedError) as raised:
        scalar_reads.columns(connection, sid)
    assert integrity.is_damage(raised.value)
    connection.close()
