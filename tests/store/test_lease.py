"""The writer lease between real processes: one writer at a time, takeovers when it is safe."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest

from boardd.cli import ExitCode, main
from boardd.ingest.ingestor import Ingestor
from boardd.store.connection import immediate, open_reader, open_writer
from boardd.store.errors import LeaseHeldError
from boardd.store.lease import Lease, LeaseLostError, current_holder
from boardd.store.session import WriteSession
from tests.conftest import ingest
from tests.store.conftest import (
    LiveWriter,
    boardd_command,
    boardd_env,
    snapshot,
    start_boardd,
    wait_for_lease,
    write_mixed,
)

#: Far below the lease's 30 s expiry: a run that waited for it could not finish in time.
NO_WAIT = 20.0


@pytest.fixture
def small_store(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A logdir with one small run, and its store (ingested once, lease released)."""
    logdir = tmp_path / "logs"
    writer = LiveWriter(logdir / "run")
    write_mixed(writer, range(50))
    writer.close()
    db = tmp_path / "store.db"
    ingest(logdir, db)
    yield logdir, db


def holder_of(db: Path) -> tuple[str, int] | None:
    """(host, pid) of the lease row, if any."""
    connection = open_reader(db)
    try:
        holder = current_holder(connection)
    finally:
        connection.close()
    return None if holder is None else (holder.host, holder.pid)


def write_lease(db: Path, *, host: str, pid: int, heartbeat: float, expiry: float = 30.0) -> None:
    """Writes the lease row by hand, as another writer would have."""
    connection = open_writer(db)
    try:
        with immediate(connection):
            connection.execute(
                "INSERT OR REPLACE INTO lease (id, owner, host, pid, started, heartbeat, "
                "expiry_seconds) VALUES (1, 'someone-else', ?, ?, ?, ?, ?)",
                (host, pid, heartbeat - 1.0, heartbeat, expiry),
            )
    finally:
        connection.close()


def stop_outside_a_transaction(process: subprocess.Popen[bytes], db: Path) -> None:
    """SIGSTOPs the writer at a moment when it holds no write lock (retrying until so)."""
    probe = apsw.Connection(str(db))
    try:
        for _ in range(200):
            process.send_signal(signal.SIGSTOP)
            try:
                probe.execute("BEGIN IMMEDIATE")
            except apsw.BusyError:
                process.send_signal(signal.SIGCONT)
                time.sleep(0.01)
                continue
            probe.execute("ROLLBACK")
            return
        raise AssertionError("the writer never left its write transaction")
    finally:
        probe.close()


@pytest.mark.slow
def test_second_writer_is_refused_while_the_first_runs(big_logdir: Path, tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    first = start_boardd(
        "ingest", big_logdir, "--db", db, "--samples-per-plugin", "scalars=2000",
        "--commit-bytes", "262144",
    )  # fmt: skip
    try:
        wait_for_lease(db, first.pid)
        # Frozen, the first writer is alive with a fresh heartbeat for as long as we need.
        stop_outside_a_transaction(first, db)
        second = subprocess.run(
            boardd_command("ingest", big_logdir, "--db", db),
            capture_output=True,
            env=boardd_env(),
            timeout=60,
        )
        assert second.returncode == ExitCode.STORE_LOCKED
        message = second.stderr.decode()
        assert f"pid {first.pid} on {socket.gethostname()}" in message
        assert "another --db" in message
        assert holder_of(db) == (socket.gethostname(), first.pid)
    finally:
        first.send_signal(signal.SIGCONT)
    _, err = first.communicate(timeout=120)
    assert first.returncode == ExitCode.OK, err.decode()
    # A clean exit gives the lease back.
    assert holder_of(db) is None


def test_writer_stuck_in_a_transaction_is_a_held_store(small_store: tuple[Path, Path]) -> None:
    _, db = small_store
    other = apsw.Connection(str(db))
    other.execute("BEGIN IMMEDIATE")
    try:
        connection = open_writer(db)
        connection.set_busy_timeout(50)
        try:
            with pytest.raises(LeaseHeldError, match="write lock is held by another writer"):
                Lease(connection).acquire()
        finally:
            connection.close()
    finally:
        other.execute("ROLLBACK")
        other.close()


def test_takeover_after_the_holder_is_killed(big_logdir: Path, tmp_path: Path) -> None:
    db = tmp_path / "store.db"
    first = start_boardd("ingest", big_logdir, "--db", db, "--samples-per-plugin", "scalars=50")
    wait_for_lease(db, first.pid)
    first.send_signal(signal.SIGKILL)
    first.communicate()
    assert first.returncode == -signal.SIGKILL
    # The row stays, naming a dead process of this host: taken over at once, not in 30 s.
    assert holder_of(db) == (socket.gethostname(), first.pid)
    connection = open_writer(db)
    try:
        started = time.monotonic()
        taken = Lease(connection).acquire()
        assert time.monotonic() - started < 1.0
        assert taken is not None and taken.pid == first.pid
    finally:
        connection.close()
    # The same through the command line, from the state the kill left (row and all).
    write_lease(db, host=socket.gethostname(), pid=first.pid, heartbeat=time.time())
    started = time.monotonic()
    done = subprocess.run(
        boardd_command("ingest", big_logdir, "--db", db, "--samples-per-plugin", "scalars=50"),
        capture_output=True,
        env=boardd_env(),
        timeout=120,
    )
    assert done.returncode == ExitCode.OK, done.stderr.decode()
    assert time.monotonic() - started < NO_WAIT
    assert holder_of(db) is None


def test_lease_of_another_host_blocks_until_it_expires(
    small_store: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    logdir, db = small_store
    before = snapshot(db)
    # Another host: its pid means nothing here, so only the heartbeat's age counts.
    write_lease(db, host="elsewhere", pid=os.getpid() + 100_000, heartbeat=time.time())
    assert main(["ingest", str(logdir), "--db", str(db)]) == ExitCode.STORE_LOCKED
    err = capsys.readouterr().err
    assert "on elsewhere" in err and "expires after 30 s" in err
    assert holder_of(db) == ("elsewhere", os.getpid() + 100_000)
    assert snapshot(db) == before
    # The same host with a live pid (not ours) blocks as well.
    with subprocess.Popen(["sleep", "30"]) as sleeper:
        try:
            write_lease(db, host=socket.gethostname(), pid=sleeper.pid, heartbeat=time.time())
            assert main(["ingest", str(logdir), "--db", str(db)]) == ExitCode.STORE_LOCKED
            assert f"pid {sleeper.pid}" in capsys.readouterr().err
        finally:
            sleeper.kill()
    # An expired heartbeat is taken over, whatever the host.
    write_lease(db, host="elsewhere", pid=1, heartbeat=time.time() - 31.0)
    assert main(["ingest", str(logdir), "--db", str(db)]) == ExitCode.OK
    capsys.readouterr()
    assert holder_of(db) is None
    # A custom expiry is honoured: 5 s old is fresh for 10 s, expired for 2 s.
    write_lease(db, host="elsewhere", pid=1, heartbeat=time.time() - 5.0, expiry=10.0)
    assert main(["ingest", str(logdir), "--db", str(db)]) == ExitCode.STORE_LOCKED
    write_lease(db, host="elsewhere", pid=1, heartbeat=time.time() - 5.0, expiry=2.0)
    assert main(["ingest", str(logdir), "--db", str(db)]) == ExitCode.OK
    capsys.readouterr()


def test_lost_lease_stops_the_writer_before_its_next_commit(tmp_path: Path) -> None:
    logdir = tmp_path / "logs"
    writer = LiveWriter(logdir / "run")
    write_mixed(writer, range(100))
    writer.flush()
    db = tmp_path / "store.db"
    with (
        pytest.raises(LeaseLostError, match="taken over"),
        WriteSession(db, logdir, lease_expiry=0.05) as session,
    ):
        ingestor = Ingestor(session.writer, logdir)
        ingestor.run_pass()
        ingestor.close()
        committed = snapshot(db)
        # This writer misses its heartbeat; another one on its own connection takes over.
        time.sleep(0.1)
        intruder = open_writer(db)
        try:
            taken = Lease(intruder).acquire()
            assert taken is not None and taken.owner == session.lease.owner
            write_mixed(writer, range(100, 200))
            writer.flush()
            try:
                ingestor.run_pass()
            finally:
                # Nothing of the second pass was committed; the intruder still holds it.
                assert snapshot(db) == committed
                holder = current_holder(intruder)
                assert holder is not None and holder.owner != session.lease.owner
        finally:
            intruder.close()
    writer.close()
    assert not session.lease.held
    # Closing the session did not remove the intruder's lease row.
    connection = open_reader(db)
    try:
        holder = current_holder(connection)
    finally:
        connection.close()
    assert holder is not None and holder.owner != session.lease.owner
