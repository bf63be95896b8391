"""A store boardd cannot write (an immutable file, a read-only mount) is served as it is, and
``boardd ingest`` says so in one line with the store's exit code: never a hang, never a
traceback. Real files, a real ``boardd serve`` subprocess, real HTTP."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from tensorboardX import SummaryWriter

from boardd.cli import ExitCode
from tests.daemon.conftest import ServeFactory, boardd_env
from tests.damaging import pages_of, scramble_page

STEPS = range(0, 200)


def make_store(tmp_path: Path) -> tuple[Path, Path]:
    """A logdir of one run written by tensorboardX, ingested into ``store/store.sqlite``."""
    logdir = tmp_path / "logs"
    with SummaryWriter(logdir=str(logdir / "run1")) as writer:
        for step in STEPS:
            writer.add_scalar("loss", step / 10, step)
    directory = tmp_path / "store"
    directory.mkdir()
    db = directory / "store.sqlite"
    done = ingest_command(logdir, db)
    assert done.returncode == 0, done.stderr
    return logdir, db


def ingest_command(logdir: Path, db: Path) -> subprocess.CompletedProcess[str]:
    """``boardd ingest LOGDIR --db DB`` as a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "boardd", "ingest", str(logdir), "--db", str(db)],
        env=boardd_env(),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        stdin=subprocess.DEVNULL,
    )


@contextlib.contextmanager
def read_only(path: Path) -> Iterator[None]:
    """``path`` and its directory made read-only (0444, 0555), undone afterwards; for root,
    whom permission bits do not stop, the file made immutable too (``chattr +i``)."""
    os.chmod(path, 0o444)
    os.chmod(path.parent, 0o555)
    try:
        if os.geteuid() != 0:
            yield
            return
        done = subprocess.run(
            ["chattr", "+i", str(path)], capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            pytest.skip(f"root, and chattr +i fails on this filesystem: {done.stderr.strip()}")
        try:
            yield
        finally:
            subprocess.run(["chattr", "-i", str(path)], check=False)
    finally:
        os.chmod(path.parent, 0o755)
        os.chmod(path, 0o644)


@contextlib.contextmanager
def read_only_mount(source: Path, target: Path) -> Iterator[None]:
    """``source`` bind-mounted read-only at ``target`` (root only), unmounted afterwards."""
    target.mkdir()
    bind = subprocess.run(
        ["mount", "--bind", str(source), str(target)], capture_output=True, text=True, check=False
    )
    if bind.returncode != 0:
        pytest.skip(f"a bind mount needs root and mount(8): {bind.stderr.strip()}")
    try:
        remount = subprocess.run(
            ["mount", "-o", "remount,ro,bind", str(target)],
            capture_output=True,
            text=True,
            check=False,
        )
        if remount.returncode != 0:
            pytest.skip(f"cannot remount read-only: {remount.stderr.strip()}")
        yield
    finally:
        # Lazily: a daemon still running (a failed test) keeps files open under it.
        subprocess.run(["umount", "--lazy", str(target)], check=False)


def assert_served_read_only(serve: ServeFactory, logdir: Path, db: Path) -> None:
    daemon = serve(logdir, "--db", db)
    entry = daemon.wait_for_state("read_only")
    assert "cannot be written" in entry["error"], entry
    points = daemon.scalars("run1", "loss")
    assert [p["step"] for p in points] == list(STEPS)
    assert [p["value"] for p in points] == pytest.approx([s / 10 for s in STEPS])
    assert "Traceback" not in daemon.stderr()
    assert daemon.stop() == 0


def assert_ingest_refused(logdir: Path, db: Path) -> None:
    done = ingest_command(logdir, db)
    assert done.returncode == ExitCode.BAD_STORE, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot be written" in lines[0], done.stderr


def test_immutable_store_is_served_read_only(serve: ServeFactory, tmp_path: Path) -> None:
    logdir, db = make_store(tmp_path)
    with read_only(db):
        assert_ingest_refused(logdir, db)
        assert_served_read_only(serve, logdir, db)


def test_store_on_a_read_only_mount_is_served(serve: ServeFactory, tmp_path: Path) -> None:
    logdir, db = make_store(tmp_path)
    assert not Path(f"{db}-wal").exists()  # folded away: only the main file is there
    mounted = tmp_path / "ro"
    with read_only_mount(db.parent, mounted):
        assert_ingest_refused(logdir, mounted / db.name)
        assert_served_read_only(serve, logdir, mounted / db.name)


def test_damaged_store_on_a_read_only_mount_is_not_served(
    serve: ServeFactory, tmp_path: Path
) -> None:
    logdir, db = make_store(tmp_path)
    page = pages_of(db, "scalar_points")[0]
    scramble_page(db, page)
    before = sorted(db.parent.iterdir())
    mounted = tmp_path / "ro"
    with read_only_mount(db.parent, mounted):
        daemon = serve(logdir, "--db", mounted / db.name)
        entry = daemon.wait_for_state("damaged")
        assert "cannot be set aside" in entry["error"], entry
        assert daemon.health()["status"] == "degraded"
        assert daemon.client is not None
        response = daemon.client.get(
            "/api/v1/scalars", params={"plugin": "scalars", "run": "run1", "tag": "loss"}
        )
        assert response.status_code == 503, response.text
        assert "damaged" in response.json()["error"]["message"]
        assert "Traceback" not in daemon.stderr()
        assert daemon.stop() == 0
    assert sorted(db.parent.iterdir()) == before  # nothing moved
