"""``boardd ingest`` killed with SIGKILL at random moments: no point lost, none duplicated."""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from boardd.cli import ExitCode
from boardd.store import fingerprint
from boardd.store.connection import open_reader
from boardd.store.errors import StoreOpenError
from boardd.store.lease import current_holder
from tests.conftest import ingest
from tests.store.conftest import (
    assert_same_store,
    boardd_command,
    boardd_env,
    snapshot,
    start_boardd,
)

SAMPLING = {"scalars": 2000}
SPEC = "scalars=2000"
#: Small commits (hidden flag): a kill lands between many commits, in the middle of files.
COMMIT_BYTES = "262144"
#: Far below the lease's 30 s expiry: a run that waited for it could not finish in time.
NO_WAIT = 20.0


@pytest.fixture(scope="module")
def reference(big_logdir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The store built from the big logdir in one clean pass."""
    db = tmp_path_factory.mktemp("reference") / "reference.db"
    ingest(big_logdir, db, sampling=SAMPLING)
    return db


def progress(db: Path) -> dict[str, int] | None:
    """path -> consumed bytes, as committed; None before the store exists."""
    try:
        connection = open_reader(db)
    except StoreOpenError:
        return None
    try:
        return {str(p): int(c) for p, c in connection.execute("SELECT path, consumed FROM files")}
    finally:
        connection.close()


def wait_for_progress(
    db: Path, since: dict[str, int] | None, process: subprocess.Popen[bytes]
) -> None:
    """Returns once a commit moved some file past ``since`` (or the process ended)."""
    while process.poll() is None:
        now = progress(db)
        if now and any(c > (since or {}).get(p, 0) for p, c in now.items()):
            return
        time.sleep(0.005)


def check_consistent(db: Path) -> None:
    """The store after a kill: intact, nothing over capacity, offsets no further than files."""
    connection = open_reader(db)
    try:
        assert connection.execute("PRAGMA quick_check").get == "ok"
        over = connection.execute(
            "SELECT count(*) FROM (SELECT series_id FROM scalar_points GROUP BY series_id "
            "HAVING count(*) > 2000)"
        ).get
        assert over == 0
        for path, consumed in connection.execute("SELECT path, consumed FROM files"):
            assert consumed <= Path(path).stat().st_size
    finally:
        connection.close()


#: Decoding in this process only, or with a forked worker (the hidden flag makes the test
#: logdir count as a large catch-up).
MODES = {
    "one process": ("--workers", "1"),
    "parallel": ("--workers", "2", "--parallel-min-bytes", "0"),
}
#: How long after a commit a kill may come: parallel ingest commits about twice as fast.
KILL_WITHIN = {"one process": 0.2, "parallel": 0.1}


def no_process_left(db: Path, timeout: float = 10.0) -> bool:
    """Whether every process whose command line names ``db`` (a killed ingest's workers
    included: a forked worker runs its parent's command line) is gone, within ``timeout``."""
    deadline = time.monotonic() + timeout
    needle = str(db).encode()
    while True:
        alive = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                cmdline = (entry / "cmdline").read_bytes()
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if needle in cmdline and state != "Z":
                alive.append(entry.name)
        if not alive:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


@pytest.mark.slow
@pytest.mark.parametrize("mode", list(MODES))
def test_sigkill_at_random_moments_then_resume(
    big_logdir: Path, reference: Path, tmp_path: Path, mode: str
) -> None:
    db = tmp_path / "killed.db"
    rng = random.Random(20240611)
    interrupted = 0
    #: Kills that left the store short of the whole logdir (work really was cut).
    cut_short = 0
    last: dict[str, int] | None = None
    for attempt in range(8):
        started = time.monotonic()
        process = start_boardd(
            "ingest", big_logdir, "--db", db, "--samples-per-plugin", SPEC,
            "--commit-bytes", COMMIT_BYTES, *MODES[mode],
        )  # fmt: skip
        if attempt == 0:
            # Anywhere from start-up (imports, migration, lease) to the first commits.
            time.sleep(rng.uniform(0.05, 0.6))
        else:
            wait_for_progress(db, last, process)
            time.sleep(rng.uniform(0.0, KILL_WITHIN[mode]))
        process.send_signal(signal.SIGKILL)
        _, err = process.communicate()
        # Killed, or already done; never turned away by the dead predecessor's lease.
        assert process.returncode in (-signal.SIGKILL, ExitCode.OK), err.decode()
        assert time.monotonic() - started < NO_WAIT
        now = progress(db)
        if process.returncode == -signal.SIGKILL:
            interrupted += 1
            if now is not None:
                check_consistent(db)
                connection = open_reader(db)
                try:
                    holder = current_holder(connection)
                finally:
                    connection.close()
                # The dead process's lease stays behind (the next run takes it over at once),
                # unless the kill came after its last commit, as it was releasing the lease.
                finished = now == progress(reference)
                cut_short += not finished
                if attempt > 0 and not finished:
                    assert holder is not None and holder.pid == process.pid
                else:
                    assert holder is None or holder.pid == process.pid
        # Workers do not outlive the process that started them.
        assert no_process_left(db)
        # Committed offsets never go back.
        for path, consumed in (last or {}).items():
            assert (now or {}).get(path, 0) >= consumed
        last = now
    assert interrupted >= 5
    # On a fast machine the last attempts may finish the logdir; some kill must have cut work.
    assert cut_short >= 1, "the kills all came too late to interrupt anything"

    resume_equals_reference(big_logdir, db, reference)


def resume_equals_reference(logdir: Path, db: Path, reference: Path) -> None:
    """A final ``boardd ingest`` completes at once and gives the clean single pass's store."""
    started = time.monotonic()
    final = subprocess.run(
        boardd_command("ingest", logdir, "--db", db, "--samples-per-plugin", SPEC),
        capture_output=True,
        env=boardd_env(),
        timeout=120,
    )
    assert final.returncode == ExitCode.OK, final.stderr.decode()
    assert time.monotonic() - started < NO_WAIT
    assert_same_store(db, reference)


@pytest.mark.slow
def test_ctrl_c_during_parallel_ingest(big_logdir: Path, reference: Path, tmp_path: Path) -> None:
    # Ctrl-C reaches the whole process group: the workers ignore it, the ingest stops taking
    # work, says what happened, exits 130 and leaves no worker behind; a rerun completes.
    db = tmp_path / "interrupted.db"
    process = start_boardd(
        "ingest", big_logdir, "--db", db, "--samples-per-plugin", SPEC,
        "--commit-bytes", COMMIT_BYTES, *MODES["parallel"], start_new_session=True,
    )  # fmt: skip
    wait_for_progress(db, None, process)
    os.killpg(process.pid, signal.SIGINT)
    _, err = process.communicate(timeout=60)
    assert process.returncode == ExitCode.INTERRUPTED, err.decode()
    assert "interrupted; what was committed is kept" in err.decode()
    assert no_process_left(db)
    check_consistent(db)
    assert progress(db) != progress(reference), "the interrupt came too late"
    resume_equals_reference(big_logdir, db, reference)


@pytest.mark.slow
def test_sigkill_during_rebuild_keeps_the_old_store(
    big_logdir: Path, reference: Path, tmp_path: Path
) -> None:
    db = tmp_path / "store.db"
    shutil.copyfile(reference, db)
    before = snapshot(db)
    rebuild = db.with_name(db.name + ".rebuild")
    process = start_boardd(
        "ingest", big_logdir, "--db", db, "--samples-per-plugin", "scalars=100",
        "--rebuild", "--commit-bytes", COMMIT_BYTES,
    )  # fmt: skip
    wait_for_progress(rebuild, None, process)
    time.sleep(0.1)
    process.send_signal(signal.SIGKILL)
    process.communicate()
    assert process.returncode == -signal.SIGKILL
    assert rebuild.exists()
    # The old store is untouched (its lease row names the dead rebuild).
    after = snapshot(db)
    assert after == before
    # A plain run keeps the store as it is (it holds more than the smaller sample asked, and
    # the dead rebuild does not stop it); a rebuild takes over at once and completes.
    command = boardd_command(
        "ingest", big_logdir, "--db", db, "--samples-per-plugin", "scalars=100"
    )
    plain = subprocess.run(command, capture_output=True, env=boardd_env(), timeout=120)
    assert plain.returncode == ExitCode.OK, plain.stderr.decode()
    kept = open_reader(db)
    try:
        assert (fingerprint.stored(kept) or {})["sampling"] == SPEC
    finally:
        kept.close()
    started = time.monotonic()
    done = subprocess.run(
        [*command, "--rebuild"], capture_output=True, env=boardd_env(), timeout=120
    )
    assert done.returncode == ExitCode.OK, done.stderr.decode()
    assert time.monotonic() - started < NO_WAIT
    assert not rebuild.exists()
    assert not list(tmp_path.glob("*.rebuild*"))
    connection = open_reader(db)
    try:
        most = connection.execute(
            "SELECT max(n) FROM (SELECT count(*) AS n FROM scalar_points GROUP BY series_id)"
        ).get
    finally:
        connection.close()
    assert most == 100
