"""Staleness is never silent (issue 12 §4): a logdir deleted and created again, a file truncated
during the catch-up, rewritten in place, or recreated with earlier steps. Each is recognised at
the daemon's next look (an inotify notice), never at the periodic rescan: every daemon here
rescans once an hour. Each test ends with the store equal to a fresh ``boardd ingest`` of the
files as they are then."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tensorboard.compat.proto import event_pb2

from boardd.store.connection import open_reader
from boardd.store.errors import StoreOpenError
from tests.conftest import ingest, scalar_rows
from tests.daemon.conftest import Daemon, ServeFactory, wait_until
from tests.reader.records import frame_record

WALL = 1_700_000_000.0
#: Only what the daemon notices by itself can explain what these tests see.
NO_RESCAN = ("--rescan-interval", "3600")
#: A small reservoir, so that a few thousand steps are sampled.
SAMPLING = {"scalars": 100}
SAMPLING_ARGS = ("--samples-per-plugin", "scalars=100")

Contents = dict[tuple[str, str], list[tuple[int, float, float | None]]]


def event_file(
    steps: range, value: float = 1.0, *, tags: tuple[str, ...] = ("loss",), start: float = WALL
) -> bytes:
    """An event file's bytes: the file_version record (wall time ``start``), then one legacy
    scalar per tag and step, ``value * (step + 0.5)`` (never the same for two values)."""
    records = [frame_record(event_pb2.Event(wall_time=start, file_version="brain.Event:2").
                            SerializeToString())]  # fmt: skip
    for step in steps:
        for tag in tags:
            event = event_pb2.Event(step=step, wall_time=WALL + step)
            event.summary.value.add(tag=tag, simple_value=value * (step + 0.5))
            records.append(frame_record(event.SerializeToString()))
    return b"".join(records)


def contents(db: Path) -> Contents:
    """Every live series' points (step, wall time, value) by (run, tag); {} before the store
    exists."""
    try:
        connection = open_reader(db)
    except StoreOpenError:
        return {}
    try:
        found: Contents = {}
        for series_id, run, tag in connection.execute(
            "SELECT s.id, r.name, s.tag FROM series s JOIN runs r ON r.id = s.run_id "
            "WHERE r.deleted = 0"
        ):
            points = [
                (int(step), float(wall), None if value is None else float(value))
                for step, wall, value in scalar_rows(connection, series_id)
            ]
            if points:
                found[(str(run), str(tag))] = points
        return found
    finally:
        connection.close()


def fresh(logdir: Path, tmp_path: Path, sampling: dict[str, int | None] = SAMPLING) -> Contents:
    """What a fresh ``boardd ingest`` of the logdir as it is now holds."""
    db = tmp_path / f"fresh-{len(list(tmp_path.glob('fresh-*')))}.sqlite"
    ingest(logdir, db, sampling)
    return contents(db)


def summary(found: Contents) -> dict[tuple[str, str], str]:
    """Per series: its points and steps, for a readable failure."""
    return {
        key: f"{len(p)} points, steps {p[0][0]}..{p[-1][0]}, values {p[0][2]}..{p[-1][2]}"
        for key, p in found.items()
    }


def assert_served_as_fresh(
    daemon: Daemon,
    db: Path,
    logdir: Path,
    tmp_path: Path,
    sampling: dict[str, int | None] = SAMPLING,
) -> Contents:
    """Waits until the daemon's store holds what a fresh ingest of the files holds."""
    want = fresh(logdir, tmp_path, sampling)
    assert want, "the fresh ingest found nothing"
    try:
        wait_until(lambda: contents(db) == want, what="the store", alive=daemon.check_alive)
    except AssertionError:
        got = contents(db)
        differ = {k for k in got.keys() | want.keys() if got.get(k) != want.get(k)}
        raise AssertionError(
            "the daemon's store is not a fresh ingest's:\n"
            f" got {summary({k: v for k, v in got.items() if k in differ})}\n"
            f"want {summary({k: v for k, v in want.items() if k in differ})}"
        ) from None
    # ... and the API serves it.
    for (run, tag), points in want.items():
        assert [p["step"] for p in daemon.scalars(run, tag)] == [p[0] for p in points]
    return want


# -- 1. the logdir deleted and created again -----------------------------------------------------


def test_a_logdir_deleted_and_created_again_is_watched_again(
    serve: ServeFactory, tmp_path: Path
) -> None:
    logdir = tmp_path / "logs"
    db = tmp_path / "store.sqlite"
    (logdir / "train").mkdir(parents=True)
    (logdir / "train" / "events.out.tfevents.1.host").write_bytes(event_file(range(5)))
    daemon = serve(logdir, "--db", db, *NO_RESCAN, *SAMPLING_ARGS)
    daemon.wait_for_state("live")
    assert daemon.status()["watch_mode"] == "inotify"
    daemon.wait_for_steps("train", "loss", range(5))

    shutil.rmtree(logdir)
    # Health tells the truth: nothing watches a logdir that is gone.
    wait_until(
        lambda: daemon.status()["watch_mode"] == "polling",
        what="watch mode 'polling' while the logdir is gone",
        alive=daemon.check_alive,
    )
    assert daemon.status()["state"] == "live"

    # Created again with other runs: seen within seconds, not at the hourly rescan.
    (logdir / "eval").mkdir(parents=True)
    (logdir / "eval" / "events.out.tfevents.2.host").write_bytes(event_file(range(7)))
    daemon.wait_for_steps("eval", "loss", range(7))
    wait_until(
        lambda: daemon.status()["watch_mode"] == "inotify",
        what="watch mode 'inotify' again",
        alive=daemon.check_alive,
    )
    assert "watching it again" in daemon.stderr()

    # The new directory is really watched: an append and a new run arrive by inotify.
    with open(logdir / "eval" / "events.out.tfevents.2.host", "ab") as f:
        f.write(event_file(range(7, 9))[len(event_file(range(0))) :])
    (logdir / "test").mkdir()
    (logdir / "test" / "events.out.tfevents.3.host").write_bytes(event_file(range(3)))
    daemon.wait_for_steps("eval", "loss", range(9))
    daemon.wait_for_steps("test", "loss", range(3))
    assert daemon.runs() == ["eval", "test"]
    assert_served_as_fresh(daemon, db, logdir, tmp_path)
    assert daemon.status()["lag_seconds"] is None


# -- 2. a file truncated while the catch-up went on ----------------------------------------------


def test_a_file_truncated_during_the_catch_up_is_read_again_at_once(
    serve: ServeFactory, tmp_path: Path
) -> None:
    # Run "a" is read first; the catch-up then goes on with ~50 MB of other runs (below the
    # size that would decode them in worker processes), keeping every point.
    logdir = tmp_path / "logs"
    db = tmp_path / "store.sqlite"
    first = logdir / "a" / "events.out.tfevents.1.host"
    first.parent.mkdir(parents=True)
    first.write_bytes(event_file(range(3000)))
    big = event_file(range(20_000), tags=tuple(f"t{i}" for i in range(8)))
    for i in range(6):
        (logdir / f"b{i}").mkdir()
        (logdir / f"b{i}" / "events.out.tfevents.1.host").write_bytes(big)
    daemon = serve(logdir, "--db", db, *NO_RESCAN, "--samples-per-plugin", "scalars=all")
    status = wait_until(
        lambda: (
            (s := daemon.status())["state"] == "catching_up"
            and s["bytes_done"] > first.stat().st_size
            and s
        ),
        timeout=30,
        what="run a read, the catch-up going on",
        alive=daemon.check_alive,
    )
    # Cut at a record boundary: the first 1,000 steps stay.
    os.truncate(first, len(event_file(range(1000))))
    assert status["bytes_done"] < status["bytes_total"]
    daemon.wait_for_state("live", timeout=60)
    assert_served_as_fresh(daemon, db, logdir, tmp_path, {"scalars": None})


# -- 3. a file rewritten in place, its first bytes kept -------------------------------------------


def test_a_file_rewritten_in_place_keeping_its_first_bytes_is_read_again(
    serve: ServeFactory, tmp_path: Path
) -> None:
    # The same first record and records of the same sizes: only the values differ, so the
    # old read offset falls on a record boundary of the new file.
    logdir = tmp_path / "logs"
    db = tmp_path / "store.sqlite"
    path = logdir / "train" / "events.out.tfevents.1.host"
    path.parent.mkdir(parents=True)
    tags = ("loss", "acc")
    path.write_bytes(event_file(range(556), tags=tags))
    daemon = serve(logdir, "--db", db, *NO_RESCAN, "--samples-per-plugin", "scalars=all")
    daemon.wait_for_state("live")
    daemon.wait_for_steps("train", "acc", range(556))

    rewritten = event_file(range(1000), -1.0, tags=tags)
    assert rewritten[:64] == path.read_bytes()[:64]
    with open(path, "r+b") as f:
        f.write(rewritten)
    points = assert_served_as_fresh(daemon, db, logdir, tmp_path, {"scalars": None})
    assert points[("train", "loss")][:2] == [(0, WALL, -0.5), (1, WALL + 1, -1.5)]
    assert "file rewritten (its bytes before the read offset changed)" in daemon.stderr()


# -- 4. a file recreated with earlier steps -------------------------------------------------------


def test_a_file_recreated_with_earlier_steps_starts_its_sample_over(
    serve: ServeFactory, tmp_path: Path
) -> None:
    # 3,000 steps sampled down to 100 set the reservoir's threshold; the file recreated with
    # steps 500..2499 must be sampled as a fresh ingest samples it, not under that threshold
    # and beside the old points below step 500.
    logdir = tmp_path / "logs"
    db = tmp_path / "store.sqlite"
    path = logdir / "train" / "events.out.tfevents.1.host"
    path.parent.mkdir(parents=True)
    path.write_bytes(event_file(range(3000)))
    daemon = serve(logdir, "--db", db, *NO_RESCAN, *SAMPLING_ARGS)
    daemon.wait_for_state("live")
    wait_until(
        lambda: len(daemon.scalars("train", "loss")) == 100,
        what="100 points kept",
        alive=daemon.check_alive,
    )

    path.unlink()
    path.write_bytes(event_file(range(500, 2500), 2.0, start=WALL + 1))
    points = assert_served_as_fresh(daemon, db, logdir, tmp_path)
    assert len(points[("train", "loss")]) == 100
    assert points[("train", "loss")][0][0] >= 500
