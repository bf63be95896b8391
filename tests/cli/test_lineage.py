"""``boardd lineage PATH_OR_URI``: from a checkpoint back to its run, hparams and data, as text
and as JSON, read from a real lineage store; clear failures."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from boardd.cli import ExitCode, main
from boardd.config import ExperimentSpec
from boardd.lineage import LineageService
from tests.conftest import ingest
from tests.lineage.conftest import TRIALS, TrainingLogdir, write_training_logdir


@pytest.fixture
def filled(tmp_path: Path) -> Iterator[tuple[TrainingLogdir, Path]]:
    logdir = write_training_logdir(tmp_path)
    spec = ExperimentSpec("exp", logdir.path, tmp_path / "store.sqlite")
    ingest(logdir.path, spec.db, experiment="exp")
    path = tmp_path / "lineage.sqlite"
    service = LineageService(path, [spec])
    service.start()
    try:
        service.refresh_now()
    finally:
        service.close()
    yield logdir, path


def test_text(filled: tuple[TrainingLogdir, Path], capsys: pytest.CaptureFixture[str]) -> None:
    logdir, path = filled
    checkpoint = logdir.checkpoints["lr0.01"][0]
    assert main(["lineage", str(checkpoint), "--lineage", str(path)]) == ExitCode.OK
    out = capsys.readouterr().out
    assert out.startswith(f"Checkpoint exp/lr0.01/{checkpoint.name}  [LIVE]\n")
    assert "written by TrainingRun exp/lr0.01  [COMPLETE]" in out
    assert f"experiment: exp ({logdir.path})" in out
    assert "last step: 40" in out
    hparams, _ = TRIALS["lr0.01"]
    for key, value in hparams.items():
        shown = float(value) if type(value) is int else value
        assert f"      {key} = {shown!r}\n" in out
    assert "    data:\n      EventFile " in out
    assert " records, " in out


def test_json(filled: tuple[TrainingLogdir, Path], capsys: pytest.CaptureFixture[str]) -> None:
    logdir, path = filled
    checkpoint = logdir.checkpoints["lr0.1"][1]
    assert main(["lineage", str(checkpoint), "--lineage", str(path), "--json"]) == 0
    [found] = json.loads(capsys.readouterr().out)
    assert found["uri"] == str(checkpoint)
    [run] = found["produced_by"]
    assert run["hparams"]["opt"] == "adam"
    assert run["properties"]["status"] == "STATUS_SUCCESS"


def test_unknown_file_and_missing_store(
    filled: tuple[TrainingLogdir, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, path = filled
    assert main(["lineage", "/nowhere/model.pt", "--lineage", str(path)]) == ExitCode.ERROR
    assert "no artifact in the lineage store has the URI" in capsys.readouterr().err
    missing = tmp_path / "none.sqlite"
    assert main(["lineage", "x.pt", "--lineage", str(missing)]) == ExitCode.BAD_STORE
    assert "no lineage store there" in capsys.readouterr().err
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"junk" * 1000)
    assert main(["lineage", "x.pt", "--lineage", str(junk)]) == ExitCode.BAD_STORE
    assert "cannot be read as a lineage store" in capsys.readouterr().err
    assert main(["lineage", "x.pt", "--lineage", str(tmp_path)]) == ExitCode.USAGE
