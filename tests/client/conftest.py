"""Fixtures of the client tests: a store written in this process, the app under boardd's real server
in a thread (with a record of the requests it saw and on which TCP connection), and a TCP proxy
that can cut the client's connection."""

from __future__ import annotations

import contextlib
import select
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from boardd.api.app import create_app
from boardd.config import ExperimentSpec
from boardd.store.bus import ChangeHub
from tests.conftest import WAIT, LiveStore, ThreadedServer


@pytest.fixture
def store(tmp_path: Path) -> Iterator[LiveStore]:
    """A store whose writer claims it on a hub of its own (``store.hub``)."""
    made = LiveStore("exp", tmp_path / "logs", tmp_path / "store.sqlite", ChangeHub())
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


class Server(ThreadedServer):
    """``create_app(specs, **options)`` served in a thread, on 127.0.0.1 (a free port,
    or ``port``), started; the requests it sees are in :attr:`recorder`."""

    def __init__(self, *specs: ExperimentSpec, port: int = 0, **options: Any) -> None:
        options.setdefault("stream_heartbeat", 0.5)
        self.recorder = Recorder(create_app(specs, **options))
        # A short grace: streams never end on their own; at stop they are cut.
        super().__init__(self.recorder, port=port, graceful=0.5)
        self.start()


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
        # A side that resets its connection (a client dropping the stream it reconnects from)
        # ends this one, as it would end a real proxy's: both sides are closed.
        with contextlib.suppress(ConnectionError):
            self._pump_until_closed(downstream, upstream)

    def _pump_until_closed(self, downstream: socket.socket, upstream: socket.socket) -> None:
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
