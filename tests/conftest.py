"""What every test shares: the check that threads and file descriptors come back, logdir and
store builders (event files written by TensorBoard's own writer, a store written in this
process, one ``boardd ingest`` pass), and the app under a real uvicorn in a thread."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from starlette.types import ASGIApp
from tensorboard.compat.proto import event_pb2 as tb_event_pb2
from tensorboard.compat.proto import summary_pb2 as tb_summary_pb2
from tensorboard.summary.writer.event_file_writer import EventFileWriter
from tensorboardX import summary as x_summary

from boardd.config import ExperimentSpec
from boardd.ingest import IngestResult, ingest_logdir
from boardd.ingest.ingestor import Ingestor
from boardd.store.bus import ChangeHub
from boardd.store.session import WriteSession

pytest_plugins = ["pytester"]

#: How long a test's threads and descriptors may take to go after it ends (a thread told to
#: stop is joined by its owner, but an executor's idle worker may need a moment to notice).
LEAK_GRACE_SECONDS = 2.0


def _open_fds() -> dict[int, str]:
    """This process's open descriptors and what each points at."""
    out: dict[int, str] = {}
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        try:
            out[fd] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            continue  # closed between the listing and the readlink (the listing's own fd)
    return out


def _leaks(
    threads_before: set[threading.Thread], fds_before: dict[int, str]
) -> tuple[list[threading.Thread], dict[int, str]]:
    threads = [t for t in threading.enumerate() if t not in threads_before and t.is_alive()]
    # SQLite keeps the descriptor of a closed connection open while another connection of
    # this process has the same file open (closing it would drop that one's POSIX locks):
    # a file that was already open before is not a new leak.
    targets_before = set(fds_before.values())
    fds = {
        fd: target
        for fd, target in _open_fds().items()
        if fds_before.get(fd) != target and target not in targets_before
    }
    return threads, fds


class _Baseline:
    """Threads and descriptors at one moment, to compare with later."""

    def __init__(self) -> None:
        self.threads = set(threading.enumerate())
        self.fds = _open_fds()

    def check(self, what: str) -> None:
        """Fails if threads or descriptors opened since are still there after a grace time."""
        deadline = time.monotonic() + LEAK_GRACE_SECONDS
        while True:
            threads, fds = _leaks(self.threads, self.fds)
            if (not threads and not fds) or time.monotonic() >= deadline:
                break
            time.sleep(0.05)
        problems = []
        if threads:
            names = ", ".join(sorted(_describe(t) for t in threads))
            problems.append(f"threads still running: {names}")
        if fds:
            targets = ", ".join(f"{fd} -> {target}" for fd, target in sorted(fds.items()))
            problems.append(f"descriptors still open: {targets}")
        if problems:
            pytest.fail(f"{what} leaked: " + "; ".join(problems), pytrace=False)


def _describe(thread: threading.Thread) -> str:
    """A thread's name and what it runs (an unnamed thread says nothing by its name)."""
    target = getattr(thread, "_target", None)
    if target is None:
        kind = type(thread)
        return f"{thread.name} ({kind.__module__}.{kind.__qualname__})"
    return f"{thread.name} ({getattr(target, '__qualname__', target)!s})"


def _checked(node: pytest.Item | pytest.Collector) -> bool:
    return node.get_closest_marker("allow_leaks") is None and os.path.isdir("/proc/self/fd")


#: Fixtures of a wider scope whose resources (a served app's worker threads and read
#: connections) may be created lazily inside whichever test uses them first.
_SHARED_SCOPES = frozenset({"class", "module", "package"})


def _uses_shared_fixtures(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(
        defs[-1].scope in _SHARED_SCOPES
        for name, defs in info.name2fixturedefs.items()
        if defs and name != "no_leaks_per_module"
    )


@pytest.fixture(autouse=True, scope="module")
def no_leaks_per_module(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fails a module whose tests and fixtures leave a thread running or a descriptor open.

    Whatever owns a thread, a connection or a file handle has ``close()`` (ARCHITECTURE.md),
    and a daemon that runs for weeks cannot afford one lost per request. This fixture is set
    up before the module's other fixtures and torn down after them, so everything they held
    must be gone by then.
    """
    if not _checked(request.node):
        yield
        return
    baseline = _Baseline()
    yield
    baseline.check(f"module {request.node.name}")


@pytest.fixture(autouse=True)
def no_leaks(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fails a test that leaves a thread running or a file descriptor open.

    A test that uses a fixture of a wider scope is judged with its module instead: what such
    a fixture creates on first use belongs to the fixture, not to the test. A test marked
    ``allow_leaks`` (with the reason) is not checked.
    """
    if not _checked(request.node) or _uses_shared_fixtures(request.node):
        yield
        return
    baseline = _Baseline()
    yield
    baseline.check(f"test {request.node.name}")


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
    """An ASGI app under a real uvicorn in a thread, on 127.0.0.1 (a free port, or ``port``)."""

    def __init__(self, app: ASGIApp, *, port: int = 0, graceful: float = 5.0) -> None:
        # IPPROTO_TCP: asyncio sets TCP_NODELAY on accepted sockets only then (as boardd's).
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(64)
        self.port = int(self.sock.getsockname()[1])
        self.url = f"http://127.0.0.1:{self.port}"
        config = uvicorn.Config(
            app,
            log_config=None,
            access_log=False,
            lifespan="on",
            timeout_graceful_shutdown=graceful,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, name="test-uvicorn"
        )

    def start(self) -> ThreadedServer:
        """Starts serving; returns once the app's lifespan has started."""
        self.thread.start()
        deadline = time.monotonic() + WAIT
        while not self.server.started:
            assert self.thread.is_alive(), "uvicorn stopped during start-up"
            assert time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        """Stops serving (the lifespan ends, open streams are cut) and joins the thread; safe
        to call twice."""
        self.server.should_exit = True
        if self.thread.is_alive():
            self.thread.join(WAIT)
        assert not self.thread.is_alive(), "uvicorn did not stop"
        self.sock.close()


@pytest.fixture
def servers() -> Iterator[list[ThreadedServer]]:
    """Servers a test started (append them here): stopped at its end."""
    started: list[ThreadedServer] = []
    yield started
    for server in started:
        server.stop()
