"""Fixtures of the client tests: a store written in this process, the app under a real uvicorn
in a thread (with a record of the requests it saw and on which TCP connection), and a TCP proxy
that can cut the client's connection."""

from __future__ import annotations

import contextlib
import select
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from tensorboard.compat.proto import event_pb2 as tb_event_pb2
from tensorboard.compat.proto import summary_pb2 as tb_summary_pb2
from tensorboard.summary.writer.event_file_writer import EventFileWriter
from tensorboardX import summary as x_summary

from boardd.api.app import create_app
from boardd.config import ExperimentSpec
from boardd.ingest.ingestor import Ingestor
from boardd.store.bus import ChangeHub
from boardd.store.session import WriteSession

WALL = 1_700_000_000.0
#: How long a test waits for something it expects (generous: the machine is shared).
WAIT = 10.0


# -- a store written here ------------------------------------------------------------------------


class Run:
    """One run's event file, written with TensorBoard's writer (flush() waits for the disk)."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self._writer = EventFileWriter(str(directory), max_queue_size=1000, flush_secs=3600)

    def scalars(self, tag: str, points: dict[int, float]) -> None:
        """Writes ``{step: value}`` as scalars and flushes."""
        for step, value in points.items():
            summary = tb_summary_pb2.Summary.FromString(
                x_summary.scalar(tag, value).SerializeToString()
            )
            self._writer.add_event(
                tb_event_pb2.Event(step=step, wall_time=WALL + step, summary=summary)
            )
        self._writer.flush()

    def close(self) -> None:
        """Closes the file."""
        self._writer.close()


@dataclass
class Store:
    """A store with its writer in this process; with a hub, the writer claims the store on it
    (as the daemon's runner does)."""

    name: str
    logdir: Path
    db: Path
    hub: ChangeHub | None = None
    runs: list[Run] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.logdir.mkdir(parents=True, exist_ok=True)
        self.session = WriteSession(self.db, self.logdir)
        self.ingestor = Ingestor(self.session.writer, self.logdir, experiment=self.name, workers=1)
        if self.hub is not None:
            self.hub.claim(self.name, self.session.writer)

    @property
    def spec(self) -> ExperimentSpec:
        """The experiment as the app takes it."""
        return ExperimentSpec(self.name, self.logdir, self.db)

    def run(self, name: str) -> Run:
        """A new run's event file."""
        made = Run(self.logdir / name)
        self.runs.append(made)
        return made

    def commit(self) -> int:
        """One ingest pass; the generation after it."""
        self.ingestor.run_pass()
        return self.session.writer.generation

    def close(self) -> None:
        """Closes the event files and the store."""
        for run in self.runs:
            run.close()
        self.ingestor.close()
        self.session.close()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    """A store whose writer claims it on a hub of its own (``store.hub``)."""
    made = Store("exp", tmp_path / "logs", tmp_path / "store.sqlite", ChangeHub())
    yield made
    made.close()


# -- the server ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Seen:
    """One request as the server saw it."""

    client: tuple[str, int]
    path: str
    accept_encoding: str
    content_encoding: str


class Recorder:
    """ASGI middleware noting each HTTP request: the client's address and port (one per TCP
    connection), the path, what it accepted and how the answer was encoded."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.seen: list[Seen] = []
        self._lock = threading.Lock()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        client = scope["client"]

        async def noting(message: Message) -> None:
            if message["type"] == "http.response.start":
                answer = {k.decode("latin-1"): v.decode("latin-1") for k, v in message["headers"]}
                seen = Seen(
                    (client[0], client[1]),
                    scope["path"],
                    headers.get("accept-encoding", ""),
                    answer.get("content-encoding", ""),
                )
                with self._lock:
                    self.seen.append(seen)
            await send(message)

        await self.app(scope, receive, noting)

    def connections(self, path: str | None = None) -> set[tuple[str, int]]:
        """The client addresses (TCP connections) of the requests seen (for ``path``)."""
        with self._lock:
            return {s.client for s in self.seen if path is None or s.path == path}


class Server:
    """``create_app(specs, **options)`` under uvicorn in a thread, on 127.0.0.1 (a free port,
    or ``port``); the requests it sees are in :attr:`recorder`."""

    def __init__(self, *specs: ExperimentSpec, port: int = 0, **options: Any) -> None:
        options.setdefault("stream_heartbeat", 0.5)
        self.recorder = Recorder(create_app(specs, **options))
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", port))
        self.sock.listen(64)
        self.port = int(self.sock.getsockname()[1])
        self.url = f"http://127.0.0.1:{self.port}"
        # A short grace: streams never end on their own; at stop they are cut.
        config = uvicorn.Config(
            self.recorder,
            log_config=None,
            access_log=False,
            lifespan="on",
            timeout_graceful_shutdown=0.5,
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, name="test-client-server"
        )
        self.thread.start()
        deadline = time.monotonic() + WAIT
        while not self.server.started:
            assert self.thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
            time.sleep(0.01)

    def stop(self) -> None:
        """Stops serving (open streams are cut) and joins the thread; safe to call twice."""
        self.server.should_exit = True
        self.thread.join(WAIT)
        assert not self.thread.is_alive(), "uvicorn did not stop"
        self.sock.close()


@pytest.fixture
def servers() -> Iterator[list[Server]]:
    """Servers a test started (appended here), stopped at the end."""
    started: list[Server] = []
    yield started
    for server in started:
        server.stop()


# -- a proxy that can cut connections ------------------------------------------------------------


class Proxy:
    """A TCP proxy on 127.0.0.1 in front of ``upstream_port``, one thread per connection.

    :meth:`cut_after_events` arms it to forward only the next ``count`` SSE events (blocks
    with an ``event:`` line) from the server, then close both sides of that connection, as a
    network failure would in the middle of whatever the server was sending.
    """

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.accepted = 0
        self.cuts = 0
        self._cut_after: int | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._thread = threading.Thread(target=self._accept, name="test-proxy", daemon=True)
        self._thread.start()

    def cut_after_events(self, count: int) -> None:
        """Cut the (next) stream connection after ``count`` more events from the server."""
        with self._lock:
            self._cut_after = count

    def close(self) -> None:
        """Stops accepting and ends every connection."""
        self._stop.set()
        self.listener.close()
        self._thread.join(WAIT)
        for thread in self._threads:
            thread.join(WAIT)

    def _accept(self) -> None:
        self.listener.settimeout(0.05)
        while not self._stop.is_set():
            try:
                downstream, _ = self.listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.accepted += 1
            upstream = socket.create_connection(("127.0.0.1", self.upstream_port))
            thread = threading.Thread(
                target=self._pump, args=(downstream, upstream), name="test-proxy-pump"
            )
            self._threads.append(thread)
            thread.start()

    def _pump(self, downstream: socket.socket, upstream: socket.socket) -> None:
        pending = b""  # bytes from the server not yet forwarded, while counting events
        with downstream, upstream:
            while not self._stop.is_set():
                ready, _, _ = select.select([downstream, upstream], [], [], 0.05)
                if downstream in ready:
                    data = downstream.recv(65536)
                    if not data:
                        return
                    upstream.sendall(data)
                if upstream in ready:
                    data = upstream.recv(65536)
                    if not data:
                        return
                    cut, pending = self._forward(downstream, pending + data)
                    if cut:
                        with contextlib.suppress(OSError):
                            downstream.shutdown(socket.SHUT_RDWR)
                        self.cuts += 1
                        return

    def _forward(self, downstream: socket.socket, data: bytes) -> tuple[bool, bytes]:
        """Forwards ``data``, or the part of it up to the last event allowed (then True);
        while armed, an incomplete block is kept back (returned) until its end comes."""
        with self._lock:
            if self._cut_after is None:
                downstream.sendall(data)
                return False, b""
            sent = 0
            while True:
                end = data.find(b"\n\n", sent)
                if end < 0:
                    return False, data[sent:]
                block = data[sent : end + 2]
                downstream.sendall(block)
                sent = end + 2
                if b"\nevent:" in b"\n" + block:
                    self._cut_after -= 1
                    if self._cut_after <= 0:
                        self._cut_after = None
                        return True, b""


@pytest.fixture
def proxies() -> Iterator[list[Proxy]]:
    """Proxies a test started (appended here), closed at the end."""
    started: list[Proxy] = []
    yield started
    for proxy in started:
        proxy.close()
