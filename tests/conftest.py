"""What every test shares: the leak check (tests/leakcheck.py), logdir and store builders
(event files written by TensorBoard's own writer, a store written in this process, one
``boardd ingest`` pass), and the app under boardd's real HTTP server in a thread."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from starlette.types import ASGIApp
from tensorboard.compat.proto import event_pb2 as tb_event_pb2
from tensorboard.compat.proto import summary_pb2 as tb_summary_pb2
from tensorboard.summary.writer.event_file_writer import EventFileWriter
from tensorboardX import summary as x_summary

from boardd.config import ExperimentSpec
from boardd.daemon.http_server import HEAD_TIMEOUT, KEEP_ALIVE_TIMEOUT, Server, server_config
from boardd.ingest import IngestResult, ingest_logdir
from boardd.ingest.ingestor import Ingestor
from boardd.store.bus import ChangeHub
from boardd.store.session import WriteSession

pytest_plugins = ["pytester", "tests.leakcheck"]


@pytest.fixture(autouse=True)
def _root_logger_restored() -> Iterator[None]:
    """No stderr handler left on the root logger by a test, and its level as the test found
    it. A test that runs a command in this process (``boardd.cli.main``) gets that command's
    stderr handler, bound to the stream pytest captures for that test: left in place, a later
    test's server thread logging through it writes to a closed file ("--- Logging error ---"
    in the CI log). pytest's own handlers (subclasses) come and go with each test phase."""
    root = logging.getLogger()
    before, level = set(root.handlers), root.level
    yield
    for handler in root.handlers[:]:
        if type(handler) is logging.StreamHandler and handler not in before:
            root.removeHandler(handler)
    root.setLevel(level)


# -- logdirs written here ---------------------------------------------------------------------

#: The wall time of step 0 in the event files tests write.
WALL = 1_700_000_000.0
#: How long a test waits for something it expects (generous: the machine is shared).
WAIT = 10.0


class EventRun:
    """One run's event file, written with TensorBoard's own writer (its flush() waits for the
    disk) and tensorboardX's summary builders."""

    def __init__(self, directory: Path, suffix: str = "") -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self._writer = EventFileWriter(
            str(directory), max_queue_size=1000, flush_secs=3600, filename_suffix=suffix
        )

    def scalars(self, tag: str, points: dict[int, float]) -> None:
        """Writes ``{step: value}`` as legacy scalars (wall time WALL + step) and flushes."""
        for step, value in points.items():
            summary = tb_summary_pb2.Summary.FromString(
                x_summary.scalar(tag, value).SerializeToString()
            )
            self._writer.add_event(
                tb_event_pb2.Event(step=step, wall_time=WALL + step, summary=summary)
            )
        self._writer.flush()

    def close(self) -> None:
        """Closes the file (and the writer's thread)."""
        self._writer.close()


def ingest(
    logdir: Path,
    db: Path,
    sampling: Mapping[str, int | None] | None = None,
    *,
    experiment: str = "default",
    **options: Any,
) -> IngestResult:
    """One ``boardd ingest`` pass in this process (:func:`boardd.ingest.ingest_logdir`)."""
    return ingest_logdir(logdir, db, experiment=experiment, sampling=sampling, **options)


def scalar_rows(connection: Any, series_id: int) -> list[tuple[int, float, float | None]]:
    """Every point a scalar series holds, its blocks' and its tail's, by step: (step, wall
    time, value or None for NaN)."""
    from boardd.store import scalar_reads

    return list(scalar_reads.iter_rows(connection, series_id))


def as_schema_7(db: Path, sampling: str) -> None:
    """Turns a store into one as a boardd before scalar blocks left it: every point a row,
    schema 7, its fingerprint's sampling ``sampling`` as that boardd wrote it (its "defaults"
    kept 10,000 scalars a series)."""
    import json

    import apsw

    from boardd.store import blocks

    connection = apsw.Connection(str(db))
    with connection:
        for sid, data in connection.execute("SELECT series_id, data FROM scalar_blocks").fetchall():
            steps, walls, values = blocks.decode(data)
            connection.executemany(
                "INSERT INTO scalar_points VALUES (?, ?, ?, ?)",
                [
                    (sid, s, w, None if v != v else v)
                    for s, w, v in zip(steps.tolist(), walls.tolist(), values.tolist(), strict=True)
                ],
            )
        connection.execute("DROP TABLE scalar_blocks")
        found = json.loads(
            connection.execute("SELECT value FROM meta WHERE key = 'fingerprint'").get
        )
        found["schema"], found["sampling"] = "7", sampling
        connection.execute(
            "UPDATE meta SET value = ? WHERE key = 'fingerprint'", (json.dumps(found),)
        )
    connection.pragma("user_version", 7)
    connection.close()


#: SQL: how many scalar points the store holds, in blocks and tails.
COUNT_SCALARS = (
    "SELECT (SELECT count(*) FROM scalar_points) "
    "+ (SELECT coalesce(sum(count), 0) FROM scalar_blocks)"
)


@dataclass
class LiveStore:
    """A store with its writer in this process, as a daemon's runner has it: ``commit()``
    ingests what is new; with a hub the writer claims the store on it."""

    name: str
    logdir: Path
    db: Path
    hub: ChangeHub | None = None
    #: generation → time.perf_counter() of its commit.
    commits: dict[int, float] = field(default_factory=dict)
    runs: list[EventRun] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.logdir.mkdir(parents=True, exist_ok=True)
        self.session = WriteSession(self.db, self.logdir)
        self.session.writer.on_commit(self._committed)
        if self.hub is not None:
            self.hub.claim(self.name, self.session.writer)
        self.ingestor = Ingestor(self.session.writer, self.logdir, experiment=self.name, workers=1)

    def _committed(self, generation: int) -> None:
        self.commits[generation] = time.perf_counter()

    @property
    def spec(self) -> ExperimentSpec:
        """The experiment as the app takes it."""
        return ExperimentSpec(self.name, self.logdir, self.db)

    @property
    def generation(self) -> int:
        """The generation of the last commit."""
        return self.session.writer.generation

    def run(self, name: str, suffix: str = "") -> EventRun:
        """A new event file of run ``name`` (a path relative to the logdir)."""
        made = EventRun(self.logdir / name, suffix)
        self.runs.append(made)
        return made

    def commit(self) -> int:
        """One ingest pass (commits if anything is new); the generation after it."""
        self.ingestor.run_pass()
        return self.generation

    def close(self) -> None:
        """Closes the event files, commits what is pending and closes the store."""
        for run in self.runs:
            run.close()
        self.runs.clear()
        self.ingestor.close()
        self.session.close()


@pytest.fixture
def live_stores(tmp_path: Path) -> Iterator[Callable[..., LiveStore]]:
    """Makes :class:`LiveStore` s under tmp_path (``make(name, hub)``); closes them at the end."""
    made: list[LiveStore] = []

    def make(name: str = "exp", hub: ChangeHub | None = None) -> LiveStore:
        store = LiveStore(name, tmp_path / name / "logs", tmp_path / name / "store.sqlite", hub)
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()


# -- a server in a thread -----------------------------------------------------------------------


class ThreadedServer:
    """An ASGI app under boardd's HTTP server (daemon/http_server.py) in a thread, on 127.0.0.1
    (a free port, or ``port``)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        port: int = 0,
        graceful: float = 5.0,
        head_timeout: float = HEAD_TIMEOUT,
        max_connections: int | None = None,
        keep_alive: float = KEEP_ALIVE_TIMEOUT,
    ) -> None:
        # IPPROTO_TCP: asyncio sets TCP_NODELAY on accepted sockets only then (as boardd's).
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(64)
        self.port = int(self.sock.getsockname()[1])
        self.url = f"http://127.0.0.1:{self.port}"
        # boardd's own server configuration (its connection guard too), as boardd serve's.
        config = server_config(
            app,
            graceful=graceful,
            head_timeout=head_timeout,
            max_connections=max_connections,
            keep_alive=keep_alive,
        )
        self.server = Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, name="test-http-server"
        )

    def start(self) -> ThreadedServer:
        """Starts serving; returns once the app's lifespan has started."""
        self.thread.start()
        deadline = time.monotonic() + WAIT
        while not self.server.started:
            assert self.thread.is_alive(), "the server stopped during start-up"
            assert time.monotonic() < deadline, "the server did not start"
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Stops serving (the lifespan ends, open streams are cut) and joins the thread; safe
        to call twice."""
        self.server.should_exit = True
        if self.thread.is_alive():
            self.thread.join(WAIT)
        assert not self.thread.is_alive(), "the server did not stop"
        self.sock.close()


@pytest.fixture
def servers() -> Iterator[list[ThreadedServer]]:
    """Servers a test started (append them here): stopped at its end."""
    started: list[ThreadedServer] = []
    yield started
    for server in started:
        server.stop()
