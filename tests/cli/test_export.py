"""``boardd export`` end to end: a LOGDIR names its store as for every other command; --db
takes a store file, and a directory or another file given there is named as such."""

from __future__ import annotations

import os
from pathlib import Path

from boardd.exitcodes import ExitCode
from boardd.store.connection import open_reader
from boardd.store.location import default_store_path
from tests.cli.test_ingest import boardd, write_logdir


def environment(tmp_path: Path) -> dict[str, str]:
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "state")}
    env.pop("STATE_DIRECTORY", None)
    return env


def scalar_points(db: Path) -> int:
    connection = open_reader(db)
    try:
        return int(connection.execute("SELECT count(*) FROM scalar_points").get)
    finally:
        connection.close()


def test_a_logdir_is_exported_from_its_own_store(tmp_path: Path) -> None:
    env = environment(tmp_path)
    logdir = write_logdir(tmp_path / "logs")
    assert boardd("ingest", logdir, env=env).returncode == ExitCode.OK
    copy = tmp_path / "copy.sqlite"
    done = boardd("export", logdir, "--out", copy, env=env)
    assert done.returncode == ExitCode.OK, done.stderr
    assert str(default_store_path(logdir, env)) in done.stdout
    assert scalar_points(copy) == 600
    # --db with the store's own path still works.
    again = boardd("export", "--db", default_store_path(logdir, env), "--out", copy, "--force")
    assert again.returncode == ExitCode.OK, again.stderr


def test_what_is_no_store_is_named(tmp_path: Path) -> None:
    env = environment(tmp_path)
    logdir = write_logdir(tmp_path / "logs")
    out = tmp_path / "copy.sqlite"
    # The logdir given as --db: a directory, and the command that works.
    done = boardd("export", "--db", logdir, "--out", out, env=env)
    assert done.returncode == ExitCode.BAD_STORE
    assert f"--db {logdir}: is a directory" in done.stderr, done.stderr
    assert f"boardd export {logdir} --out FILE" in done.stderr
    assert "disk I/O error" not in done.stderr
    # A file that is no SQLite database, and an empty one.
    for name, content in (("notes.txt", b"not a store\n"), ("empty", b"")):
        (tmp_path / name).write_bytes(content)
        done = boardd("export", "--db", tmp_path / name, "--out", out, env=env)
        assert done.returncode == ExitCode.BAD_STORE
        assert "is not a boardd store (not an SQLite database)" in done.stderr, done.stderr
    # A logdir that has no store yet, one that does not exist, and neither LOGDIR nor --db.
    done = boardd("export", logdir, "--out", out, env=env)
    assert done.returncode == ExitCode.BAD_STORE
    assert f"{logdir} has no store yet" in done.stderr and "boardd ingest" in done.stderr
    done = boardd("export", tmp_path / "nope", "--out", out, env=env)
    assert done.returncode == ExitCode.BAD_LOGDIR and "does not exist" in done.stderr
    done = boardd("export", "--out", out, env=env)
    assert done.returncode == ExitCode.USAGE and "boardd export LOGDIR" in done.stderr
    assert not out.exists()
