"""A damaged store is found when the writer opens it, never written or served; ``boardd
ingest`` says so with exit code 6, and ``boardd ingest --rebuild`` sets the file aside and
rebuilds the store from the logdir. Real stores, damaged on disk by the test."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from boardd.cli import ExitCode
from boardd.store import integrity
from boardd.store.connection import open_reader, open_writer
from boardd.store.errors import StoreDamagedError, StoreOpenError
from tests.conftest import COUNT_SCALARS
from tests.damaging import (
    POINTS,
    boardd_ingest,
    ingested_logdir,
    pages_of,
    scramble_page,
    truncate_to_half,
)


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A logdir and its store, ingested once; each test damages a copy."""
    return ingested_logdir(tmp_path_factory.mktemp("pristine"))


def mid_page_of_points(db: Path) -> None:
    scramble_page(db, pages_of(db, "scalar_blocks")[0], within=8192)


def start_of_points_page(db: Path) -> None:
    scramble_page(db, pages_of(db, "scalar_blocks")[0])


def index_page(db: Path) -> None:
    scramble_page(db, pages_of(db, "sqlite_autoindex_series_1")[0])


SHAPES: dict[str, Callable[[Path], None]] = {
    "truncated_to_half": truncate_to_half,
    "mid_page_of_points": mid_page_of_points,
    "start_of_points_page": start_of_points_page,
    "index_page": index_page,
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_damage_is_found_at_open_and_ingest_rebuild_mends_it(
    pristine: tuple[Path, Path], tmp_path: Path, shape: str
) -> None:
    logdir, source = pristine
    db = tmp_path / "store.sqlite"
    shutil.copy(source, db)
    SHAPES[shape](db)
    with pytest.raises(StoreDamagedError, match="is damaged"):
        open_writer(db)
    refused = boardd_ingest(logdir, db)
    assert refused.returncode == ExitCode.BAD_STORE, refused.stderr
    assert "is damaged" in refused.stderr and "--rebuild" in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr
    assert not list(tmp_path.glob("store.sqlite.damaged-*")), "refused, yet moved"

    rebuilt = boardd_ingest(logdir, db, "--rebuild")
    assert rebuilt.returncode == 0, rebuilt.stderr
    aside = list(tmp_path.glob("store.sqlite.damaged-*"))
    assert len(aside) == 1 and aside[0].name.count("-wal") == 0, aside
    assert str(aside[0].name) in rebuilt.stderr
    connection = open_reader(db)
    try:
        assert integrity.integrity_check(connection) is None
        (count,) = connection.execute(COUNT_SCALARS).fetchall()[0]
        assert count == 2 * (POINTS + POINTS // 100)
    finally:
        connection.close()


def test_a_file_that_is_not_a_store_is_refused_not_set_aside(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    logdir.mkdir()
    db = tmp_path / "notes.txt"
    db.write_bytes(b"not a database at all\n" * 1000)
    with pytest.raises(StoreOpenError) as raised:
        open_writer(db)
    assert not isinstance(raised.value, StoreDamagedError)
    done = boardd_ingest(logdir, db, "--rebuild")
    assert done.returncode == ExitCode.BAD_STORE, done.stderr
    assert db.read_bytes().startswith(b"not a database")
    assert not list(tmp_path.glob("notes.txt.damaged-*"))


def test_file_size_problem_says_truncated(pristine: tuple[Path, Path], tmp_path: Path) -> None:
    _logdir, source = pristine
    db = tmp_path / "store.sqlite"
    shutil.copy(source, db)
    assert integrity.file_size_problem(db) is None
    truncate_to_half(db)
    assert "truncated" in (integrity.file_size_problem(db) or "")
