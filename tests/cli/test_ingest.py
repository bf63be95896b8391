"""``boardd ingest`` and ``boardd export`` end to end: exit codes, messages, JSON, store files."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from tensorboard.compat.proto import event_pb2
from tensorboard.summary.writer.record_writer import RecordWriter
from tensorboardX import SummaryWriter

from boardd.cli import ExitCode, main
from boardd.store import fingerprint
from boardd.store.connection import immediate, open_reader, open_writer
from boardd.store.errors import StoreOpenError
from boardd.store.lease import current_holder
from boardd.store.location import default_store_path
from tests.conftest import COUNT_SCALARS, scalar_rows

SRC = str(Path(__file__).resolve().parents[2] / "src")
WALL = 1_700_000_000.0
JSON_KEYS = {"db", "runs", "series", "points", "blobs", "bytes_read", "data_loss", "seconds"}


def boardd(
    *args: str | Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Runs ``python -m boardd ARGS`` to completion, in a clean environment if given."""
    environment = dict(os.environ if env is None else env)
    environment["PYTHONPATH"] = SRC
    return subprocess.run(
        [sys.executable, "-m", "boardd", *(str(a) for a in args)],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
    )


def write_logdir(root: Path) -> Path:
    """Two runs with scalars (300 steps), histograms and images."""
    rng = np.random.default_rng(0)
    for run in ("train", "eval/nested"):
        with SummaryWriter(str(root / run)) as w:
            for step in range(300):
                w.add_scalar("loss", float(rng.normal()), step, walltime=WALL + step)
                if step % 30 == 0:
                    w.add_histogram("weights", rng.normal(size=40), step, walltime=WALL + step)
                    image = rng.integers(0, 256, (3, 4, 4), dtype=np.uint8)
                    w.add_image("sample", image, step, walltime=WALL + step)
    return root


@pytest.fixture
def logdir(tmp_path: Path) -> Path:
    return write_logdir(tmp_path / "logs")


def ingest_json(capsys: pytest.CaptureFixture[str], *args: str | Path) -> dict[str, object]:
    """Runs ``boardd ingest --json ARGS`` in this process and returns its report."""
    assert main(["ingest", "--json", *(str(a) for a in args)]) == ExitCode.OK
    return json.loads(capsys.readouterr().out)


def counts_per_series(db: Path) -> list[int]:
    """The number of scalar points of each scalar series."""
    connection = open_reader(db)
    try:
        return [
            int(n)
            for (n,) in connection.execute(
                "SELECT count(p.step) FROM series s LEFT JOIN scalar_points p "
                "ON p.series_id = s.id WHERE s.data_class = 1 GROUP BY s.id"
            )
        ]
    finally:
        connection.close()


def test_json_report_has_exactly_the_documented_keys(
    logdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "store.db"
    report = ingest_json(capsys, logdir, "--db", db)
    assert set(report) == JSON_KEYS
    assert report["points"] == {"scalar": 600, "tensor": 20, "blob_sequence": 20}
    assert report["db"] == str(db)
    assert (report["runs"], report["series"], report["blobs"], report["data_loss"]) == (
        2,
        6,
        60,
        0,
    )
    sizes = sum(p.stat().st_size for p in logdir.rglob("*tfevents*"))
    assert report["bytes_read"] == sizes
    assert isinstance(report["seconds"], float)
    # A second run reads nothing and reports the same store.
    again = ingest_json(capsys, logdir, "--db", db)
    assert again["bytes_read"] == 0
    assert again["points"] == report["points"]


def test_plain_output_names_the_store(logdir: Path, tmp_path: Path) -> None:
    done = boardd("ingest", logdir, "--db", tmp_path / "store.db")
    assert done.returncode == ExitCode.OK, done.stderr
    assert str(tmp_path / "store.db") in done.stdout
    assert "600 scalar" in done.stdout
    assert done.stderr == ""  # no progress line when stderr is not a terminal


def test_bad_logdir_and_bad_spec(
    logdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "store.db"
    assert main(["ingest", str(tmp_path / "missing"), "--db", str(db)]) == ExitCode.BAD_LOGDIR
    assert capsys.readouterr().err == f"boardd ingest: {tmp_path / 'missing'}: does not exist\n"
    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert main(["ingest", str(a_file), "--db", str(db)]) == ExitCode.BAD_LOGDIR
    assert capsys.readouterr().err == f"boardd ingest: {a_file}: not a directory\n"
    for spec in ("scalars=lots", "scalars", "=5", "scalars=1,scalars=2"):
        code = main(["ingest", str(logdir), "--db", str(db), "--samples-per-plugin", spec])
        assert code == ExitCode.USAGE
        err = capsys.readouterr().err
        # The flag as the user typed it, named once (it was "--samples-per-plugin:
        # --samples_per_plugin: ..."): one prefix, then what to fix.
        assert err.startswith("boardd ingest: --samples-per-plugin: '"), err
        assert err.count("--samples") == 1, err
    assert not db.exists()  # refused before anything was created
    # Not a store at all.
    a_file.write_bytes(b"SQLite format 3\x00" + bytes(100))
    assert main(["ingest", str(logdir), "--db", str(a_file)]) == ExitCode.BAD_STORE
    assert "cannot open store" in capsys.readouterr().err


def test_changed_sampling_needs_rebuild(
    logdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "store.db"
    ingest_json(capsys, logdir, "--db", db, "--samples-per-plugin", "scalars=300")
    assert max(counts_per_series(db)) == 300
    # Fewer points than the store keeps: the store is used as it is.
    ingest_json(capsys, logdir, "--db", db, "--samples-per-plugin", "scalars=10")
    assert max(counts_per_series(db)) == 300
    # More: refused, naming the command that rebuilds it.
    code = main(["ingest", str(logdir), "--db", str(db), "--samples-per-plugin", "scalars=500"])
    assert code == ExitCode.FINGERPRINT_MISMATCH
    message = capsys.readouterr().err
    assert "keeps fewer points than asked (scalars=300, asked scalars=500)" in message
    assert "--rebuild --samples-per-plugin scalars=500" in message
    # Every scalar, the default: the command needs no flag.
    assert main(["ingest", str(logdir), "--db", str(db)]) == ExitCode.FINGERPRINT_MISMATCH
    message = capsys.readouterr().err
    assert "(scalars=300, asked defaults)" in message
    assert f"`boardd ingest {logdir} --rebuild --db {db}`" in message
    assert max(counts_per_series(db)) == 300  # untouched
    connection = open_reader(db)
    try:
        assert current_holder(connection) is None  # the refused run gave its lease back
    finally:
        connection.close()

    # A reader opened on the old store before the rebuild.
    old = open_reader(db)
    try:
        assert old.execute("SELECT count(*) FROM scalar_points").get == 600
        report = ingest_json(
            capsys, logdir, "--db", db, "--samples-per-plugin", "scalars=10", "--rebuild"
        )
        assert report["db"] == str(db)
        assert report["points"] == {"scalar": 20, "tensor": 20, "blob_sequence": 20}
        assert sorted(p.name for p in tmp_path.iterdir() if "rebuild" in p.name) == []
        assert counts_per_series(db) == [10, 10]
        connection = open_reader(db)
        try:
            assert fingerprint.stored(connection)["sampling"] == "scalars=10"
        finally:
            connection.close()
        # What we observe: the old reader keeps reading the old file (its inode) until it is
        # closed, even while a writer writes the new one and leaves frames in the new WAL.
        assert old.execute("SELECT count(*) FROM scalar_points").get == 600
        writer = open_writer(db)
        try:
            with immediate(writer):
                writer.execute("DELETE FROM scalar_points WHERE step % 2 = 0")
            assert old.execute("SELECT count(*) FROM scalar_points").get == 600
            assert old.execute("PRAGMA quick_check").get == "ok"
        finally:
            writer.close()
    finally:
        old.close()
    # Same settings again: accepted, nothing to read.
    again = ingest_json(capsys, logdir, "--db", db, "--samples-per-plugin", "scalars=10")
    assert again["bytes_read"] == 0


def test_changed_logdir_is_named(
    logdir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "store.db"
    ingest_json(capsys, logdir, "--db", db)
    other = tmp_path / "other"
    shutil.copytree(logdir, other)
    assert main(["ingest", str(other), "--db", str(db)]) == ExitCode.FINGERPRINT_MISMATCH
    assert "logdir: store has" in capsys.readouterr().err
    # The default sampling spelled out is no change.
    spec = "scalars=10000,images=10"
    assert ingest_json(capsys, logdir, "--db", db, "--samples-per-plugin", spec)["bytes_read"] == 0


def test_default_store_location_follows_the_environment(logdir: Path, tmp_path: Path) -> None:
    base = {k: v for k, v in os.environ.items() if k not in ("XDG_STATE_HOME", "STATE_DIRECTORY")}
    cases = [
        ({"HOME": str(tmp_path / "home")}, tmp_path / "home" / ".local" / "state" / "boardd"),
        ({"XDG_STATE_HOME": str(tmp_path / "xdg")}, tmp_path / "xdg" / "boardd"),
        (
            {
                "XDG_STATE_HOME": str(tmp_path / "xdg"),
                "STATE_DIRECTORY": f"{tmp_path / 'systemd'}:{tmp_path / 'second'}",
            },
            tmp_path / "systemd",
        ),
    ]
    for extra, directory in cases:
        env = {**base, **extra}
        done = boardd("ingest", logdir, "--json", env=env)
        assert done.returncode == ExitCode.OK, done.stderr
        report = json.loads(done.stdout)
        expected = directory / default_store_path(logdir).name
        assert report["db"] == str(expected)
        assert expected.is_file()
        assert expected.name.startswith("logs-") and expected.suffix == ".sqlite"
    assert not (tmp_path / "second").exists()


# -- export while ingest runs ---------------------------------------------------------------


@pytest.fixture(scope="module")
def busy_logdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """8 runs x 8 scalar tags x 8,000 steps (copies of one file): ingest takes a while."""
    root = tmp_path_factory.mktemp("busy")
    template = root / "events.out.tfevents.1700000000.host"
    with open(template, "wb") as f:
        # TensorBoard's own record writer: much faster than SummaryWriter for 64k events.
        records = RecordWriter(f)
        values = np.random.default_rng(1).normal(size=(8000, 8)).tolist()
        for step in range(8000):
            for tag in range(8):
                event = event_pb2.Event(step=step, wall_time=WALL + step)
                event.summary.value.add(tag=f"tag{tag}", simple_value=values[step][tag])
                records.write(event.SerializeToString())
    logdir = root / "logs"
    for run in range(8):
        (logdir / f"run{run}").mkdir(parents=True)
        shutil.copyfile(template, logdir / f"run{run}" / template.name)
    return logdir


def consumed(db: Path) -> int:
    """Bytes committed so far over all files (0 before the store exists)."""
    try:
        connection = open_reader(db)
    except StoreOpenError:
        return 0
    try:
        return int(connection.execute("SELECT coalesce(sum(consumed), 0) FROM files").get or 0)
    finally:
        connection.close()


@pytest.mark.slow
def test_export_while_ingest_runs(busy_logdir: Path, tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    env = dict(os.environ, PYTHONPATH=SRC)
    ingest = subprocess.Popen(
        [sys.executable, "-m", "boardd", "ingest", str(busy_logdir), "--db", str(db),
         "--samples-per-plugin", "scalars=all", "--commit-bytes", "131072"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while consumed(db) == 0 and ingest.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert ingest.poll() is None, "ingest ended before the export could start"
        copy = tmp_path / "copy.db"
        exported = boardd("export", "--db", db, "--out", copy)
        still_running = ingest.poll() is None
    finally:
        _, err = ingest.communicate(timeout=120)
    assert ingest.returncode == ExitCode.OK, err.decode()
    assert exported.returncode == ExitCode.OK, exported.stderr
    assert still_running, "ingest ended before the export did: nothing concurrent was tested"
    # No partial copy left beside it; the copy is a single file.
    assert {p.name for p in tmp_path.iterdir()} <= {
        "copy.db",
        "store.db",
        "store.db-wal",
        "store.db-shm",
    }
    connection = open_reader(copy)
    try:
        assert connection.execute("PRAGMA integrity_check").get == "ok"
        assert current_holder(connection) is None
        done_then = int(connection.execute("SELECT sum(consumed) FROM files").get)
        points_then = int(connection.execute(COUNT_SCALARS).get)
    finally:
        connection.close()
    total = sum(p.stat().st_size for p in busy_logdir.rglob("*tfevents*"))
    assert 0 < done_then < total
    assert points_then > 0
    # The copy is one commit's state: ingest resumes from it to the very same store.
    finished = boardd("ingest", busy_logdir, "--db", copy, "--samples-per-plugin", "scalars=all")
    assert finished.returncode == ExitCode.OK, finished.stderr
    assert _dump(copy) == _dump(db)


def _dump(db: Path) -> list[tuple[object, ...]]:
    connection = open_reader(db)
    try:
        dumped = []
        for sid, *row in connection.execute(
            "SELECT s.id, r.name, s.tag, s.seen, s.last_step, f.consumed FROM series s "
            "JOIN runs r ON r.id = s.run_id JOIN files f ON f.run_id = r.id "
            "ORDER BY r.name, s.tag"
        ).fetchall():
            points = scalar_rows(connection, sid)  # every point, wherever the store keeps it
            values = [v for _, _, v in points if v is not None]
            dumped.append((*row, len(points), sum(values) if values else None))
        return dumped
    finally:
        connection.close()


def test_a_logdir_named_relatively_then_absolutely_is_the_same_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    logdir = tmp_path / "logs"
    with SummaryWriter(str(logdir / "run")) as w:
        for step in range(20):
            w.add_scalar("loss", step * 0.5, step)
    db = tmp_path / "store.db"
    monkeypatch.chdir(tmp_path)
    assert main(["ingest", "logs", "--db", str(db), "--json"]) == ExitCode.OK
    first = json.loads(capsys.readouterr().out)
    assert main(["ingest", str(logdir), "--db", str(db), "--json"]) == ExitCode.OK
    second = json.loads(capsys.readouterr().out)
    assert first["bytes_read"] > 0 and second["bytes_read"] == 0, second
    connection = open_reader(db)
    try:
        paths = [p for (p,) in connection.execute("SELECT path FROM files")]
    finally:
        connection.close()
    assert paths and all(os.path.isabs(p) for p in paths), paths
