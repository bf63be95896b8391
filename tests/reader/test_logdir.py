"""Tests for run discovery in a logdir."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from tensorboardX import SummaryWriter

from boardd.reader.logdir import ROOT_RUN, discover, run_name


def _write(logdir: Path, run: str, steps: int = 2) -> None:
    with SummaryWriter(str(logdir / run) if run != ROOT_RUN else str(logdir)) as w:
        for step in range(steps):
            w.add_scalar("loss", float(step), step)


def test_runs_are_relative_directories_with_root_as_dot(tmp_path: Path) -> None:
    _write(tmp_path, ROOT_RUN)
    _write(tmp_path, "a")
    _write(tmp_path, "b/nested/deep")
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "readme.txt").write_text("not an event file")
    found = discover(tmp_path)
    assert list(found.runs) == [".", "a", "b/nested/deep"]
    assert found.problems == []
    for files in found.runs.values():
        assert all("tfevents" in f.name for f in files)


def test_files_of_a_run_in_name_order(tmp_path: Path) -> None:
    run = tmp_path / "r"
    run.mkdir()
    for name in ["events.out.tfevents.3.h", "events.out.tfevents.1.h", "events.out.tfevents.2.h"]:
        (run / name).write_bytes(b"")
    found = discover(tmp_path)
    assert [f.name for f in found.runs["r"]] == [
        "events.out.tfevents.1.h",
        "events.out.tfevents.2.h",
        "events.out.tfevents.3.h",
    ]


def test_symlinked_run_is_followed_and_a_loop_is_reported(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    _write(elsewhere, "real")
    logdir = tmp_path / "logdir"
    logdir.mkdir()
    (logdir / "linked").symlink_to(elsewhere / "real", target_is_directory=True)
    (logdir / "sub").mkdir()
    (logdir / "sub" / "back").symlink_to(logdir, target_is_directory=True)
    found = discover(logdir)
    assert list(found.runs) == ["linked"]
    assert any("loop" in p.reason for p in found.problems)


def test_unreadable_directory_is_reported_not_fatal() -> None:
    # Root reads directories whatever their mode, and CI runs as root: the walk then runs in a
    # forked child that has dropped to the unprivileged "nobody" user.
    with tempfile.TemporaryDirectory() as tmp:
        logdir = Path(tmp)
        logdir.chmod(0o755)
        _write(logdir, "ok")
        _write(logdir, "locked")
        for path in logdir.rglob("*"):
            path.chmod(0o755 if path.is_dir() else 0o644)
        (logdir / "locked").chmod(0)
        runs, problems = _discover_unprivileged(logdir)
    assert runs == ["ok"]
    assert problems == [str(logdir / "locked")]


def _discover_unprivileged(logdir: Path) -> tuple[list[str], list[str]]:
    if os.geteuid() != 0:
        found = discover(logdir)
        return list(found.runs), [p.path for p in found.problems]
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        try:
            os.close(read_end)
            os.setgid(65534)
            os.setuid(65534)
            found = discover(logdir)
            payload = json.dumps([list(found.runs), [p.path for p in found.problems]])
            os.write(write_end, payload.encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    runs, problems = json.loads(data)
    return runs, problems


def test_missing_logdir_is_a_problem(tmp_path: Path) -> None:
    found = discover(tmp_path / "nope")
    assert found.runs == {}
    assert len(found.problems) == 1


def test_run_name_of_root_and_child(tmp_path: Path) -> None:
    assert run_name(tmp_path, tmp_path) == "."
    assert run_name(tmp_path, tmp_path / "x" / "y") == "x/y"
