"""A damaged store is found, said, set aside and rebuilt from the logdir by ``boardd serve``
itself; no answer is ever wrong meanwhile: each is what a fresh ingest of the logdir gives, or
a 503 that says why. Real stores damaged on disk by the test (cut, bytes overwritten, a
write-ahead log's frames rewritten), a real daemon, real HTTP."""

from __future__ import annotations

import shutil
import signal
import struct
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tensorboardX import SummaryWriter

from tests.daemon.conftest import Daemon, ServeFactory, wait_until
from tests.damaging import (
    POINTS,
    RUNS,
    boardd_ingest,
    ingested_logdir,
    pages_of,
    scramble_page,
    truncate_to_half,
)

#: tag → its steps, as write_logdir writes them (every run has both).
SERIES = {"loss": range(POINTS), "acc": range(0, POINTS, 100)}


def expected(tag: str) -> list[tuple[int, float]]:
    """What a fresh ingest answers for a series: tensorboardX writes float32 values."""
    scale = 10 if tag == "loss" else 1
    return [(s, float(np.float32(s / scale))) for s in SERIES[tag]]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A logdir and its store, ingested once; each test damages a copy of both."""
    return ingested_logdir(tmp_path_factory.mktemp("pristine"))


def copy_of(
    pristine: tuple[Path, Path], tmp_path: Path, *, own_logdir: bool = False
) -> tuple[Path, Path]:
    """The shared logdir and a copy of its store; or (``own_logdir``: the test changes it) a
    copy of the logdir and a store ingested from it (a store records its logdir)."""
    logdir, db = pristine
    copy = tmp_path / "store.sqlite"
    if not own_logdir:
        shutil.copy(db, copy)
        return logdir, copy
    shutil.copytree(logdir, tmp_path / "logs")
    done = boardd_ingest(tmp_path / "logs", copy)
    assert done.returncode == 0, done.stderr
    return tmp_path / "logs", copy


def answer(daemon: Daemon, run: str, tag: str) -> tuple[int, Any]:
    """(status, points or error message) of one series."""
    assert daemon.client is not None
    response = daemon.client.get(
        "/api/v1/scalars", params={"plugin": "scalars", "run": run, "tag": tag}
    )
    body = response.json()
    if response.status_code != 200:
        return response.status_code, body["error"]["message"]
    points = body.get(run, {}).get(tag, [])
    return 200, [(p["step"], p["value"]) for p in points]


def wait_for_the_opening_read(daemon: Daemon) -> None:
    """Waits until the store has been read whole since it opened (its open checks only the
    file's size, so that a restart answers at once; the read follows in the background)."""
    wait_until(
        lambda: daemon.status()["store_checked"],
        timeout=30,
        what="the store read whole",
        alive=daemon.check_alive,
    )


def assert_every_answer_right(daemon: Daemon, runs: tuple[str, ...] = RUNS) -> bool:
    """Every series answers what a fresh ingest gives, or 503 (never other data, never a 500);
    returns whether all answered 200."""
    whole = True
    for run in runs:
        for tag in SERIES:
            status, got = answer(daemon, run, tag)
            if status == 503:
                whole = False
                continue
            assert status == 200, (run, tag, status, got)
            if not got:  # a store filling from scratch has not read this run yet
                whole = False
                continue
            assert got == expected(tag), f"{run}/{tag}: {len(got)} points, not the logdir's"
    return whole


def assert_mended(daemon: Daemon, db: Path, runs: tuple[str, ...] = RUNS) -> dict[str, Any]:
    """Waits until every answer is whole again (each one seen right or 503 on the way), and
    checks what health and the log say; returns the experiment's health entry."""
    wait_for_the_opening_read(daemon)
    wait_until(
        lambda: assert_every_answer_right(daemon, runs),
        timeout=30,
        what="every series answered whole",
        alive=daemon.check_alive,
    )
    entry = daemon.wait_for_state("live")
    damage = entry["damage"]
    assert damage is not None, entry
    aside = Path(damage["set_aside"])
    if not aside.is_absolute():
        aside = db.parent / aside.name
    assert aside.exists() and aside.name.startswith("store.sqlite.damaged-"), damage
    assert "damaged" in damage["found"], damage
    log = daemon.stderr()
    assert "set aside as" in log and "rebuilding it from the logdir" in log, log
    assert "Traceback" not in log, log
    return entry


def start_of_points_page(db: Path) -> None:
    scramble_page(db, pages_of(db, "scalar_blocks")[0])


def mid_page_of_points(db: Path) -> None:
    scramble_page(db, pages_of(db, "scalar_blocks")[0], within=8192)


def index_page(db: Path) -> None:
    scramble_page(db, pages_of(db, "sqlite_autoindex_series_1")[0])


def spread(db: Path) -> None:
    """Pages all along the file, each at its middle: whatever they hold."""
    pages = db.stat().st_size // 16384
    for page in range(2, pages, max(1, pages // 8)):
        scramble_page(db, page, within=6000, length=2048)


AT_REST: dict[str, Callable[[Path], None]] = {
    "truncated_to_half": truncate_to_half,
    "start_of_points_page": start_of_points_page,
    "mid_page_of_points": mid_page_of_points,
    "index_page": index_page,
    "spread_across_the_file": spread,
}


@pytest.mark.parametrize("shape", list(AT_REST))
def test_damage_at_rest_is_set_aside_and_rebuilt(
    serve: ServeFactory, pristine: tuple[Path, Path], tmp_path: Path, shape: str
) -> None:
    logdir, db = copy_of(pristine, tmp_path)
    AT_REST[shape](db)
    daemon = serve(logdir, "--db", db)
    wait_for_the_opening_read(daemon)
    assert_every_answer_right(daemon)
    assert_mended(daemon, db)
    assert daemon.health()["status"] == "ok"
    assert daemon.stop() == 0


def test_runs_gone_from_the_logdir_are_said_lost(
    serve: ServeFactory, pristine: tuple[Path, Path], tmp_path: Path
) -> None:
    logdir, db = copy_of(pristine, tmp_path, own_logdir=True)
    mid_page_of_points(db)
    shutil.rmtree(logdir / "b")
    daemon = serve(logdir, "--db", db)
    entry = assert_mended(daemon, db, runs=("a",))
    assert entry["damage"]["lost_runs"] == ["b"], entry
    assert "no longer holds, lost: b" in daemon.stderr()
    assert daemon.stop() == 0


def test_serve_rebuild_on_a_store_that_cannot_be_opened(
    serve: ServeFactory, pristine: tuple[Path, Path], tmp_path: Path
) -> None:
    logdir, db = copy_of(pristine, tmp_path)
    truncate_to_half(db)
    daemon = serve(logdir, "--db", db, "--rebuild")
    wait_until(
        lambda: assert_every_answer_right(daemon),
        timeout=30,
        what="every series answered whole",
        alive=daemon.check_alive,
    )
    assert daemon.wait_for_state("live")["error"] is None
    assert list(tmp_path.glob("store.sqlite.damaged-*"))
    assert "Traceback" not in daemon.stderr()
    assert daemon.stop() == 0


def test_damage_while_serving_answers_503_then_mends(
    serve: ServeFactory, pristine: tuple[Path, Path], tmp_path: Path
) -> None:
    logdir, db = copy_of(pristine, tmp_path)
    daemon = serve(logdir, "--db", db)
    daemon.wait_for_state("live")
    assert daemon.runs() == sorted(RUNS)
    # The runs and series tables: read by the listings, which no memory cache holds.
    for name in ("runs", "series"):
        for page in pages_of(db, name):
            scramble_page(db, page)
    assert daemon.client is not None
    listing = daemon.client.get("/api/v1/runs")
    assert listing.status_code in (200, 503), listing.text
    if listing.status_code == 200:
        assert sorted(r["name"] for r in listing.json()) == sorted(RUNS)
    else:
        assert "damaged" in listing.json()["error"]["message"]
    assert_mended(daemon, db)
    assert daemon.runs() == sorted(RUNS)
    assert daemon.stop() == 0


# -- a damaged write-ahead log ---------------------------------------------------------------


def _wal_checksum(data: bytes, s0: int, s1: int, big_endian: bool) -> tuple[int, int]:
    words = struct.unpack((">" if big_endian else "<") + f"{len(data) // 4}I", data)
    for i in range(0, len(words), 2):
        s0 = (s0 + words[i] + s1) & 0xFFFFFFFF
        s1 = (s1 + words[i + 1] + s0) & 0xFFFFFFFF
    return s0, s1


def scramble_wal_page(wal: Path, page: int) -> int:
    """Random bytes into the middle of the last frame of ``page`` in the log, every frame's
    checksum then computed anew (https://www.sqlite.org/fileformat.html#wal_file_format), so
    that SQLite takes the damaged page as committed; returns the frames rewritten."""
    data = bytearray(wal.read_bytes())
    magic, _version, page_size = struct.unpack(">III", data[:12])
    big = bool(magic & 1)
    frame_size = 24 + page_size
    frames = (len(data) - 32) // frame_size
    target = max(
        i for i in range(frames) if struct.unpack(">I", data[32 + i * frame_size :][:4])[0] == page
    )
    start = 32 + target * frame_size + 24 + page_size // 2
    data[start : start + 2048] = np.random.default_rng(7).bytes(2048)
    s0, s1 = struct.unpack(">II", data[24:32])
    for i in range(frames):
        at = 32 + i * frame_size
        s0, s1 = _wal_checksum(bytes(data[at : at + 8]), s0, s1, big)
        s0, s1 = _wal_checksum(bytes(data[at + 24 : at + frame_size]), s0, s1, big)
        data[at + 16 : at + 24] = struct.pack(">II", s0, s1)
    wal.write_bytes(bytes(data))
    return frames


def pages_in_wal(db: Path, tmp_path: Path) -> list[int]:
    """The scalar points' leaf pages as the store sees them with its log (read in a copy)."""
    copy = tmp_path / "copy.sqlite"
    shutil.copy(db, copy)
    shutil.copy(f"{db}-wal", f"{copy}-wal")
    return pages_of(copy, "scalar_points")


def wal_frames_pages(wal: Path) -> set[int]:
    data = wal.read_bytes()
    page_size = struct.unpack(">I", data[8:12])[0]
    size = 24 + page_size
    return {
        struct.unpack(">I", data[32 + i * size :][:4])[0] for i in range((len(data) - 32) // size)
    }


def test_damaged_write_ahead_log_is_set_aside_and_rebuilt(
    serve: ServeFactory, pristine: tuple[Path, Path], tmp_path: Path
) -> None:
    logdir, db = copy_of(pristine, tmp_path, own_logdir=True)
    first = serve(logdir, "--db", db)
    first.wait_for_state("live")
    with SummaryWriter(logdir=str(logdir / "c")) as writer:
        for step in range(POINTS):
            writer.add_scalar("loss", step / 10, step)
            if step % 100 == 0:
                writer.add_scalar("acc", step, step)
    first.wait_for_steps("c", "acc", SERIES["acc"], timeout=30)
    first.wait_for_steps("c", "loss", SERIES["loss"], timeout=30)
    # Killed holding its log: the last commits are only in the -wal file.
    assert first.stop(signal.SIGKILL) == -signal.SIGKILL
    wal = Path(f"{db}-wal")
    assert wal.exists() and wal.stat().st_size > 0
    in_log = sorted(set(pages_in_wal(db, tmp_path)) & wal_frames_pages(wal))
    assert in_log, "no page of scalar points in the log"
    assert scramble_wal_page(wal, in_log[-1]) > 0

    second = serve(logdir, "--db", db)
    runs = (*RUNS, "c")
    assert_every_answer_right(second, runs)
    assert_mended(second, db, runs)
    assert second.stop() == 0


def test_a_store_that_cannot_be_read_is_not_a_traceback_a_second(
    serve: ServeFactory, tmp_path: Path
) -> None:
    logdir = tmp_path / "logs"
    logdir.mkdir()
    db = tmp_path / "store.sqlite"
    db.write_bytes(b"not a database, and not boardd's to move\n" * 1000)
    daemon = serve(logdir, "--db", db)
    entry = daemon.wait_for_state("failed")
    assert "not a database" in entry["error"], entry
    daemon.get("health")  # the first answer: the lineage store opens, and refreshes
    wait_until(
        lambda: "lineage: refreshing" in daemon.stderr(),
        what="the lineage refresh's failure said",
        alive=daemon.check_alive,
    )
    time.sleep(4)  # retried every second before
    log = daemon.stderr()
    assert log.count("lineage: refreshing") == 1, log
    assert "Traceback" not in log, log
    assert db.read_bytes().startswith(b"not a database")
    assert daemon.stop() == 0


def test_the_background_check_finds_damage_no_read_met(
    serve: ServeFactory, pristine: tuple[Path, Path], tmp_path: Path
) -> None:
    logdir, db = copy_of(pristine, tmp_path)
    daemon = serve(logdir, "--db", db, env={"BOARDD_INTEGRITY_CHECK_AFTER": "2"})
    daemon.wait_for_state("live")
    # An index no answer reads (a run's files, for the ingest's passes).
    scramble_page(db, pages_of(db, "files_by_run")[0])
    entry = wait_until(
        lambda: (e := daemon.status())["damage"] is not None and e,
        timeout=30,
        what="the damage found by the background check",
        alive=daemon.check_alive,
    )
    # What SQLite says of it differs between its releases (the index's name, "malformed",
    # or the b-tree page that failed).
    found = entry["damage"]["found"]
    assert any(word in found for word in ("files_by_run", "malformed", "btreeInitPage")), found
    assert_mended(daemon, db)
    assert daemon.stop() == 0
