"""Ingestor.ingest_changed: what a live daemon does with a watcher's notices."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from boardd.ingest import Ingestor
from boardd.store.connection import open_reader
from boardd.store.session import WriteSession
from tests.store.conftest import LiveWriter


@pytest.fixture
def ingestor(tmp_path: Path) -> Iterator[Ingestor]:
    """An ingestor of tmp_path/logs (empty), writing tmp_path/store.sqlite."""
    logdir = tmp_path / "logs"
    logdir.mkdir()
    with WriteSession(tmp_path / "store.sqlite", logdir, sampling={"*": None}) as session:
        ingestor = Ingestor(session.writer, logdir, workers=1)
        yield ingestor
        ingestor.close()


def _write(directory: Path, suffix: str, steps: range, tag: str = "loss") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    writer = LiveWriter(directory, suffix=suffix)
    for step in steps:
        writer.scalar(tag, float(step), step)
    writer.close()
    return writer.path


def _steps(db: Path) -> dict[tuple[str, str], list[int]]:
    connection = open_reader(db)
    try:
        found: dict[tuple[str, str], list[int]] = {}
        for run, tag, step in connection.execute(
            "SELECT r.name, s.tag, p.step FROM scalar_points p JOIN series s "
            "ON s.id = p.series_id JOIN runs r ON r.id = s.run_id ORDER BY 1, 2, 3"
        ):
            found.setdefault((run, tag), []).append(step)
        return found
    finally:
        connection.close()


def _states(db: Path) -> dict[str, str]:
    connection = open_reader(db)
    try:
        return {Path(p).name: s for p, s in connection.execute("SELECT path, state FROM files")}
    finally:
        connection.close()


def test_a_new_run_is_read_whole_in_name_order(ingestor: Ingestor, tmp_path: Path) -> None:
    run = tmp_path / "logs" / "fresh"
    _write(run, ".a", range(0, 5))
    second = _write(run, ".b", range(5, 10))
    # Only the second file is noticed: the run is new, so its first file is read too, first.
    result = ingestor.ingest_changed([second])
    ingestor.flush()
    assert _steps(tmp_path / "store.sqlite") == {("fresh", "loss"): list(range(10))}
    assert result.bytes_read == sum(p.stat().st_size for p in run.iterdir())


def test_a_known_run_reads_only_the_changed_files(ingestor: Ingestor, tmp_path: Path) -> None:
    run = tmp_path / "logs" / "known"
    first = _write(run, ".a", range(0, 3), tag="a")
    ingestor.run_pass()
    second = _write(run, ".b", range(0, 4), tag="b")
    third = _write(run, ".c", range(0, 5), tag="c")
    ingestor.ingest_changed([str(third)])
    ingestor.flush()
    steps = _steps(tmp_path / "store.sqlite")
    assert steps == {("known", "a"): [0, 1, 2], ("known", "c"): list(range(5))}
    # The next full pass finds the file that was not noticed.
    ingestor.run_pass()
    assert _steps(tmp_path / "store.sqlite")[("known", "b")] == list(range(4))
    assert first.exists() and second.exists()


def test_a_path_outside_the_logdir_is_skipped(ingestor: Ingestor, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere" / "run"
    target = _write(outside, ".a", range(3))
    (tmp_path / "logs" / "linked").symlink_to(outside)
    # A watcher following the symlink may report the file by its real path.
    result = ingestor.ingest_changed([target])
    ingestor.flush()
    assert result.bytes_read == 0
    assert _steps(tmp_path / "store.sqlite") == {}
    # Through the logdir, the same file is the run "linked".
    ingestor.ingest_changed([tmp_path / "logs" / "linked" / target.name])
    ingestor.flush()
    assert _steps(tmp_path / "store.sqlite") == {("linked", "loss"): [0, 1, 2]}


def test_a_deleted_file_is_left_to_the_next_full_pass(ingestor: Ingestor, tmp_path: Path) -> None:
    run = tmp_path / "logs" / "run"
    path = _write(run, ".a", range(3))
    _write(run, ".b", range(3, 6))
    ingestor.run_pass()
    path.unlink()
    result = ingestor.ingest_changed([path])
    ingestor.flush()
    assert result.bytes_read == 0 and result.commits == 0
    db = tmp_path / "store.sqlite"
    assert _states(db)[path.name] == "active"
    ingestor.run_pass()
    assert _states(db)[path.name] == "deleted"
    # Its data stays.
    assert _steps(db) == {("run", "loss"): list(range(6))}
