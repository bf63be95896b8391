"""Tests for run discovery in a logdir."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
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


def _stat_calls_under(logdir: Path) -> int:
    """How many stat-family system calls a discovery of ``logdir`` makes on paths inside it,
    counted by strace in a child process (the walk the daemon's rescans run)."""
    strace = shutil.which("strace")
    if strace is None:
        if os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no"):
            pytest.fail("strace is missing (.ci/run installs it)")
        pytest.skip("strace is not installed")
    trace = logdir.parent / "stat.trace"
    code = "import sys; from boardd.ingest.sources import LocalFileSource; "
    code += "LocalFileSource(sys.argv[1]).runs()"
    argv = [strace, "-f", "-e", "trace=%stat,%fstat", "-o", str(trace), sys.executable]
    done = subprocess.run(
        [*argv, "-c", code, str(logdir)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0 and "ptrace" in done.stderr:
        pytest.skip(f"strace cannot trace here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    inside = f'"{logdir}/'
    return sum(1 for line in trace.read_text().splitlines() if inside in line)


def test_a_rescan_stats_no_plain_directory(tmp_path: Path) -> None:
    # Issue 12 §3: at 10,000 runs the daemon's safety rescan is its idle cost. A plain run
    # directory costs one scandir and no stat (its kind and name come from the entry); only a
    # symlinked one is stat-ed, to tell a loop.
    logdir = tmp_path / "logdir"
    for i in range(40):
        (logdir / f"run_{i:02d}" / "sub").mkdir(parents=True)
        (logdir / f"run_{i:02d}" / "events.out.tfevents.1.h").write_bytes(b"")
    assert _stat_calls_under(logdir) == 0
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "real").mkdir(parents=True)
    (elsewhere / "real" / "events.out.tfevents.1.h").write_bytes(b"")
    (logdir / "linked").symlink_to(elsewhere / "real", target_is_directory=True)
    # The symlink, and its ancestor (the logdir itself, known from the first stat).
    assert _stat_calls_under(logdir) == 1
