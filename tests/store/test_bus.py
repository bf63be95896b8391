"""The commit bus: a writer's claim (the one "this process writes it"), its commits waking
subscribers, and the watcher seeing commits of another process (a real ``boardd ingest``)."""

from __future__ import annotations

import asyncio
import os
import subprocess
from pathlib import Path

from boardd.ingest.ingestor import Ingestor
from boardd.store import queries
from boardd.store.bus import ChangeHub, StoreWatcher
from boardd.store.connection import open_reader
from boardd.store.session import WriteSession
from tests.conftest import ingest
from tests.store.conftest import LiveWriter, boardd_command, boardd_env

WAIT = 10.0


def generation_of(db: Path) -> int:
    """The store's generation, read by a connection of its own."""
    connection = open_reader(db)
    try:
        return queries.generation(connection)
    finally:
        connection.close()


def descriptors_of(path: Path) -> int:
    """How many file descriptors of this process are open on ``path``."""
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == str(path):
                count += 1
        except OSError:
            continue  # closed meanwhile (e.g. the listing's own descriptor)
    return count


def test_a_commit_of_a_writer_here_wakes_its_subscribers(tmp_path: Path) -> None:
    logdir, db = tmp_path / "logs", tmp_path / "store.sqlite"
    writer = LiveWriter(logdir / "train")
    hub = ChangeHub()
    with WriteSession(db, logdir) as session:
        ingestor = Ingestor(session.writer, logdir, experiment="exp", workers=1)
        assert hub.writer_generation("exp") is None and not hub.is_writing("exp")
        claim = hub.claim("exp", session.writer)
        assert hub.writer_generation("exp") == session.writer.generation

        def commit(step: int) -> int:
            writer.scalar("loss", 1.0 / (1 + step), step)
            writer.flush()
            ingestor.run_pass()
            return session.writer.generation

        async def main() -> None:
            mine = [hub.subscribe(["exp"]) for _ in range(3)]
            other = hub.subscribe(["other"])
            generation = await asyncio.to_thread(commit, 0)
            for subscription in mine:
                assert await subscription.wait(WAIT) == {"exp"}
            assert await other.wait(0.1) == set()
            # Exact while claimed: the generation of the writer's last commit.
            assert hub.writer_generation("exp") == generation == hub.latest("exp")

            claim.release()
            claim.release()
            assert hub.writer_generation("exp") is None and not hub.is_writing("exp")
            # The writer's commits no longer speak for the store (the watcher's job now).
            later = await asyncio.to_thread(commit, 1)
            assert later > generation and hub.latest("exp") == generation
            assert await mine[0].wait(0.1) == set()

            # A newer claim replaces an older one; releasing the old one leaves it.
            first, second = hub.claim("exp", session.writer), hub.claim("exp", session.writer)
            first.release()
            assert hub.writer_generation("exp") == later
            second.release()
            for subscription in [*mine, other]:
                subscription.close()
            assert len(hub) == 0

        asyncio.run(main())
        ingestor.close()
    writer.close()


def test_a_commit_of_another_process_is_seen_by_the_watcher(tmp_path: Path) -> None:
    logdir, db = tmp_path / "logs", tmp_path / "store.sqlite"
    writer = LiveWriter(logdir / "train")
    writer.scalar("loss", 1.0, 0)
    writer.flush()
    ingest(logdir, db)
    first = generation_of(db)
    hub = ChangeHub()

    async def main() -> None:
        subscription = hub.subscribe(["exp"])
        watcher = StoreWatcher({"exp": db}, hub, interval=0.02)
        watcher.start()
        try:
            # Its first look announces the store's generation.
            assert await subscription.wait(WAIT) == {"exp"}
            assert hub.latest("exp") == first
            writer.scalar("loss", 2.0, 1)
            writer.flush()
            done = await asyncio.to_thread(
                subprocess.run,
                boardd_command("ingest", logdir, "--db", db),
                env=boardd_env(),
                capture_output=True,
                timeout=120,
            )
            assert done.returncode == 0, done.stderr.decode()
            assert await subscription.wait(WAIT) == {"exp"}
            assert hub.latest("exp") == generation_of(db) > first
            assert hub.writer_generation("exp") is None  # announced, not written here
        finally:
            subscription.close()
            watcher.close()
            watcher.close()

    asyncio.run(main())
    writer.close()


def test_the_watcher_leaves_a_store_written_here_alone(tmp_path: Path) -> None:
    logdir, db = tmp_path / "logs", tmp_path / "store.sqlite"
    hub = ChangeHub()
    with WriteSession(db, logdir) as session:
        claim = hub.claim("exp", session.writer)
        alone = descriptors_of(db)

        async def main() -> None:
            subscription = hub.subscribe(["exp"])
            watcher = StoreWatcher({"exp": db}, hub, interval=0.02)
            watcher.start()
            try:
                await asyncio.sleep(0.3)
                # Claimed: the watcher opened no connection of its own.
                assert descriptors_of(db) == alone
                claim.release()
                # Not claimed any more: the watcher opens it and announces its generation.
                assert await subscription.wait(WAIT) == {"exp"}
                assert descriptors_of(db) == alone + 1
            finally:
                subscription.close()
                watcher.close()
            # (Not checked after close: SQLite keeps a closed connection's descriptor open
            # while another connection of the process holds a lock on the same file.)

        asyncio.run(main())
