"""Issue 12 §1: one bad entry never stops an experiment (real daemons, real files, real limits).

Unreadable directories: the tests run as root here, and root reads a ``chmod 000`` directory
anyway (CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH). So when the test runs as root, the daemon
subprocess is started through ``setpriv`` with those two capabilities dropped from its bounding
set: it is still uid 0 (it owns its store and state directory), but file permissions apply to
it as to any user. Run as an ordinary user, the daemon is started as it is.

A full disk: SQLite's own page limit (``PRAGMA max_page_count`` on the writer's connection)
makes the store's pager return a real SQLITE_FULL; a tiny mounted file system would need mount
rights that CI does not give.
"""

from __future__ import annotations

import math
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import apsw
import pytest

from boardd.config import ExperimentSpec, ServeSettings
from boardd.daemon.runner import ExperimentRunner
from boardd.daemon.runner_status import describe
from boardd.store.connection import open_reader
from tests.conftest import EventRun, scalar_rows
from tests.daemon.conftest import ServeFactory, wait_until
from tests.daemon.test_serve import write_closed

DROP = "-dac_override,-dac_read_search"


def _unprivileged(tmp_path: Path) -> list[str]:
    """The command prefix under which ``chmod 000`` applies to the daemon (see above)."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: cannot make a directory unreadable")
    prefix = [setpriv, "--bounding-set", DROP, "--inh-caps", DROP]
    probe = tmp_path / "probe"
    probe.mkdir()
    probe.chmod(0)
    try:
        done = subprocess.run(
            [*prefix, sys.executable, "-c", f"import os; os.listdir({str(probe)!r})"],
            capture_output=True,
            check=False,
        )
    finally:
        probe.chmod(0o755)
    if b"PermissionError" not in done.stderr:
        pytest.skip(f"setpriv cannot drop CAP_DAC_OVERRIDE here: {done.stderr!r}")
    return prefix


def _write(
    directory: Path, start: int, stop: int, suffix: str = "", *, noisy: bool = False
) -> None:
    """Points of ``loss`` at these steps: ``s / 10``, or values that compress poorly."""
    run = EventRun(directory, suffix)
    run.scalars("loss", {s: math.sin(s * 1.7) if noisy else s / 10 for s in range(start, stop)})
    run.close()


def test_unreadable_runs_are_skipped_reported_once_and_recover(
    serve: ServeFactory, tmp_path: Path
) -> None:
    """Before: ``PermissionError`` from ``run_present`` (Path.is_dir) ended the ingest thread
    for good (state ``failed``): new runs were never read again, not even after SIGHUP."""
    prefix = _unprivileged(tmp_path)
    logdir = tmp_path / "logs"
    _write(logdir / "a", 0, 10)
    _write(logdir / "b" / "c", 0, 10)
    daemon = serve(logdir, "--rescan-interval", "0.5", prefix=prefix)
    daemon.wait_for_steps("a", "loss", range(10))
    daemon.wait_for_steps("b/c", "loss", range(10))

    (logdir / "a").chmod(0)  # the run's own directory
    (logdir / "b").chmod(0)  # a directory above a run
    try:
        _write(logdir / "d", 0, 5)  # the rest of the experiment carries on
        daemon.wait_for_steps("d", "loss", range(5))
        entry = wait_until(
            lambda: len((s := daemon.status())["unreadable"]) >= 2 and s,
            what="the unreadable runs in health",
            alive=daemon.check_alive,
        )
        assert entry["state"] == "live"
        assert daemon.health()["status"] == "ok"
        assert [(u["path"], u["reason"]) for u in entry["unreadable"]] == [
            (str(logdir / "a"), "Permission denied"),
            (str(logdir / "b"), "Permission denied"),
        ]
        # Unreadable is not deleted: the runs and their points stay.
        assert daemon.runs() == ["a", "b/c", "d"]
        assert len(daemon.scalars("a", "loss")) == 10
        # Several passes later, each is still logged once. A pass is asked for (SIGHUP: its
        # handler logs, then tells the runner), then a run written: the ingest loop takes the
        # rescan with the changes heard with it, so once the run is served a full pass has
        # met the unreadable directories again.
        for asked, run in enumerate("efg", start=1):
            daemon.send(signal.SIGHUP)
            wait_until(
                lambda n=asked: daemon.stderr().count("received SIGHUP: rescanning") == n,
                what="the rescan asked for",
                alive=daemon.check_alive,
            )
            _write(logdir / run, 0, 3)
            daemon.wait_for_steps(run, "loss", range(3))
        log = daemon.stderr()
        assert log.count(f"cannot read {logdir / 'a'} (Permission denied)") == 1, log
        assert log.count(f"cannot read {logdir / 'b'} (Permission denied)") == 1, log
        assert log.count("cannot read") == 2, log  # nothing below them is told again
    finally:
        (logdir / "a").chmod(0o755)
        (logdir / "b").chmod(0o755)
    # Permissions back: read on by itself at the next rescan, no SIGHUP, nothing doubled.
    _write(logdir / "a", 10, 20, suffix=".2")
    _write(logdir / "b" / "c", 10, 15, suffix=".2")
    daemon.wait_for_steps("a", "loss", range(20))
    daemon.wait_for_steps("b/c", "loss", range(15))
    wait_until(lambda: daemon.status()["unreadable"] == [], what="nothing unreadable")
    assert "is readable again" in daemon.stderr()
    assert daemon.status()["data_loss"] == 0


def _page_limit(connection: apsw.Connection, pages: int) -> None:
    """Sets the writer connection's page limit from this thread, between its uses by the
    runner's thread (APSW refuses concurrent use of one connection: try again)."""
    deadline = time.monotonic() + 10
    while True:
        try:
            connection.pragma("max_page_count", pages)
            return
        except apsw.ThreadingViolation:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _steps(db: Path) -> list[int]:
    connection = open_reader(db)
    try:
        return sorted(
            step
            for (series_id,) in connection.execute("SELECT id FROM series WHERE data_class = 1")
            for step, _, _ in scalar_rows(connection, series_id)
        )
    finally:
        connection.close()


def test_a_full_store_is_retried_with_back_off_and_resumes_once_space_is_freed(
    tmp_path: Path,
) -> None:
    """Before: the ROLLBACK after SQLITE_FULL raised "cannot rollback - no transaction is
    active", which hid FullError and ended the ingest thread for good (state ``failed``)."""
    logdir = tmp_path / "logs"
    _write(logdir / "train", 0, 10)
    spec = ExperimentSpec("full", logdir, tmp_path / "s.sqlite")
    # A long rescan interval: the test thread touches the writer's connection while idle.
    settings = ServeSettings(experiments=(spec,), rescan_interval=60, sampling={"*": None})
    runner = ExperimentRunner(spec, settings)
    runner.start()
    try:
        assert runner.opened.wait(10)
        wait_until(lambda: runner.status().state == "live", what="live")
        wait_until(lambda: _steps(spec.db) == list(range(10)), what="the first points")
        session = runner._session
        assert session is not None
        connection = session.writer._db
        pages = int(connection.pragma("page_count"))
        _page_limit(connection, pages)  # not one page more: the disk is "full"

        # ~20,000 points need new pages (values that compress poorly: stored in blocks).
        _write(logdir / "train", 10, 20_010, suffix=".2", noisy=True)
        status = wait_until(
            lambda: (s := runner.status()).state == "retrying" and s.retries >= 2 and s,
            what="retrying",
        )
        assert status.error is not None
        assert status.error.startswith("FullError: database or disk is full"), status.error
        assert status.retry_in_seconds is not None
        assert "retrying" in describe(status)
        # What fitted is committed (with its offsets), the rest waits: a prefix, no gap.
        so_far = _steps(spec.db)
        assert so_far == list(range(len(so_far))) and len(so_far) < 20_010

        _page_limit(connection, 2**30)  # space freed: no SIGHUP, it resumes by itself
        wait_until(lambda: _steps(spec.db) == list(range(20_010)), timeout=30, what="every point")
        status = wait_until(lambda: (s := runner.status()).state == "live" and s, what="live")
        assert status.error is None and status.retries == 0
        reader = open_reader(spec.db)
        try:
            assert reader.execute("SELECT count(*) FROM data_loss").get == 0
            files = reader.execute("SELECT consumed, size FROM files").fetchall()
            assert all(consumed == size for consumed, size in files), files
        finally:
            reader.close()
    finally:
        runner.stop()
    assert runner.status().state == "stopped"


def test_a_store_that_cannot_be_opened_yet_is_retried(serve: ServeFactory, tmp_path: Path) -> None:
    """The store cannot even be created (a file stands where its directory must be: an
    OSError, as a full disk or an I/O error would give): the daemon serves, says why in
    health, retries with back-off, and once the way is clear opens the store and ingests, by
    itself."""
    logdir = tmp_path / "logs"
    write_closed(logdir / "run", "loss", range(5))
    blocker = tmp_path / "state"
    blocker.write_text("not a directory")
    daemon = serve(logdir, "--db", blocker / "store.sqlite")
    status = wait_until(
        lambda: (s := daemon.status())["state"] == "retrying" and s,
        what="the runner retrying the store's open",
        alive=daemon.check_alive,
    )
    assert "cannot open store" in status["error"], status
    assert status["retry_in_seconds"] is not None
    blocker.unlink()
    wait_until(
        lambda: daemon.status()["state"] == "live",
        timeout=30,
        what="the store opened once the way was clear",
        alive=daemon.check_alive,
    )
    daemon.wait_for_steps("run", "loss", range(5))
    # Said once (not at every try), and once more when it opened.
    assert daemon.stderr().count("ingest paused") == 1, daemon.stderr()
    assert "the store opened after" in daemon.stderr()


def test_inspect_reports_an_unreadable_event_file_and_reads_the_rest(tmp_path: Path) -> None:
    """``boardd inspect`` (a subprocess, unprivileged as above): an event file it may not read
    is one line of its report in a logdir, and exit 3 with a message given alone. Before: a
    RecordFileError traceback, exit 1."""
    prefix = _unprivileged(tmp_path)
    logdir = tmp_path / "logs"
    _write(logdir / "ok", 0, 5)
    _write(logdir / "locked", 0, 5)
    (locked,) = (logdir / "locked").iterdir()
    locked.chmod(0)
    boardd = [*prefix, sys.executable, "-m", "boardd", "inspect"]
    try:
        whole = subprocess.run([*boardd, str(logdir)], capture_output=True, text=True, check=False)
        alone = subprocess.run([*boardd, str(locked)], capture_output=True, text=True, check=False)
    finally:
        locked.chmod(0o644)
    assert whole.returncode == 0, whole.stderr
    assert "Traceback" not in whole.stderr
    assert "unreadable: cannot read event file" in whole.stdout, whole.stdout
    assert "Permission denied" in whole.stdout
    assert "loss" in whole.stdout and "0..4" in whole.stdout
    assert alone.returncode == 3, alone.stderr
    assert "not readable by this user" in alone.stderr and "Traceback" not in alone.stderr
