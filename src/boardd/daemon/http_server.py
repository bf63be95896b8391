"""boardd's HTTP/1.1 server: asyncio and httptools' parser, the ASGI lifespan, a connection guard.

The server is boardd's own (the connection: :mod:`boardd.daemon.http_protocol`), on public APIs
only: asyncio's servers and protocols, httptools' parser. It listens on sockets bound by the
caller, runs the app's lifespan around serving, stops on :attr:`Server.should_exit` (boardd
serve's signal handlers set it) and then ends gracefully: no new connections, idle ones closed,
busy ones after their response, at most ``graceful`` seconds for those before their requests
are cancelled.

Every connection of one server shares a :class:`~boardd.daemon.http_guard.ConnectionGuard`
(:mod:`boardd.daemon.http_guard` says what it keeps off): a request head must be complete
within :data:`HEAD_TIMEOUT` seconds of the connection waiting for one, and at most
:func:`connection_cap` connections are open.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import resource
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from email.utils import formatdate
from types import FrameType
from typing import Any, NamedTuple

from boardd.daemon.http_guard import ConnectionGuard
from boardd.daemon.http_protocol import HttpProtocol

log = logging.getLogger(__name__)

#: Seconds a connection has to send a whole request head once it waits for one.
HEAD_TIMEOUT = 10.0
#: Seconds an answered connection may stay silent before it is closed (keep-alive).
KEEP_ALIVE_TIMEOUT = 5.0
#: The most connections open at once (the descriptor limit may lower it: connection_cap()).
#: Enough for many browsers (a TensorBoard tab opens about six) and scripts; low enough that
#: the process's other descriptors keep numbers below 1,024, as select() needs (watchdog's
#: inotify thread uses it).
MAX_CONNECTIONS = 512
#: Connections accepted per turn of the event loop (asyncio's default): each is a descriptor
#: before its protocol exists, so this bounds how far a burst overshoots the cap. Also the
#: kernel's queue of connections not yet accepted.
ACCEPT_BATCH = 100
#: How often the server looks at should_exit (set by signal handlers or another thread).
_TICK = 0.1
_TICKS_PER_SECOND = 10

Handler = Callable[[int, FrameType | None], None]


def connection_cap(nofile: int | None = None) -> int:
    """The connection cap under a descriptor limit (default: this process's soft
    RLIMIT_NOFILE): half of it at most, the other half left to the stores, event files and
    worker pipes; never above :data:`MAX_CONNECTIONS`."""
    if nofile is None:
        nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if nofile == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS
    return max(16, min(MAX_CONNECTIONS, nofile // 2))


class ServerConfig(NamedTuple):
    """What one :class:`Server` serves, and how."""

    app: Any
    #: Seconds in-flight requests get to finish once the server stops.
    graceful: float
    head_timeout: float
    max_connections: int
    keep_alive: float = KEEP_ALIVE_TIMEOUT


def server_config(
    app: Any,
    *,
    graceful: float = 3.0,
    head_timeout: float = HEAD_TIMEOUT,
    max_connections: int | None = None,
    keep_alive: float = KEEP_ALIVE_TIMEOUT,
) -> ServerConfig:
    """boardd's HTTP server configuration (``max_connections`` default: connection_cap())."""
    cap = connection_cap() if max_connections is None else max_connections
    return ServerConfig(app, graceful, head_timeout, cap, keep_alive)


class Lifespan:
    """The ASGI lifespan protocol around serving: the app's start-up before the first
    connection, its shutdown after the last; its state dict is each request's ``state``."""

    def __init__(self, app: Any) -> None:
        self.app = app
        #: What the app's start-up put in the lifespan scope's state (Starlette: the dict its
        #: lifespan yields); copied into each request's scope.
        self.state: dict[str, Any] = {}
        self._inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self._started = asyncio.Event()
        self._ended = asyncio.Event()
        self._failure: str | None = None
        self._task: asyncio.Task[None] | None = None

    async def startup(self) -> bool:
        """Runs the app's start-up; False (logged) if it failed."""
        scope = {
            "type": "lifespan",
            "asgi": {"version": "3.0", "spec_version": "2.0"},
            "state": self.state,
        }
        self._task = asyncio.get_running_loop().create_task(self._main(scope))
        await self._inbox.put({"type": "lifespan.startup"})
        await self._started.wait()
        if self._failure is not None:
            log.error("the app's start-up failed: %s", self._failure)
            return False
        return True

    async def shutdown(self) -> None:
        """Runs the app's shutdown (a failure is logged)."""
        if self._task is None or self._task.done():
            return
        await self._inbox.put({"type": "lifespan.shutdown"})
        await self._ended.wait()
        if self._failure is not None:
            log.error("the app's shutdown failed: %s", self._failure)

    async def _main(self, scope: dict[str, Any]) -> None:
        try:
            await self.app(scope, self._receive, self._send)
        except Exception as exc:
            self._failure = f"{type(exc).__name__}: {exc}"
            phase = "shutdown" if self._started.is_set() else "start-up"
            log.error("the app's lifespan raised during its %s", phase, exc_info=True)
        else:
            if not self._started.is_set():
                self._failure = "the app's lifespan ended before its start-up completed"
        finally:
            self._started.set()
            self._ended.set()

    async def _receive(self) -> dict[str, Any]:
        return await self._inbox.get()

    async def _send(self, message: dict[str, Any]) -> None:
        kind = message["type"]
        if kind == "lifespan.startup.complete":
            self._started.set()
        elif kind == "lifespan.startup.failed":
            self._failure = message.get("message") or "lifespan.startup.failed"
            self._started.set()
        elif kind == "lifespan.shutdown.complete":
            self._ended.set()
        elif kind == "lifespan.shutdown.failed":
            self._failure = message.get("message") or "lifespan.shutdown.failed"
            self._ended.set()
        else:
            raise RuntimeError(f"unexpected lifespan message {kind!r}")


#: asyncio's errors of accept() that it survives (it retries a second later), as it logs them.
_ACCEPT_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


class Server:
    """Serves one ASGI app on listening sockets until :attr:`should_exit` is set.

    ``signals``: handlers installed while serving, when serving in the main thread (default:
    SIGTERM and SIGINT stop the server; a second one forces it down). ``before_shutdown``:
    called once the server stops accepting, before it waits for open requests (what ends
    responses that never end on their own: boardd's open streams)."""

    def __init__(
        self,
        config: ServerConfig,
        *,
        signals: Mapping[signal.Signals, Handler] | None = None,
        before_shutdown: Callable[[], None] | None = None,
    ) -> None:
        self.config = config
        self.guard: ConnectionGuard[HttpProtocol] = ConnectionGuard(
            config.max_connections, config.head_timeout
        )
        self.signals = signals
        self.before_shutdown = before_shutdown
        #: The requests being answered (the shutdown waits for them).
        self.tasks: set[asyncio.Task[None]] = set()
        #: The Date header of responses, renewed every second.
        self.date_line = b""
        self.started = False
        self.should_exit = False
        self.force_exit = False
        self._servers: list[asyncio.Server] = []

    def run(self, sockets: list[socket.socket]) -> None:
        """Serves in a new event loop until stopped (see :meth:`serve`)."""
        asyncio.run(self.serve(sockets))

    async def serve(self, sockets: list[socket.socket]) -> None:
        """Runs the app's start-up, serves on ``sockets`` until stopped, then shuts down
        gracefully. :attr:`started` stays False if the start-up failed."""
        with self._captured_signals():
            lifespan = Lifespan(self.config.app)
            if not await lifespan.startup():
                return
            try:
                await self._listen(sockets, lifespan.state)
                self.started = True
                ticks = 0
                while not self.should_exit:
                    await asyncio.sleep(_TICK)
                    ticks += 1
                    if ticks % _TICKS_PER_SECOND == 0:
                        self._renew_date()
            finally:
                await self._shutdown()
                if not self.force_exit:
                    await lifespan.shutdown()
                self.guard.flush()

    async def _listen(self, sockets: list[socket.socket], state: dict[str, Any]) -> None:
        loop = asyncio.get_running_loop()
        guard = self.guard
        previous = loop.get_exception_handler()

        def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
            # asyncio logs each failed accept with a traceback: counted into the summary.
            exc = context.get("exception")
            if (
                isinstance(exc, OSError)
                and exc.errno in _ACCEPT_ERRNOS
                and str(context.get("message", "")).startswith("socket.accept()")
            ):
                guard.note("accept_failed")
            elif previous is not None:
                previous(loop, context)
            else:
                loop.default_exception_handler(context)

        loop.set_exception_handler(handle)
        self._renew_date()
        for sock in sockets:
            self._servers.append(
                await loop.create_server(
                    lambda: HttpProtocol(self, state), sock=sock, backlog=ACCEPT_BATCH
                )
            )

    def _renew_date(self) -> None:
        self.date_line = b"date: " + formatdate(usegmt=True).encode("ascii") + b"\r\n"

    async def _shutdown(self) -> None:
        for server in self._servers:
            server.close()
        if self.before_shutdown is not None:
            self.before_shutdown()
        for connection in list(self.guard.open):
            connection.shutdown()
        deadline = time.monotonic() + self.config.graceful
        while (self.guard.open or self.tasks) and not self.force_exit:
            if time.monotonic() >= deadline:
                log.error(
                    "stopping: %d request(s) still running after %g s, cancelled",
                    len(self.tasks),
                    self.config.graceful,
                )
                break
            await asyncio.sleep(_TICK / 2)
        for task in list(self.tasks):
            task.cancel()
        for connection in list(self.guard.open):
            connection.transport.abort()
        if self.tasks:
            await asyncio.wait(list(self.tasks), timeout=1.0)
        for server in self._servers:
            await server.wait_closed()

    @contextlib.contextmanager
    def _captured_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield
            return
        handlers = self.signals
        if handlers is None:
            handlers = {signal.SIGTERM: self._stop, signal.SIGINT: self._stop}
        previous = {sig: signal.signal(sig, handler) for sig, handler in handlers.items()}
        try:
            yield
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

    def _stop(self, signum: int, frame: FrameType | None) -> None:
        if self.should_exit:
            self.force_exit = True
        self.should_exit = True
