"""``boardd hparams LOGDIR`` end to end: real logdirs (tests/hparams_logdirs.py), the command as a
subprocess, its table and CSV, sort and filters, catch-up unless a daemon holds the store, and
its errors with their exit codes."""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from boardd.exitcodes import ExitCode
from boardd.store.location import default_store_path
from boardd.store.session import WriteSession
from tests.cli.test_ingest import SRC, boardd
from tests.hparams_logdirs import (
    INFERRED_SESSIONS,
    OFFICIAL_GROUPS,
    OFFICIAL_NO_ACCURACY,
    OFFICIAL_NO_SCORE,
    SUCCESS,
    WALL,
    curve,
    hp,
    session_end_pb,
    write_inferred,
    write_official,
    write_run,
    write_tensorboardx,
)

OFFICIAL_HEADER = [
    "session_group",
    "session",
    "batch_norm",
    "dropout",
    "layers",
    "learning_rate",
    "optimizer",
    "score",
    "train/loss",
    "validation/loss",
    "validation/accuracy",
    "status",
]


def rows_of(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


@pytest.fixture(scope="module")
def official(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_official(tmp_path_factory.mktemp("cli-hparams")).path


def test_table_of_the_official_logdir(official: Path, tmp_path: Path) -> None:
    # No --db: the logdir's own store, where serve and ingest keep it.
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    env.pop("STATE_DIRECTORY", None)
    done = boardd("hparams", official, env=env)
    assert done.returncode == ExitCode.OK, done.stderr
    assert default_store_path(official, env).exists()
    lines = done.stdout.splitlines()
    assert lines[0].split() == OFFICIAL_HEADER
    assert set(lines[1]) == {"-", " "}
    assert lines[-1] == "(13 sessions)"
    body = {line.split()[1]: line.split() for line in lines[2:-1]}
    assert len(body) == 13
    # A metric the session lacks, an hparam its group lacks: "-".
    (no_accuracy,) = OFFICIAL_NO_ACCURACY
    assert body[no_accuracy][-2] == "-"
    (no_score,) = OFFICIAL_NO_SCORE
    assert body[no_score][3] == "-" and body[no_score][7] == "-"  # dropout, score
    assert body["alpha/trial_0"][2:7] == ["true", "0", "2", "0.001", "adam"]
    assert body["beta/trial_1"][-1] == "failure" and body["alpha/trial_0"][-1] == "success"
    # Run again: nothing new to read, the same table.
    again = boardd("hparams", official, env=env)
    assert again.stdout == done.stdout


def test_csv_holds_every_value(official: Path, tmp_path: Path) -> None:
    done = boardd("hparams", official, "--db", tmp_path / "s.sqlite", "--csv")
    assert done.returncode == ExitCode.OK, done.stderr
    rows = rows_of(done.stdout)
    # The CSV always has hparams_run (the table, only when some session is an add_hparams
    # sub-run): here the sessions themselves.
    assert list(rows[0]) == [*OFFICIAL_HEADER, "hparams_run"]
    assert all(r["hparams_run"] == r["session"] for r in rows)
    by_session = {r["session"]: r for r in rows}
    for g, (group, (hparams, trials)) in enumerate(OFFICIAL_GROUPS.items()):
        for trial in range(trials):
            row = by_session[f"{group}/trial_{trial}"]
            assert row["session_group"] == group
            assert float(row["learning_rate"]) == hparams["learning_rate"]
            assert row["optimizer"] == hparams["optimizer"]
            assert row["batch_norm"] == str(hparams["batch_norm"])
            assert row["dropout"] == ("" if "dropout" not in hparams else str(hparams["dropout"]))
            base = 1.0 + g + 0.125 * trial
            # The last point of each metric, exactly (float32, as written).
            assert float(row["train/loss"]) == float(np.float32(base / 4))
            if row["session"] not in OFFICIAL_NO_ACCURACY:
                assert float(row["validation/accuracy"]) == float(np.float32(0.5 + base / 10))
            else:
                assert row["validation/accuracy"] == ""


def test_sort_and_filters(official: Path, tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    done = boardd("hparams", official, "--db", db, "--csv", "--sort=-score")
    groups = [r["session_group"] for r in rows_of(done.stdout)]
    # Groups by their average score, highest first; the group without a score last.
    assert list(dict.fromkeys(groups)) == ["epsilon", "gamma", "beta", "alpha", "delta"]
    done = boardd("hparams", official, "--db", db, "--csv", "--sort", "optimizer,-layers")
    order = list(dict.fromkeys(r["session_group"] for r in rows_of(done.stdout)))
    assert order == ["epsilon", "alpha", "gamma", "beta", "delta"]
    done = boardd(
        "hparams", official, "--db", db, "--csv",
        "--filter", "optimizer=^(adam|sgd)$", "--filter", "learning_rate=0.001..0.04",
    )  # fmt: skip
    assert done.returncode == ExitCode.OK, done.stderr
    assert {r["session_group"] for r in rows_of(done.stdout)} == {"alpha", "beta"}
    # An open interval on a metric; a partial-match regexp.
    done = boardd(
        "hparams", official, "--db", db, "--csv",
        "--filter", "validation/loss=2..", "--filter", "optimizer=da",
    )  # fmt: skip
    assert {r["session"] for r in rows_of(done.stdout)} == {f"epsilon/trial_{t}" for t in range(4)}
    # Exact values: a bool column (no regular expression or interval fits one), a string list.
    everything = rows_of(boardd("hparams", official, "--db", db, "--csv").stdout)
    done = boardd("hparams", official, "--db", db, "--csv", "--filter", "batch_norm==true")
    assert done.returncode == ExitCode.OK, done.stderr
    kept = {r["session"] for r in everything if r["batch_norm"] == "True"}
    assert kept and {r["session"] for r in rows_of(done.stdout)} == kept
    done = boardd("hparams", official, "--db", db, "--csv", "--filter", "optimizer==adam,sgd")
    kept = {r["session"] for r in everything if r["optimizer"] in ("adam", "sgd")}
    assert kept and {r["session"] for r in rows_of(done.stdout)} == kept


def test_tensorboardx_and_inferred_logdirs(tmp_path: Path) -> None:
    tbx = write_tensorboardx(tmp_path)
    done = boardd("hparams", tbx.path, "--db", tmp_path / "t.sqlite", "--csv", "--sort=lr")
    assert done.returncode == ExitCode.OK, done.stderr
    rows = rows_of(done.stdout)
    assert [float(r["lr"]) for r in rows] == [0.001, 0.01, 0.05, 0.1, 0.2]
    # add_hparams' session in its timestamped sub-run shows as the run the user named, the
    # sub-run kept in hparams_run.
    assert {r["hparams_run"] for r in rows} == set(tbx.statuses)
    for r in rows:
        run, _stamp = r["hparams_run"].split("/")
        assert r["session"] == r["session_group"] == run and run.startswith("trial_"), r
    assert [r["hparam/accuracy"] for r in rows if r["lr"] == "0.05"] == [""]
    # The table too, with the sub-run last.
    table = boardd("hparams", tbx.path, "--db", tmp_path / "t.sqlite", "--sort=lr").stdout
    lines = table.splitlines()
    assert lines[0].split()[:2] == ["session_group", "session"]
    assert lines[0].split()[-2:] == ["status", "hparams_run"]
    first = lines[2].split()
    assert first[:2] == [rows[0]["session"]] * 2 and first[-1] == rows[0]["hparams_run"]
    inferred = write_inferred(tmp_path)
    done = boardd("hparams", inferred.path, "--db", tmp_path / "i.sqlite", "--csv")
    rows = rows_of(done.stdout)
    assert {r["session"] for r in rows} == set(INFERRED_SESSIONS)
    hparams = ["act", "lr", "residual", "seed", "units"]
    assert list(rows[0])[2:] == [*hparams, "eval/acc", "loss", "status", "hparams_run"]
    assert all(r["hparams_run"] == r["session"] for r in rows)


def test_catches_up_unless_a_daemon_holds_the_store(tmp_path: Path) -> None:
    made = write_official(tmp_path)
    db = tmp_path / "s.sqlite"
    assert boardd("hparams", made.path, "--db", db).returncode == ExitCode.OK
    # A new session while a writer (as a daemon) holds the store: read as the store has it.
    params = {"learning_rate": 0.02, "layers": 5, "optimizer": "sgd", "batch_norm": True}
    start = WALL + 99_000
    write_run(
        made.path,
        "zeta/trial_0",
        [hp.hparams_pb(params, trial_id="zeta", start_time_secs=start)],
        {"score": curve(99.0)},
        start=start,
        end=session_end_pb(SUCCESS, start + 9),
        end_wall=start + 9,
    )
    with WriteSession(db, made.path):
        held = boardd("hparams", made.path, "--db", db, "--csv")
    assert held.returncode == ExitCode.OK, held.stderr
    assert "zeta/trial_0" not in held.stdout
    # No writer: the command catches the store up first.
    done = boardd("hparams", made.path, "--db", db, "--csv")
    (row,) = [r for r in rows_of(done.stdout) if r["session"] == "zeta/trial_0"]
    assert (row["score"], row["status"], row["dropout"]) == ("99.0", "success", "")


def test_errors_and_exit_codes(official: Path, tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    done = boardd("hparams", tmp_path / "nope", "--db", db)
    assert done.returncode == ExitCode.BAD_LOGDIR
    assert "does not exist" in done.stderr
    empty = tmp_path / "empty"
    write_run(empty, "train", (), {"loss": curve(1.0)})
    done = boardd("hparams", empty, "--db", tmp_path / "e.sqlite")
    assert done.returncode == ExitCode.ERROR
    assert "no hparams" in done.stderr and not done.stdout
    cases = {
        "learning_rate": "COL=REGEX, COL=MIN..MAX or COL==VALUE",
        "learning_rate=abc..1": "MIN..MAX takes numbers",
        "optimizer==": "at least one value",
        "optimizer=([": "no regular expression",
        "learning_rate=0.5..0.1": "MIN 0.5 is above MAX 0.1",
        "nope=1..2": "no hparam or metric column 'nope'",
        "optimizer=1..2": "optimizer",
    }
    for spec, message in cases.items():
        done = boardd("hparams", official, "--db", db, "--filter", spec)
        assert done.returncode == ExitCode.USAGE, (spec, done.stdout, done.stderr)
        assert message in done.stderr, (spec, done.stderr)
        assert "Traceback" not in done.stderr
    done = boardd("hparams", official, "--db", db, "--sort=-missing")
    assert done.returncode == ExitCode.USAGE and "'missing'" in done.stderr
    # Two filters of one column: refused (only the last used to count, silently).
    done = boardd(
        "hparams", official, "--db", db, "--filter", "optimizer=adam", "--filter", "optimizer=sgd"
    )
    assert done.returncode == ExitCode.USAGE and "two --filter" in done.stderr


def test_flags_and_their_errors_in_the_command_lines_words(official: Path, tmp_path: Path) -> None:
    db = tmp_path / "s.sqlite"
    # A descending sort written as two words: argparse would take '-score' for a flag.
    joined = boardd("hparams", official, "--db", db, "--csv", "--sort=-score")
    split = boardd("hparams", official, "--db", db, "--sort", "-score", "--csv")
    assert split.returncode == ExitCode.OK, split.stderr
    assert split.stdout == joined.stdout
    split = boardd("hparams", official, "--db", db, "--sort", "-validation/accuracy,layers")
    assert split.returncode == ExitCode.OK, split.stderr
    # A filter that does not fit its column's values: the flag, the column, what works.
    cases = {
        "learning_rate=^0.1": [
            "--filter 'learning_rate=^0.1': learning_rate holds numbers",
            "--filter 'learning_rate==0.1'",
            "--filter 'learning_rate=0.1..0.1'",
        ],
        "validation/accuracy=high": [
            "validation/accuracy holds numbers",
            "--filter 'validation/accuracy=MIN..MAX'",
        ],
        "batch_norm=tru": ["batch_norm holds true/false", "--filter 'batch_norm==true'"],
        "optimizer=1..2": ["optimizer holds strings", "--filter 'optimizer==adam,sgd'"],
        "nope=x": ["--filter nope=x: no hparam or metric column 'nope'"],
    }
    for spec, messages in cases.items():
        done = boardd("hparams", official, "--db", db, "--filter", spec)
        assert done.returncode == ExitCode.USAGE, (spec, done.stderr)
        for message in messages:
            assert message in done.stderr, (spec, done.stderr)
        for api_word in ("colParams", "filterRegexp", "filterInterval", "Traceback"):
            assert api_word not in done.stderr, (spec, done.stderr)
    done = boardd("hparams", official, "--db", db, "--sort", "-nope")
    assert done.returncode == ExitCode.USAGE
    assert "--sort -nope: no hparam or metric column 'nope'" in done.stderr


def test_a_reader_that_goes_away_gets_no_traceback(official: Path, tmp_path: Path) -> None:
    # `boardd hparams LOGDIR --csv | head -1`: the pipe is closed before the command writes.
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "boardd",
            "hparams",
            str(official),
            "--db",
            str(tmp_path / "s"),
            "--csv",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": SRC},
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    with proc.stderr:
        stderr = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == ExitCode.ERROR
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr, stderr
