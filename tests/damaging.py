"""Real damage to real stores, for the tests of what boardd does with a damaged store: a
logdir written by tensorboardX, ingested by ``boardd ingest``, then bytes overwritten or the
file cut where SQLite keeps a given page."""

from __future__ import annotations

import contextlib
import os
import random
import subprocess
import sys
from pathlib import Path

import apsw
from tensorboardX import SummaryWriter

from tests.daemon.conftest import boardd_env

#: Points of each run's "loss" series (enough for many pages of scalar points).
POINTS = 10_000
RUNS = ("a", "b")


def write_logdir(logdir: Path, runs: tuple[str, ...] = RUNS) -> None:
    """Runs of ``loss`` (every step) and ``acc`` (every 100th), written by tensorboardX."""
    for run in runs:
        with SummaryWriter(logdir=str(logdir / run)) as writer:
            for step in range(POINTS):
                writer.add_scalar("loss", step / 10, step)
                if step % 100 == 0:
                    writer.add_scalar("acc", step, step)


def boardd_ingest(logdir: Path, db: Path, *more: str) -> subprocess.CompletedProcess[str]:
    """``boardd ingest LOGDIR --db DB MORE`` as a subprocess."""
    return subprocess.run(
        [sys.executable, "-m", "boardd", "ingest", str(logdir), "--db", str(db), *more],
        env=boardd_env(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        stdin=subprocess.DEVNULL,
    )


def ingested_logdir(root: Path) -> tuple[Path, Path]:
    """A logdir written under ``root`` and its store, ingested once by ``boardd ingest``
    (what the damage tests copy and damage)."""
    logdir = root / "logs"
    write_logdir(logdir)
    db = root / "store.sqlite"
    done = boardd_ingest(logdir, db)
    assert done.returncode == 0, done.stderr
    return logdir, db


def page_size(db: Path) -> int:
    """The store's page size."""
    connection = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return int(connection.pragma("page_size"))
    finally:
        connection.close()


def pages_of(db: Path, name: str, kind: str = "leaf") -> list[int]:
    """The pages (1-based) of table or index ``name`` of that kind ("leaf", "internal"), by
    SQLite's dbstat table."""
    query = "SELECT pageno FROM dbstat WHERE name = ? AND pagetype = ? ORDER BY pageno"
    connection = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        return [int(pageno) for (pageno,) in connection.execute(query, (name, kind))]
    except apsw.SQLError as exc:
        if "dbstat" not in str(exc):
            raise
    finally:
        connection.close()
    # An APSW whose SQLite was built without dbstat (older wheels): the standard library's
    # SQLite reads the same file format.
    import sqlite3

    with contextlib.closing(sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True)) as std:
        return [int(pageno) for (pageno,) in std.execute(query, (name, kind))]


def scramble(path: Path, offset: int, length: int = 4096, seed: int = 1) -> None:
    """Overwrites ``length`` bytes at ``offset`` with random bytes."""
    with open(path, "r+b") as file:
        file.seek(offset)
        file.write(random.Random(seed).randbytes(length))


def scramble_page(db: Path, page: int, within: int = 0, length: int = 4096) -> None:
    """Random bytes ``within`` bytes into page ``page`` (1-based) of the main file."""
    scramble(db, (page - 1) * page_size(db) + within, length)


def truncate_to_half(db: Path) -> None:
    """Cuts the file to half its pages."""
    size = page_size(db)
    os.truncate(db, (db.stat().st_size // size // 2) * size)
