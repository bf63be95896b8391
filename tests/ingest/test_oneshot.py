"""ingest_logdir: one whole pass, as ``boardd ingest`` runs it, and what it reports."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from boardd.cli import ExitCode, main
from boardd.ingest import IngestResult, ingest_logdir
from boardd.reader.modes import CrcMode
from boardd.store.errors import FingerprintMismatchError, LeaseHeldError
from boardd.store.location import default_store_path
from boardd.store.session import WriteSession
from tests.store.conftest import LiveWriter, assert_same_store, snapshot, write_mixed


def _logdir(root: Path) -> Path:
    logdir = root / "logs"
    for run in ("a", "b/c"):
        (logdir / run).mkdir(parents=True)
        writer = LiveWriter(logdir / run)
        write_mixed(writer, range(200))
        writer.close()
    return logdir


def _event_bytes(logdir: Path) -> int:
    return sum(p.stat().st_size for p in logdir.rglob("*tfevents*"))


def test_reports_what_it_read_and_what_the_store_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The default store goes to the state directory: this test's own.
    monkeypatch.delenv("STATE_DIRECTORY", raising=False)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    logdir = _logdir(tmp_path)
    progress: list[tuple[int, int]] = []
    result = ingest_logdir(
        logdir,
        experiment="mine",
        sampling={"*": None},
        progress=lambda done, total: progress.append((done, total)),
    )
    assert isinstance(result, IngestResult)
    assert result.db == default_store_path(logdir)
    assert result.bytes_read == _event_bytes(logdir)
    assert result.db.parent == tmp_path / "state" / "boardd"
    # Per run: 200 steps of 2 scalars, every 7th a histogram, every 25th an image and a
    # text, one event each, and the file_version record.
    assert result.records == 2 * (2 * 200 + 29 + 8 + 8 + 1)
    assert result.commits >= 1
    assert result.summary.runs == 2
    assert result.summary.scalar_points == 2 * 2 * 200
    assert progress[-1] == (result.bytes_read, result.bytes_read)
    with pytest.raises(AttributeError):
        result.bytes_read = 0  # type: ignore[misc]  # frozen
    again = ingest_logdir(logdir, experiment="mine", sampling={"*": None})
    assert (again.bytes_read, again.records, again.summary) == (0, 0, result.summary)


def test_equals_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    logdir = _logdir(tmp_path)
    cli_db, api_db = tmp_path / "cli.sqlite", tmp_path / "api.sqlite"
    code = main(["ingest", str(logdir), "--db", str(cli_db), "--samples-per-plugin", "scalars=30"])
    assert code == ExitCode.OK
    capsys.readouterr()
    ingest_logdir(logdir, api_db, sampling={"scalars": 30}, crc_mode=CrcMode.ON_ERROR)
    assert_same_store(api_db, cli_db, logdir)


def test_settings_reach_the_ingestor(tmp_path: Path) -> None:
    logdir = _logdir(tmp_path)
    # Tiny commits: many of them, the same content as one big commit.
    small = ingest_logdir(logdir, tmp_path / "small.sqlite", commit_bytes=2000)
    big = ingest_logdir(logdir, tmp_path / "big.sqlite")
    assert small.commits > 5 * big.commits
    assert snapshot(tmp_path / "small.sqlite", logdir) == snapshot(tmp_path / "big.sqlite", logdir)


def test_rebuild_swaps_in_a_store_with_new_sampling(tmp_path: Path) -> None:
    logdir = _logdir(tmp_path)
    db = tmp_path / "store.sqlite"
    ingest_logdir(logdir, db, sampling={"scalars": 10})
    with pytest.raises(FingerprintMismatchError):
        ingest_logdir(logdir, db, sampling={"scalars": 20})
    rebuilt = ingest_logdir(logdir, db, sampling={"scalars": 20}, rebuild=True)
    assert rebuilt.db == db
    assert not Path(str(db) + ".rebuild").exists()
    assert rebuilt.bytes_read == _event_bytes(logdir)
    assert rebuilt.summary.scalar_points == 2 * 2 * 20


def test_store_errors_propagate_and_the_lease_comes_back(tmp_path: Path) -> None:
    logdir = _logdir(tmp_path)
    db = tmp_path / "store.sqlite"
    with WriteSession(db, logdir), pytest.raises(LeaseHeldError):
        ingest_logdir(logdir, db)
    assert ingest_logdir(logdir, db).bytes_read == _event_bytes(logdir)
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".rebuild")]
