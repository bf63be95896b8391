"""``boardd inspect`` end to end: real files, the real console script, the documented JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from tensorboardX import SummaryWriter

from boardd import __version__
from boardd.cli import ExitCode, main


@pytest.fixture
def logdir(tmp_path: Path) -> Path:
    root = tmp_path / "logs"
    with SummaryWriter(str(root / "train")) as w:
        for step in range(20):
            w.add_scalar("loss", 1.0 / (step + 1), step)
        w.add_histogram("weights", np.arange(100, dtype=np.float64), 3)
        w.add_image("sample", np.zeros((3, 4, 4), dtype=np.uint8), 5)
        w.add_text("notes", "hello", 7)
    with SummaryWriter(str(root / "eval" / "nested")) as w:
        w.add_scalar("acc", 0.5, 10)
    return root


def _run_json(path: Path, capsys: pytest.CaptureFixture[str]) -> dict:  # type: ignore[type-arg]
    assert main(["inspect", str(path), "--json"]) == ExitCode.OK
    return json.loads(capsys.readouterr().out)


def test_json_shape_and_counts(logdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = _run_json(logdir, capsys)
    assert set(report["runs"]) == {"train", "eval/nested"}
    train = report["runs"]["train"]
    (f,) = train["files"]
    assert set(f) == {"path", "bytes", "records", "data_loss", "partial_tail"}
    assert f["bytes"] == Path(f["path"]).stat().st_size
    assert f["records"] == 1 + 20 + 3  # file_version, scalars, histogram/image/text
    assert f["data_loss"] == []
    assert train["tags"]["loss"] == {
        "plugin": "scalars",
        "data_class": "scalar",
        "count": 20,
        "min_step": 0,
        "max_step": 19,
    }
    assert train["tags"]["weights"]["data_class"] == "tensor"
    assert train["tags"]["weights"]["plugin"] == "histograms"
    assert train["tags"]["sample"]["data_class"] == "blob_sequence"
    assert train["tags"]["notes/text_summary"]["plugin"] == "text"
    assert report["runs"]["eval/nested"]["tags"]["acc"]["max_step"] == 10


def test_single_event_file(logdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (path,) = (logdir / "eval" / "nested").glob("*tfevents*")
    report = _run_json(path, capsys)
    assert list(report["runs"]) == ["."]
    assert report["runs"]["."]["tags"]["acc"]["count"] == 1


def test_corrupt_region_is_reported_and_the_rest_read(
    logdir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (path,) = (logdir / "train").glob("*tfevents*")
    data = bytearray(path.read_bytes())
    hole_at, hole_len = 200, 150
    data[hole_at : hole_at + hole_len] = bytes(hole_len)
    path.write_bytes(bytes(data))
    report = _run_json(logdir, capsys)
    (f,) = report["runs"]["train"]["files"]
    assert f["data_loss"], "the zeroed hole must be reported"
    lost = f["data_loss"][0]
    assert lost["offset"] <= hole_at < lost["offset"] + lost["length"]
    # Records after the hole are still read.
    assert report["runs"]["train"]["tags"]["notes/text_summary"]["count"] == 1
    assert report["runs"]["train"]["tags"]["loss"]["max_step"] == 19


def test_human_table(logdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", str(logdir)]) == ExitCode.OK
    out = capsys.readouterr().out
    assert "run train" in out and "run eval/nested" in out
    assert "loss" in out and "blob_sequence" in out


def test_missing_path_has_its_own_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["inspect", str(tmp_path / "nope")]) == ExitCode.BAD_LOGDIR
    assert capsys.readouterr().err == f"boardd inspect: {tmp_path / 'nope'}: does not exist\n"


def test_console_script_version_help_and_module(logdir: Path) -> None:
    boardd = Path(sys.executable).with_name("boardd")
    out = subprocess.run([str(boardd), "--version"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"boardd {__version__}"
    helped = subprocess.run([str(boardd), "--help"], capture_output=True, text=True, check=True)
    assert "inspect" in helped.stdout and "ingest" in helped.stdout
    via_module = subprocess.run(
        [sys.executable, "-m", "boardd", "inspect", str(logdir), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert set(json.loads(via_module.stdout)["runs"]) == {"train", "eval/nested"}


def test_no_command_prints_help_and_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == ExitCode.USAGE
    assert "usage" in capsys.readouterr().err


def test_names_that_are_not_utf8_are_spelled_as_the_api_spells_them(tmp_path: Path) -> None:
    """A run directory named with a byte that is not UTF-8: ``run%FF`` (the store's and the
    API's spelling), in the table and in the JSON; it was a raw byte on the terminal and a lone
    surrogate in the JSON, which strict parsers refuse."""
    import os

    root = tmp_path / "logs"
    run_dir = os.fsencode(root) + b"/run\xff"
    os.makedirs(run_dir)
    with SummaryWriter(os.fsdecode(run_dir)) as w:
        w.add_scalar("loss", 1.0, 1)
    # The real console script: what a terminal or a pipe gets, as bytes.
    script = [sys.executable, "-m", "boardd", "inspect"]
    table = subprocess.run([*script, str(root)], capture_output=True, check=True).stdout
    assert table.startswith(b"run run%FF\n") and b"\xff" not in table, table
    raw = subprocess.run([*script, "--json", str(root)], capture_output=True, check=True).stdout
    report = json.loads(raw.decode("utf-8"))
    assert list(report["runs"]) == ["run%FF"]
    (file,) = report["runs"]["run%FF"]["files"]
    assert "/run%FF/" in file["path"] and file["partial_tail"] is False
    assert b"\\udcff" not in raw


def test_json_says_when_a_file_ends_mid_record(tmp_path: Path) -> None:
    root = tmp_path / "logs"
    with SummaryWriter(str(root / "run")) as w:
        w.add_scalar("loss", 1.0, 1)
    (event,) = (root / "run").iterdir()
    with event.open("ab") as f:
        f.write(b"\x40\x00\x00\x00")  # the first bytes of a record's header, as mid-write
    raw = subprocess.run(
        [sys.executable, "-m", "boardd", "inspect", "--json", str(root)],
        capture_output=True,
        check=True,
    ).stdout
    (file,) = json.loads(raw)["runs"]["run"]["files"]
    assert file["partial_tail"] is True and file["data_loss"] == []
