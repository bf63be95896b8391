"""End-to-end tests of ingest: real event files in, a real store out, compared table by table."""

from __future__ import annotations

import os
import random
import shutil
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest
from tensorboard.backend.event_processing.event_file_loader import LegacyEventFileLoader
from tensorboardX import SummaryWriter

from boardd.cli import ExitCode, main
from boardd.ingest.ingestor import Ingestor
from boardd.reader.decoded import DataLoss
from boardd.reader.events import EventDecoder
from boardd.reader.logdir import discover
from boardd.reader.pipeline import read_event_file
from boardd.store.blobs import CHUNK_SIZE, read_blob
from boardd.store.connection import open_reader
from boardd.store.session import WriteSession
from tests.conftest import COUNT_SCALARS, ingest
from tests.store.conftest import (
    WALL,
    LiveWriter,
    assert_same_store,
    record_ends,
    snapshot,
    write_mixed,
)

#: Small capacities, so that sampling, eviction and its persisted state take part everywhere.
SMALL = {"scalars": 40, "histograms": 15, "images": 3, "text": 5}
#: Keep every point.
ALL = {"*": None}


def rows(db: Path, sql: str, *params: object) -> list[tuple[object, ...]]:
    """Runs a query on a read-only connection of the store."""
    connection = open_reader(db)
    try:
        return [tuple(r) for r in connection.execute(sql, params)]
    finally:
        connection.close()


def kept_steps(db: Path) -> dict[tuple[str, str], list[int]]:
    """(run, tag) -> the steps the store keeps, whatever the data class."""
    out: dict[tuple[str, str], list[int]] = defaultdict(list)
    for table in ("scalar_points", "tensor_points", "blob_entries"):
        for run, tag, step in rows(
            db,
            f"SELECT DISTINCT r.name, s.tag, p.step FROM {table} p "
            "JOIN series s ON s.id = p.series_id JOIN runs r ON r.id = s.run_id",
        ):
            out[(str(run), str(tag))].append(int(step))
    return {key: sorted(steps) for key, steps in out.items()}


def scalars(db: Path, run: str, tag: str) -> dict[int, float | None]:
    """step -> value of one scalar series."""
    return {
        int(step): value
        for step, value in rows(
            db,
            "SELECT p.step, p.value FROM scalar_points p JOIN series s ON s.id = p.series_id "
            "JOIN runs r ON r.id = s.run_id WHERE r.name = ? AND s.tag = ?",
            run,
            tag,
        )
    }


def file_row(db: Path, path: Path) -> tuple[object, ...]:
    """(size, consumed, state, inode) of one file."""
    (row,) = rows(db, "SELECT size, consumed, state, inode FROM files WHERE path = ?", str(path))
    return row


def decode_logdir(logdir: Path) -> tuple[dict[tuple[str, str], dict[int, object]], list[object]]:
    """What the reader makes of a logdir: (run, tag) -> step -> last point, and data losses."""
    points: dict[tuple[str, str], dict[int, object]] = defaultdict(dict)
    losses: list[object] = []
    for run, paths in discover(logdir).runs.items():
        decoder = EventDecoder()
        for path in paths:
            for batch in read_event_file(path, decoder=decoder):
                losses.extend((str(path), d.offset, d.length, d.reason) for d in batch.data_loss)
                for tag, columns in batch.scalars.items():
                    for p in columns.points():
                        points[(run, tag)][p.step] = p.value
                for tag, tensors in batch.tensors.items():
                    for t in tensors:
                        points[(run, tag)][t.step] = t.content
                for tag, blobs in batch.blob_sequences.items():
                    for b in blobs:
                        points[(run, tag)][b.step] = b.blobs
    return dict(points), losses


def stored_points(db: Path) -> dict[tuple[str, str], dict[int, object]]:
    """The store's points in the shape of :func:`decode_logdir`."""
    out: dict[tuple[str, str], dict[int, object]] = defaultdict(dict)
    for run, tag, step, value in rows(
        db,
        "SELECT r.name, s.tag, p.step, p.value FROM scalar_points p "
        "JOIN series s ON s.id = p.series_id JOIN runs r ON r.id = s.run_id",
    ):
        value = float("nan") if value is None else value
        out[(str(run), str(tag))][int(step)] = value
    for run, tag, step, content in rows(
        db,
        "SELECT r.name, s.tag, p.step, p.content FROM tensor_points p "
        "JOIN series s ON s.id = p.series_id JOIN runs r ON r.id = s.run_id",
    ):
        out[(str(run), str(tag))][int(step)] = content
    connection = open_reader(db)
    try:
        blobs: dict[tuple[str, str, int], list[bytes]] = defaultdict(list)
        for run, tag, step, blob_id in connection.execute(
            "SELECT r.name, s.tag, e.step, e.blob_id FROM blob_entries e "
            "JOIN series s ON s.id = e.series_id JOIN runs r ON r.id = s.run_id "
            "ORDER BY e.series_id, e.step, e.idx"
        ):
            blobs[(str(run), str(tag), int(step))].append(read_blob(connection, int(blob_id)))
    finally:
        connection.close()
    for (run, tag, step), items in blobs.items():
        out[(run, tag)][step] = tuple(items)
    return dict(out)


# -- resume ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "commit_bytes", [64 * 2**20, 2048], ids=["default-commits", "tiny-commits"]
)
def test_resume_after_partial_ingests_equals_one_pass(tmp_path: Path, commit_bytes: int) -> None:
    logdir = tmp_path / "logs"
    train, evaluation = LiveWriter(logdir / "train"), LiveWriter(logdir / "eval" / "nested")
    db = tmp_path / "incremental.db"
    for chunk in range(4):
        write_mixed(train, range(chunk * 150, (chunk + 1) * 150), seed=1)
        write_mixed(evaluation, range(chunk * 40, (chunk + 1) * 40), seed=2)
        train.flush()
        evaluation.flush()
        ingest(logdir, db, sampling=SMALL, commit_bytes=commit_bytes, batch_bytes=commit_bytes)
    train.close()
    evaluation.close()
    ingest(logdir, db, sampling=SMALL, commit_bytes=commit_bytes, batch_bytes=commit_bytes)
    single = tmp_path / "single.db"
    ingest(logdir, single, sampling=SMALL)
    assert_same_store(db, single)
    # Not vacuous: sampling did evict (600 steps, 40 kept), and every class is there.
    steps = kept_steps(db)
    assert len(steps[("train", "loss")]) == 40
    assert steps[("train", "loss")][-1] == 599
    assert len(steps[("train", "weights")]) == 15
    assert len(steps[("train", "sample")]) == 3
    assert steps[("train", "sample")][-1] == 575
    for size, consumed, state in rows(db, "SELECT size, consumed, state FROM files"):
        assert (consumed, state) == (size, "active")


def test_resume_keeping_everything_stores_each_point_once(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    writer = LiveWriter(logdir / "run")
    db = tmp_path / "store.db"
    for chunk in range(3):
        write_mixed(writer, range(chunk * 100, (chunk + 1) * 100), seed=3)
        writer.flush()
        ingest(logdir, db, sampling=ALL, commit_bytes=1000, batch_bytes=1000)
    writer.close()
    expected, losses = decode_logdir(logdir)
    assert losses == []
    assert stored_points(db) == expected
    assert len(expected[("run", "loss")]) == 300
    (count,) = rows(db, "SELECT count(*) FROM run_events WHERE kind = 'file_version'")
    assert count == (1,)


@pytest.mark.parametrize("cut", ["length", "length-crc", "payload", "payload-crc"])
def test_partial_record_at_the_end_then_completed(tmp_path: Path, cut: str) -> None:
    source = tmp_path / "source"
    writer = LiveWriter(source)
    write_mixed(writer, range(60), seed=4)
    writer.close()
    data = writer.path.read_bytes()
    ends = record_ends(data)
    # A record with a payload of some length: the histogram at step 28 (or any long one).
    k = max(range(1, len(ends)), key=lambda i: ends[i] - ends[i - 1])
    start, end = ends[k - 1], ends[k]
    position = {
        "length": start + 3,
        "length-crc": start + 10,
        "payload": (start + 12 + end - 4) // 2,
        "payload-crc": end - 2,
    }[cut]
    logdir = tmp_path / "logs"
    (logdir / "run").mkdir(parents=True)
    target = logdir / "run" / writer.path.name
    target.write_bytes(data[:position])
    db = tmp_path / "store.db"
    result = ingest(logdir, db, sampling=SMALL)
    assert result.bytes_read == start
    assert file_row(db, target)[:3] == (position, start, "active")
    assert rows(db, "SELECT count(*) FROM data_loss") == [(0,)]
    with open(target, "ab") as f:
        f.write(data[position:])
    result = ingest(logdir, db, sampling=SMALL)
    assert result.bytes_read == len(data) - start
    single = tmp_path / "single.db"
    ingest(logdir, single, sampling=SMALL)
    assert_same_store(db, single)


# -- file life cycle ------------------------------------------------------------------------


def test_new_files_and_runs_are_picked_up(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    with SummaryWriter(str(logdir / "a"), filename_suffix=".1") as w:
        for step in range(50):
            w.add_scalar("loss", step * 0.5, step, walltime=WALL + step)
    db = tmp_path / "store.db"
    ingest(logdir, db, sampling=ALL)
    assert [r[0] for r in rows(db, "SELECT name FROM runs")] == ["a"]
    with SummaryWriter(str(logdir / "a"), filename_suffix=".2") as w:
        for step in range(50, 80):
            w.add_scalar("loss", step * 0.5, step, walltime=WALL + step)
    with SummaryWriter(str(logdir / "b" / "c")) as w:
        w.add_scalar("acc", 0.25, 3, walltime=WALL)
    result = ingest(logdir, db, sampling=ALL)
    assert len(result.files_changed) == 0
    assert sorted(r[0] for r in rows(db, "SELECT name FROM runs WHERE deleted = 0")) == [
        "a",
        "b/c",
    ]
    assert scalars(db, "a", "loss") == {s: s * 0.5 for s in range(80)}
    assert scalars(db, "b/c", "acc") == {3: 0.25}
    single = tmp_path / "single.db"
    ingest(logdir, single, sampling=ALL)
    assert_same_store(db, single)


def test_growing_file_resumes_from_its_offset(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    writer = LiveWriter(logdir / "run")
    db = tmp_path / "store.db"
    sizes = []
    for chunk in range(3):
        write_mixed(writer, range(chunk * 30, (chunk + 1) * 30), seed=5)
        writer.flush()
        size = writer.path.stat().st_size
        result = ingest(logdir, db, sampling=ALL)
        # Only the new bytes are read: the file resumed from its committed offset.
        assert result.bytes_read == size - (sizes[-1] if sizes else 0)
        assert file_row(db, writer.path)[:3] == (size, size, "active")
        sizes.append(size)
    writer.close()
    assert ingest(logdir, db, sampling=ALL).bytes_read == 0
    assert sorted(scalars(db, "run", "loss")) == list(range(90))


def _write_scalar_run(directory: Path, steps: range, scale: float, suffix: str = "") -> Path:
    writer = LiveWriter(directory, suffix=suffix)
    rng = np.random.default_rng(abs(int(scale * 10)))
    for step in steps:
        writer.scalar("loss", scale * step, step)
        if step % 10 == 0:
            writer.image("sample", rng.integers(0, 256, (3, 4, 4), dtype=np.uint8), step)
    writer.close()
    return writer.path


def test_replaced_file_is_read_again_from_zero(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    path = _write_scalar_run(logdir / "run", range(100), 1.0)
    db = tmp_path / "store.db"
    ingest(logdir, db, sampling=ALL)
    old_inode = path.stat().st_ino
    # Delete and recreate with the same name. The old file is held open meanwhile, so that
    # the new one cannot get the same inode number back.
    with open(path, "rb"):
        path.unlink()
        fresh = _write_scalar_run(tmp_path / "fresh", range(60), -2.0)
        shutil.copyfile(fresh, path)
    assert path.stat().st_ino != old_inode
    result = ingest(logdir, db, sampling=ALL)
    assert result.files_changed == (str(path),)
    assert result.bytes_read == path.stat().st_size
    size, consumed, state, inode = file_row(db, path)
    assert (size, consumed, state, inode) == (
        path.stat().st_size,
        path.stat().st_size,
        "active",
        path.stat().st_ino,
    )
    # The new file starts again at step 0: preemption drops the old points at steps >= 0,
    # equal steps are overwritten, nothing is duplicated, no blob is left behind.
    assert scalars(db, "run", "loss") == {s: -2.0 * s for s in range(60)}
    assert kept_steps(db)[("run", "sample")] == list(range(0, 60, 10))
    assert snapshot(db)["orphans"] == [(0, 0)]


def test_file_rewritten_in_place_with_more_data_is_read_again(tmp_path: Path) -> None:
    # Same inode (rewritten in place, as delete + recreate often gives on ext4) and larger
    # than what was read: only the changed first bytes can tell that it is another file.
    logdir = tmp_path / "logs"
    path = _write_scalar_run(logdir / "run", range(50), 1.0)
    db = tmp_path / "store.db"
    ingest(logdir, db, sampling=ALL)
    inode = path.stat().st_ino
    fresh = _write_scalar_run(tmp_path / "fresh", range(200), -3.0)
    with open(path, "r+b") as f:
        f.write(fresh.read_bytes())
    assert path.stat().st_ino == inode
    result = ingest(logdir, db, sampling=ALL)
    assert result.files_changed == (str(path),)
    assert scalars(db, "run", "loss") == {s: -3.0 * s for s in range(200)}


def test_truncated_file_is_read_again(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    path = _write_scalar_run(logdir / "run", range(100), 1.0)
    db = tmp_path / "store.db"
    ingest(logdir, db, sampling=ALL)
    data = path.read_bytes()
    ends = record_ends(data)
    inode = path.stat().st_ino
    with open(path, "r+b") as f:
        f.truncate(ends[40] + 5)  # mid-record: the tail is a partial record
    assert path.stat().st_ino == inode
    result = ingest(logdir, db, sampling=ALL)
    assert result.files_changed == (str(path),)
    assert file_row(db, path)[:3] == (ends[40] + 5, ends[40], "active")
    expected, _ = decode_logdir(logdir)
    assert stored_points(db) == expected
    assert max(scalars(db, "run", "loss")) < 40
    assert snapshot(db)["orphans"] == [(0, 0)]


def test_file_read_again_has_its_losses_recorded_once(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    path = _write_scalar_run(logdir / "run", range(200), 1.0)
    data = bytearray(path.read_bytes())
    data[1000:1300] = bytes(300)
    path.write_bytes(bytes(data))
    db = tmp_path / "store.db"
    ingest(logdir, db, sampling=ALL)
    (first,) = rows(db, "SELECT offset, length, reason FROM data_loss")
    # Shrunk (say, a job rewrote it): read again from 0, the hole is met again.
    with open(path, "r+b") as f:
        f.truncate(len(data) // 2)
    assert ingest(logdir, db, sampling=ALL).files_changed == (str(path),)
    assert rows(db, "SELECT offset, length, reason FROM data_loss") == [first]
    _, losses = decode_logdir(logdir)
    assert [(o, n, r) for _, o, n, r in losses] == [first]
    # Replaced by an intact file: the old file's losses no longer describe anything.
    with open(path, "rb"):
        path.unlink()
        shutil.copyfile(_write_scalar_run(tmp_path / "fresh", range(10), 1.0), path)
    assert ingest(logdir, db, sampling=ALL).files_changed == (str(path),)
    assert rows(db, "SELECT count(*) FROM data_loss") == [(0,)]


def test_file_back_after_deletion_is_active_again(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    path = _write_scalar_run(logdir / "run", range(20), 1.0, suffix=".1")
    _write_scalar_run(logdir / "run", range(20, 30), 1.0, suffix=".2")
    db = tmp_path / "store.db"
    ingest(logdir, db, sampling=ALL)
    aside = tmp_path / "aside"
    path.rename(aside)
    ingest(logdir, db, sampling=ALL)
    assert file_row(db, path)[2] == "deleted"
    aside.rename(path)  # the same file (inode) is back
    assert ingest(logdir, db, sampling=ALL).bytes_read == 0
    assert file_row(db, path)[2] == "active"
    assert sorted(scalars(db, "run", "loss")) == list(range(30))


def test_deleted_file_keeps_its_data(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    first = _write_scalar_run(logdir / "two", range(0, 50), 1.0, suffix=".1")
    _write_scalar_run(logdir / "two", range(50, 80), 1.0, suffix=".2")
    only = _write_scalar_run(logdir / "one", range(0, 20), 3.0)
    db = tmp_path / "store.db"
    ingest(logdir, db, sampling=ALL)
    before = stored_points(db)
    first.unlink()
    only.unlink()  # the run's directory stays, empty
    ingest(logdir, db, sampling=ALL)
    assert stored_points(db) == before
    assert file_row(db, first)[2] == "deleted"
    assert file_row(db, only)[2] == "deleted"
    assert rows(db, "SELECT name, deleted FROM runs ORDER BY name") == [("one", 0), ("two", 0)]
    # Nothing is read again: the store is stable.
    assert ingest(logdir, db, sampling=ALL).bytes_read == 0
    assert stored_points(db) == before


def test_removed_run_directory_purges_the_run(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    _write_scalar_run(logdir / "keep", range(30), 1.0)
    _write_scalar_run(logdir / "gone" / "deep", range(30), 2.0)
    db = tmp_path / "store.db"
    ingest(logdir, db, sampling=ALL)
    kept_before = {k: v for k, v in stored_points(db).items() if k[0] == "keep"}
    shutil.rmtree(logdir / "gone")
    result = ingest(logdir, db, sampling=ALL)
    assert result.runs_deleted == ("gone/deep",)
    assert rows(db, "SELECT name, deleted, start_time IS NULL FROM runs ORDER BY name") == [
        ("gone/deep", 1, 1),
        ("keep", 0, 0),
    ]
    (gone_id,) = rows(db, "SELECT id FROM runs WHERE name = 'gone/deep'")[0]
    for table in ("series", "files", "run_events"):
        assert rows(db, f"SELECT count(*) FROM {table} WHERE run_id = ?", gone_id) == [(0,)]
    assert stored_points(db) == kept_before
    assert snapshot(db)["orphans"] == [(0, 0)]
    assert rows(db, "SELECT count(*) FROM blobs") == rows(db, "SELECT count(*) FROM blob_entries")
    # The run coming back is read again from scratch.
    _write_scalar_run(logdir / "gone" / "deep", range(5), 7.0)
    ingest(logdir, db, sampling=ALL)
    assert scalars(db, "gone/deep", "loss") == {s: 7.0 * s for s in range(5)}


def test_vanished_logdir_does_not_erase_the_store(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    _write_scalar_run(logdir / "a", range(30), 1.0)
    _write_scalar_run(logdir / "b", range(30), 2.0)
    db = tmp_path / "store.db"
    ingest(logdir, db, sampling=ALL)
    before = snapshot(db)
    logdir.rename(tmp_path / "elsewhere")
    result = ingest(logdir, db, sampling=ALL)
    assert result.runs_deleted == ()
    assert snapshot(db) == before
    # The command line refuses a missing logdir outright.
    assert main(["ingest", str(logdir), "--db", str(db), "--samples-per-plugin", "*=all"]) == (
        ExitCode.BAD_LOGDIR
    )
    # An empty directory in its place (an unmounted mount point) erases nothing either.
    logdir.mkdir()
    result = ingest(logdir, db, sampling=ALL)
    assert result.runs_deleted == ()
    assert snapshot(db) == before
    # Back in place: nothing to read, nothing lost.
    logdir.rmdir()
    (tmp_path / "elsewhere").rename(logdir)
    assert ingest(logdir, db, sampling=ALL).bytes_read == 0
    assert snapshot(db) == before


# -- corrupt files --------------------------------------------------------------------------


def test_corrupt_files_are_recorded_and_the_rest_lands(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logdir = tmp_path / "logs"
    writer = LiveWriter(logdir / "run")
    write_mixed(writer, range(400), seed=6)
    writer.close()
    path = writer.path
    original = path.read_bytes()
    ends = record_ends(original)
    starts = [0, *ends[:-1]]
    data = bytearray(original)
    # A zero-filled hole of 700 bytes a third of the way in, starting mid-record.
    hole = (len(data) // 3 + 5, len(data) // 3 + 705)
    data[hole[0] : hole[1]] = bytes(hole[1] - hole[0])
    # Single bit flips in four records of the last third (payloads and headers alike).
    rng = random.Random(11)
    flipped = sorted(rng.sample(range(2 * len(data) // 3, len(data)), 4))
    for position in flipped:
        data[position] ^= 1 << rng.randrange(8)
    path.write_bytes(bytes(data))
    garbage = logdir / "run" / "events.out.tfevents.9999999999.garbage"
    garbage.write_bytes(np.random.default_rng(12).integers(0, 256, 20_000, np.uint8).tobytes())
    db = tmp_path / "store.db"
    assert main(["ingest", str(logdir), "--db", str(db), "--samples-per-plugin", "*=all"]) == 0
    capsys.readouterr()

    # The store's data-loss rows are exactly what the reader reports, file by file.
    expected_points, expected_losses = decode_logdir(logdir)
    stored_losses = rows(
        db,
        "SELECT f.path, d.offset, d.length, d.reason FROM data_loss d "
        "JOIN files f ON f.id = d.file_id ORDER BY f.path, d.offset",
    )
    assert stored_losses == sorted(expected_losses)
    # In the damaged file they cover exactly the records the damage touched.
    touched = [
        (s, e)
        for s, e in zip(starts, ends, strict=True)
        if (s < hole[1] and e > hole[0]) or any(s <= p < e for p in flipped)
    ]
    lost = [DataLoss(o, n, r) for p, o, n, r in stored_losses if p == str(path)]
    assert _union([(d.offset, d.offset + d.length) for d in lost]) == _union(touched)
    assert {d.reason for d in lost} == {"bad length CRC", "bad payload CRC"}
    # The garbage file is all loss (at most a tail that may still become a record).
    garbage_lost = sum(int(n) for p, _, n, _ in stored_losses if p == str(garbage))
    assert garbage_lost >= garbage.stat().st_size - 64

    # Every readable point landed: what the reader decodes, and every intact original record.
    assert stored_points(db) == expected_points
    intact = [(s, e) for s, e in zip(starts, ends, strict=True) if (s, e) not in touched]
    clean_logdir = tmp_path / "clean"
    (clean_logdir / "run").mkdir(parents=True)
    (clean_logdir / "run" / path.name).write_bytes(b"".join(original[s:e] for s, e in intact))
    clean_points, clean_losses = decode_logdir(clean_logdir)
    assert clean_losses == []
    assert stored_points(db) == clean_points
    assert len(clean_points[("run", "loss")]) > 380


def _union(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


# -- reservoir sampling through ingest ------------------------------------------------------


def test_sampling_is_deterministic_and_keeps_the_last_step(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    for run, seed in (("a", 1), ("b", 2)):
        writer = LiveWriter(logdir / run)
        write_mixed(writer, range(500), seed=seed)
        writer.close()
    one, two = tmp_path / "one.db", tmp_path / "two.db"
    ingest(logdir, one, sampling=SMALL)
    ingest(logdir, two, sampling=SMALL, commit_bytes=777, batch_bytes=777)
    assert kept_steps(one) == kept_steps(two)
    assert_same_store(one, two)
    steps = kept_steps(one)
    # The runs have different seeds: different samples of the same steps.
    assert steps[("a", "loss")] != steps[("b", "loss")]
    # Keep-last: every series keeps its last step, which is also its recorded last_step.
    for run, tag, last_step, first_step in rows(
        one,
        "SELECT r.name, s.tag, s.last_step, s.first_step FROM series s "
        "JOIN runs r ON r.id = s.run_id",
    ):
        kept = steps[(str(run), str(tag))]
        assert kept[-1] == last_step
        assert kept[0] == first_step
    assert steps[("a", "loss")][-1] == 499
    assert len(steps[("a", "loss")]) == SMALL["scalars"]
    assert steps[("a", "weights")][-1] == 497


def test_preemption_through_a_restarted_run(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    _write_scalar_run(logdir / "run", range(200), 1.0, suffix=".1")
    # Restarted from a checkpoint at step 120: a second file, steps going back.
    _write_scalar_run(logdir / "run", range(120, 160), -1.0, suffix=".2")
    everything = tmp_path / "all.db"
    ingest(logdir, everything, sampling=ALL)
    assert scalars(everything, "run", "loss") == {
        s: (1.0 if s < 120 else -1.0) * s for s in range(160)
    }
    assert kept_steps(everything)[("run", "sample")] == list(range(0, 160, 10))
    (last,) = rows(everything, "SELECT last_step, last_value FROM series WHERE tag = 'loss'")
    assert last == (159, -159.0)
    sampled = tmp_path / "sampled.db"
    ingest(logdir, sampled, sampling={"scalars": 20, "images": 4})
    loss = scalars(sampled, "run", "loss")
    # Under-filled after a partial preemption, until new points pass the old tail (reservoir.py).
    assert 10 <= len(loss) <= 20 and max(loss) == 159
    # Points of the first file at steps >= 120 are gone; those kept there are the rewrite's.
    assert all(value == (1.0 if s < 120 else -1.0) * s for s, value in loss.items())
    assert max(kept_steps(sampled)[("run", "sample")]) == 150
    assert snapshot(sampled)["orphans"] == [(0, 0)]


def test_zero_keeps_every_point_as_tensorboard_reads_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``scalars=0`` keeps everything: TensorBoard's loader reads a reservoir of 0 as
    unbounded, and hands 0 to its Rust data server as ``all``. (It kept nothing.)"""
    logdir = tmp_path / "logs"
    _write_scalar_run(logdir / "run", range(12_000), 2.0)
    db = tmp_path / "store.db"
    code = main(["ingest", str(logdir), "--db", str(db), "--samples-per-plugin", "scalars=0"])
    assert code == ExitCode.OK
    capsys.readouterr()
    # More than the default 10,000, every one of them.
    assert rows(db, COUNT_SCALARS) == [(12_000,)]
    assert rows(db, "SELECT capacity FROM series WHERE tag = 'loss'") == [(None,)]
    # The images keep their default (10).
    assert len(kept_steps(db)[("run", "sample")]) == 10


def test_all_keeps_every_point(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    logdir = tmp_path / "logs"
    writer = LiveWriter(logdir / "run")
    write_mixed(writer, range(1200), seed=7)
    writer.close()
    db = tmp_path / "store.db"
    spec = "scalars=all,histograms=all,images=all,text=all"
    assert main(["ingest", str(logdir), "--db", str(db), "--samples-per-plugin", spec]) == 0
    capsys.readouterr()
    expected, _ = decode_logdir(logdir)
    assert stored_points(db) == expected
    assert len(expected[("run", "loss")]) == 1200
    assert len(expected[("run", "sample")]) == 48


# -- big blobs ------------------------------------------------------------------------------


def test_five_mebibyte_image_round_trip(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    pixels = np.random.default_rng(8).integers(0, 256, (3, 1024, 1800), dtype=np.uint8)
    with SummaryWriter(str(logdir / "run")) as w:
        w.add_image("big", pixels, 7, walltime=WALL)
    (path,) = (logdir / "run").iterdir()
    (event,) = [e for e in LegacyEventFileLoader(str(path)).Load() if e.HasField("summary")]
    png = event.summary.value[0].image.encoded_image_string
    assert len(png) > 5 * 2**20
    db = tmp_path / "store.db"
    ingest(logdir, db)
    connection = open_reader(db)
    try:
        entries = list(
            connection.execute(
                "SELECT e.step, e.idx, e.blob_id, b.size, b.chunks FROM blob_entries e "
                "JOIN blobs b ON b.id = e.blob_id ORDER BY e.idx"
            )
        )
        assert [e[:2] for e in entries] == [(7, 0), (7, 1), (7, 2)]
        width, height, image = (read_blob(connection, int(e[2])) for e in entries)
    finally:
        connection.close()
    assert (width, height) == (b"1800", b"1024")
    assert image == png
    assert entries[2][3:] == (len(png), -(-len(png) // CHUNK_SIZE))
    assert os.path.getsize(db) < 3 * len(png)


@pytest.mark.parametrize("sampling", [SMALL, ALL])
def test_forgotten_sampling_states_are_read_back_exactly(
    tmp_path: Path, sampling: dict[str, int | None], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The writer forgets the sampling states of series it has not written lately once they
    # hold too many steps together; a series written again after being forgotten is read back
    # from the store, and must sample exactly as if it had never been forgotten.
    logdir = tmp_path / "logs"
    writer = LiveWriter(logdir / "run")
    write_mixed(writer, range(0, 150), seed=1)
    for step in range(3000):  # many commits, and series first seen, in between
        writer.scalar(f"other/{step // 100}", float(step), step)
    write_mixed(writer, range(150, 300), seed=2)
    writer.close()
    remembered = tmp_path / "remembered.db"
    kept = _ingest_counting_reads(logdir, remembered, sampling)
    monkeypatch.setattr("boardd.store.writer.MAX_CACHED_STEPS", 30)
    forgetful = tmp_path / "forgetful.db"
    forgot = _ingest_counting_reads(logdir, forgetful, sampling)
    assert_same_store(forgetful, remembered)
    # Not vacuous: states were read back, beyond the one read of each series when it came.
    assert kept == len(kept_steps(remembered)) < forgot


def _ingest_counting_reads(logdir: Path, db: Path, sampling: dict[str, int | None]) -> int:
    with WriteSession(db, logdir, sampling=sampling) as session:
        ingestor = Ingestor(session.writer, logdir, commit_bytes=4096, batch_bytes=4096)
        ingestor.run_pass()
        ingestor.close()
        return session.writer.counts.states_read
