"""The HTTP server's configuration, and its defence against clients that hold connections.

uvicorn times out idle keep-alive connections only: a connection that never sends a request,
or sends part of a request head and stops (slowloris), is kept for ever, and each holds a file
descriptor. Neither h11 nor httptools has a header timeout, and uvicorn's ``limit_concurrency``
caps nothing about sockets (connections are still accepted; a request *parsed* beyond the limit
gets a 503, and a partial one is never parsed). At the descriptor limit, ``accept()`` fails
with EMFILE, asyncio logs it with a traceback up to 2,048 times per second, and ingest can no
longer open files.

So the protocol here is uvicorn's httptools protocol (llhttp, a C parser: h11, uvicorn's pure
Python one, cost more CPU per request than the rest of a cached answer) with these additions,
all per connection and all in the event loop's thread (no locks):

* a request head must be complete within :data:`HEAD_TIMEOUT` seconds of the connection
  waiting for one (its opening, or the end of the previous response; uvicorn's keep-alive
  timeout still closes idle ones sooner): a byte now and then does not extend it. A partial
  head is answered 408 (the JSON error shape), a silent connection is just closed;
* at most :func:`connection_cap` connections are open: one more evicts the connection that
  has waited longest for a request head (a well-behaved client sends its head at once, so only
  idle or stalled ones are waiting); when none is waiting (every one is busy), the newcomer
  gets a 503 and is closed;
* a head too large (a 1 MB URL or header: llhttp has no bound of its own, the bytes received
  while a head is awaited are counted) gets the JSON error shape (414 or 431), as does a
  malformed request (400), instead of uvicorn's plain text;
* a response of known length goes out in one write, head and body together.

What it drops is logged as one summary line at most once a minute, never a line per
connection.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import resource
import socket
import time
from collections import Counter
from typing import Any

from boardd.api.errors import error_bytes
from boardd.daemon.uvicorn_server import Config, HttpToolsProtocol
from boardd.daemon.uvicorn_server import Server as UvicornServer

log = logging.getLogger(__name__)

#: Seconds a connection has to send a whole request head once it waits for one.
HEAD_TIMEOUT = 10.0
#: The most connections open at once (the descriptor limit may lower it: connection_cap()).
#: Enough for many browsers (a TensorBoard tab opens about six) and scripts; low enough that
#: the process's other descriptors keep numbers below 1,024, as select() needs (watchdog's
#: inotify thread uses it).
MAX_CONNECTIONS = 512
#: Connections accepted per turn of the event loop (asyncio's default; uvicorn's is 2,048):
#: each is a descriptor before its protocol exists, so this bounds how far a burst overshoots
#: the cap. Also the kernel's queue of connections not yet accepted.
ACCEPT_BATCH = 100
#: The largest request head (request line and headers) read: above the API's 64 KiB bound on
#: query strings (which answers 413 itself), well below anything that could cost memory.
MAX_HEAD_BYTES = 128 * 1024
#: The longest URL httptools can parse (its URL fields' offsets are 16-bit): a longer one is
#: refused by the parser, and answered 414 here rather than as malformed.
MAX_URL_BYTES = 2**16 - 1
#: Seconds between two summary lines of dropped connections.
REPORT_INTERVAL = 60.0


def connection_cap(nofile: int | None = None) -> int:
    """The connection cap under a descriptor limit (default: this process's soft
    RLIMIT_NOFILE): half of it at most, the other half left to the stores, event files and
    worker pipes; never above :data:`MAX_CONNECTIONS`."""
    if nofile is None:
        nofile = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if nofile == resource.RLIM_INFINITY:
        return MAX_CONNECTIONS
    return max(16, min(MAX_CONNECTIONS, nofile // 2))


def server_config(
    app: Any,
    *,
    graceful: float = 3.0,
    head_timeout: float = HEAD_TIMEOUT,
    max_connections: int | None = None,
) -> Config:
    """uvicorn's configuration of boardd's HTTP server: its own logging, no access log, and
    the connection guard of this module (``max_connections`` default: connection_cap())."""
    cap = connection_cap() if max_connections is None else max_connections
    return Config(
        app,
        log_config=None,
        access_log=False,
        lifespan="on",
        # Annotated int, used as asyncio.wait_for's timeout: a fraction is fine.
        timeout_graceful_shutdown=graceful,  # type: ignore[arg-type]
        http=guarded_protocol(cap, head_timeout),
        ws="none",  # no WebSocket route; an upgrade would also leave the guard's count
        backlog=ACCEPT_BATCH,
    )


def raw_error(status: int, reason: str, message: str, code: str | None = None) -> bytes:
    """A whole HTTP/1.1 error response in the API's JSON shape, closing the connection (for
    answers given before, or instead of, parsing a request)."""
    body = error_bytes(status, message, code)
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class _Guard:
    """What the connections of one server share: who is open, who waits for a request head
    (oldest first), and the counts of the next summary line."""

    def __init__(self, cap: int, head_timeout: float) -> None:
        self.cap = cap
        self.head_timeout = head_timeout
        self.open: set[GuardedProtocol] = set()
        #: Connections waiting for a request head, in the order they began to wait.
        self.waiting: dict[GuardedProtocol, None] = {}
        self._counts: Counter[str] = Counter()
        self._last_report = -REPORT_INTERVAL
        self._report_due: asyncio.TimerHandle | None = None

    def admit(self, newcomer: GuardedProtocol) -> bool:
        """Makes room for one more connection; False if it must be refused."""
        if len(self.open) < self.cap:
            return True
        if self.waiting:
            oldest = next(iter(self.waiting))
            oldest.drop()
            self.note(newcomer.loop, "evicted")
            return True
        self.note(newcomer.loop, "refused")
        return False

    def note(self, loop: asyncio.AbstractEventLoop, what: str) -> None:
        """Counts one dropped connection; the summary line follows within the interval."""
        self._counts[what] += 1
        if self._report_due is None:
            delay = max(0.0, self._last_report + REPORT_INTERVAL - time.monotonic())
            self._report_due = loop.call_later(delay, self._report)

    def flush(self) -> None:
        """Logs the summary now, if anything is left to report (at shutdown)."""
        if self._report_due is not None:
            self._report_due.cancel()
            self._report()

    def _report(self) -> None:
        self._report_due = None
        self._last_report = time.monotonic()
        counts, self._counts = self._counts, Counter()
        parts = {
            "timed_out": f"{{}} sent no whole request head within {self.head_timeout:g} s",
            "evicted": f"{{}} waiting for a request head made room (at most {self.cap} open)",
            "refused": f"{{}} refused with 503 (all {self.cap} connections busy)",
            "too_large": "{} sent a request head over the size limit",
            "malformed": "{} sent a malformed request",
            "accept_failed": "{} could not be accepted (out of descriptors or memory)",
        }
        text = "; ".join(parts[k].format(n) for k, n in sorted(counts.items()) if n and k in parts)
        if text:
            log.warning("HTTP connections closed by the server: %s", text)
        if counts["idle"]:
            log.info(
                "HTTP connections closed by the server: %d sent nothing within %g s (a browser "
                "opens spare connections ahead of need)",
                counts["idle"],
                self.head_timeout,
            )


class _QuietLogger(logging.LoggerAdapter):  # type: ignore[type-arg]
    """uvicorn's logger, minus its line per malformed request (counted in the summary)."""

    @property
    def level(self) -> int:
        """The logger's own level (uvicorn reads it)."""
        return int(self.logger.level)

    def warning(self, msg: object, *args: object, **kwargs: Any) -> None:
        if msg == "Invalid HTTP request received.":
            return  # counted by send_400_response
        super().warning(msg, *args, **kwargs)


class _CorkedTransport:
    """The transport as one request's cycle sees it: the head of a response of known length is
    held until its body, and both go out in one ``send()`` (one packet for a small answer,
    instead of two system calls and two wake-ups of the client). Anything else (a chunked or
    streamed response, ``100 Continue``) is written at once."""

    __slots__ = ("_held", "_transport", "expect_head")

    def __init__(self, transport: asyncio.Transport) -> None:
        self._transport = transport
        self._held: bytes | None = None
        #: The next write is a response head (set when a request's cycle starts).
        self.expect_head = False

    def write(self, data: bytes) -> None:
        if self.expect_head:
            self.expect_head = False
            if data.startswith(b"HTTP/1.1 1"):  # 100 Continue: the client waits for it
                self.expect_head = True
            elif b"\r\ncontent-length: " in data:
                self._held = data
                return
        held = self._held
        if held is None:
            self._transport.write(data)
        else:
            self._held = None
            self._transport.write(held + data)

    def flush(self) -> None:
        """Writes a held head (a response with no body write: HEAD, or the cycle ended)."""
        held, self._held = self._held, None
        self.expect_head = False
        if held is not None and not self._transport.is_closing():
            self._transport.write(held)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def is_closing(self) -> bool:
        return self._transport.is_closing()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


class GuardedProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol (llhttp, in C) with a request-head deadline, a connection
    cap, a bound on the head's size and JSON errors (see the module's description). Made per
    server by :func:`guarded_protocol`."""

    guard: _Guard

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.logger = _QuietLogger(self.logger, {})  # type: ignore[assignment]
        self._head_deadline: asyncio.TimerHandle | None = None
        #: The loop's time when the current wait for a request head began (None: not waiting).
        self._waiting_since: float | None = None
        #: Waiting for a request head (none of the current request's is complete yet).
        self._awaiting_head = True
        #: Bytes received while waiting for the head, and whether a line ended among them.
        self._head_bytes = 0
        self._head_newline = False
        #: Bytes of the head's first line (the request line) received so far.
        self._line_bytes = 0
        self._corked: _CorkedTransport | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        admitted = self.guard.admit(self)
        super().connection_made(transport)
        self._corked = _CorkedTransport(transport)
        self.guard.open.add(self)
        if not admitted:
            transport.write(
                raw_error(503, "Service Unavailable", "too many connections; retry shortly")
            )
            transport.close()
            return
        self._watch_head()

    def connection_lost(self, exc: Exception | None) -> None:
        self.guard.open.discard(self)
        self._cancel_head_deadline()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._awaiting_head:
            self._head_bytes += len(data)
            if not self._head_newline:
                end = data.find(b"\n")
                self._line_bytes += len(data) if end < 0 else end
                self._head_newline = end >= 0
        super().data_received(data)
        if (
            self._awaiting_head
            and self._head_bytes > MAX_HEAD_BYTES
            and not self.transport.is_closing()
        ):
            self._refuse_large_head()
            return
        self._watch_head()

    def on_headers_complete(self) -> None:
        self._awaiting_head = False
        self._head_bytes = 0
        self._head_newline = False
        super().on_headers_complete()  # a URL too long to parse raises here: keep its length
        self._line_bytes = 0
        if self._corked is not None and self.cycle.transport is self.transport:
            self.cycle.transport = self._corked  # type: ignore[assignment]

    def _start_asgi_task(self, cycle: Any, app: Any) -> None:
        if self._corked is not None:
            self._corked.expect_head = True
        super()._start_asgi_task(cycle, app)

    def on_response_complete(self) -> None:
        if self._corked is not None:
            self._corked.flush()
        super().on_response_complete()
        if not self.pipeline and (self.cycle is None or self.cycle.response_complete):
            self._awaiting_head = True
        self._watch_head()

    def _refuse_large_head(self) -> None:
        self.guard.note(self.loop, "too_large")
        if self._head_newline:
            answer = raw_error(
                431,
                "Request Header Fields Too Large",
                f"the request head is over {MAX_HEAD_BYTES} bytes",
            )
        else:
            answer = raw_error(
                414, "URI Too Long", f"the request line is over {MAX_HEAD_BYTES} bytes"
            )
        self._end_with(answer)

    def send_400_response(self, msg: str) -> None:
        if self._line_bytes > MAX_URL_BYTES:
            # Not malformed: too long for the URL parser.
            self.guard.note(self.loop, "too_large")
            self._end_with(
                raw_error(414, "URI Too Long", f"the request line is over {MAX_URL_BYTES} bytes")
            )
            return
        # llhttp refused what it received: malformed.
        self.guard.note(self.loop, "malformed")
        self._end_with(raw_error(400, "Bad Request", "malformed HTTP request"))

    def _end_with(self, answer: bytes) -> None:
        self._awaiting_head = False
        self._cancel_head_deadline()
        self.transport.write(answer)
        self.transport.close()

    def drop(self) -> None:
        """Closes the connection at once (it was waiting for a request head)."""
        self._cancel_head_deadline()
        self.transport.close()

    def _watch_head(self) -> None:
        """Notes when the connection begins to wait for a request head (a byte now and then
        does not extend the wait) and when a head is in. The deadline's timer is lazy: armed
        when a wait begins and none is pending, never cancelled when a head arrives; when it
        fires it re-arms for the current wait, if younger. A busy keep-alive connection so
        costs one timer per deadline, not one per request."""
        if self._awaiting_head and not self.transport.is_closing():
            if self._waiting_since is None:
                self._waiting_since = self.loop.time()
                self.guard.waiting[self] = None
                if self._head_deadline is None:
                    self._head_deadline = self.loop.call_at(
                        self._waiting_since + self.guard.head_timeout, self._head_timed_out
                    )
        elif self._waiting_since is not None:
            self._waiting_since = None
            self.guard.waiting.pop(self, None)

    def _head_timed_out(self) -> None:
        self._head_deadline = None
        since = self._waiting_since
        if since is None or self.transport.is_closing():
            return
        due = since + self.guard.head_timeout
        if self.loop.time() + 0.001 < due:  # a later wait than the one it was armed for
            self._head_deadline = self.loop.call_at(due, self._head_timed_out)
            return
        self._cancel_head_deadline()
        # A connection that sent nothing at all is a browser's spare one (Chromium opens them
        # ahead of need and may never use them): closed as well, but not a client's fault.
        self.guard.note(self.loop, "timed_out" if self._head_bytes else "idle")
        if self._head_bytes:
            self.transport.write(
                raw_error(
                    408,
                    "Request Timeout",
                    f"the request head did not arrive within {self.guard.head_timeout:g} s",
                )
            )
        self.transport.close()

    def _cancel_head_deadline(self) -> None:
        """Ends the wait for a head (the connection is closing)."""
        self._waiting_since = None
        self.guard.waiting.pop(self, None)
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None


def guarded_protocol(cap: int, head_timeout: float) -> type[asyncio.Protocol]:
    """A protocol class for one server: its connections share one guard."""
    return type("GuardedProtocol", (GuardedProtocol,), {"guard": _Guard(cap, head_timeout)})


#: asyncio's errors of accept() that it survives (it retries a second later), as it logs them.
_ACCEPT_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


class Server(UvicornServer):
    """uvicorn's server whose event loop counts failed accepts into the guard's summary line
    (asyncio logs each with a traceback, up to a batch of them per turn of the loop)."""

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        guard = getattr(self.config.http, "guard", None)
        if isinstance(guard, _Guard):
            loop = asyncio.get_running_loop()
            previous = loop.get_exception_handler()

            def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
                exc = context.get("exception")
                if (
                    isinstance(exc, OSError)
                    and exc.errno in _ACCEPT_ERRNOS
                    and str(context.get("message", "")).startswith("socket.accept()")
                ):
                    guard.note(loop, "accept_failed")
                elif previous is not None:
                    previous(loop, context)
                else:
                    loop.default_exception_handler(context)

            loop.set_exception_handler(handle)
        await super().startup(sockets)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        await super().shutdown(sockets)
        guard = getattr(self.config.http, "guard", None)
        if isinstance(guard, _Guard):
            guard.flush()
