"""``GET /api/v1/data_loss``: the byte ranges of event files that could not be read, from a real
logdir with damaged files; and the log says it once per file."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from tensorboardX import SummaryWriter

from boardd.config import ExperimentSpec
from tests.api.conftest import ALL, EXPERIMENT, WALL, assert_error, get_json, ingest, serve


def damage(path: Path, *fractions: float) -> None:
    """Flips one byte at each fraction of the file's length (inside a record's payload, as
    long as the file has many small records)."""
    data = bytearray(path.read_bytes())
    for fraction in fractions:
        data[int(len(data) * fraction)] ^= 0xFF
    path.write_bytes(bytes(data))


def write_runs(logdir: Path) -> dict[str, Path]:
    """Runs "train" and "eval" of 200 scalar steps each; their event files by run."""
    files = {}
    for run in ("train", "eval"):
        with SummaryWriter(str(logdir / run)) as w:
            for step in range(200):
                w.add_scalar("loss", step * 0.5, step, walltime=WALL + step)
        (files[run],) = (logdir / run).iterdir()
    return files


def test_data_loss_is_listed_and_logged_once_per_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    logdir = tmp_path / "logs"
    files = write_runs(logdir)
    damage(files["train"], 0.3, 0.6)
    damage(files["eval"], 0.5)
    db = tmp_path / "store.sqlite"
    with caplog.at_level(logging.WARNING, logger="boardd.store.writer"):
        ingest(logdir, db, ALL, experiment=EXPERIMENT)
    warnings = [r.getMessage() for r in caplog.records if "data loss" in r.getMessage()]
    assert len(warnings) == 2, warnings  # once per file, though train has two ranges
    assert {str(files["train"]), str(files["eval"])} == {
        path for path in map(str, files.values()) if any(path in w for w in warnings)
    }

    with serve(ExperimentSpec(EXPERIMENT, logdir, db)) as client:
        records = get_json(client, "/api/v1/data_loss")
        assert [r["run"] for r in records] == ["eval", "train", "train"]
        for record in records:
            assert set(record) == {"run", "file", "offset", "length", "reason", "time"}
            assert record["file"] == files[record["run"]].relative_to(logdir).as_posix()
            assert record["reason"] and record["time"] > WALL
            assert 0 < record["offset"] < files[record["run"]].stat().st_size
        train = [r for r in records if r["run"] == "train"]
        assert train[0]["offset"] < train[1]["offset"]  # file, then offset order
        assert get_json(client, "/api/v1/data_loss", run="train") == train
        assert get_json(client, "/api/v1/data_loss", run=["train", "eval"]) == records
        assert get_json(client, "/api/v1/data_loss", run="absent") == []
        # The rest of each file was read.
        steps = get_json(client, "/api/v1/scalars", plugin="scalars", run="eval")["eval"]["loss"]
        assert 190 <= len(steps) < 200
        assert_error(client.get("/api/v1/data_loss", params={"experiment": "nope"}), 404)
        assert_error(client.get("/api/v1/data_loss", params={"tag": "loss"}), 400)


def test_no_data_loss_is_an_empty_list(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    write_runs(logdir)
    db = tmp_path / "store.sqlite"
    ingest(logdir, db, ALL, experiment=EXPERIMENT)
    with serve(ExperimentSpec(EXPERIMENT, logdir, db)) as client:
        assert get_json(client, "/api/v1/data_loss") == []
