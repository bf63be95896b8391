"""One HTTP/1.1 connection of boardd's server: httptools' parser under an asyncio protocol, ASGI 3.

The parser is llhttp (in C) through httptools' public API (:class:`httptools.HttpRequestParser`
and its callbacks, :func:`httptools.parse_url`): a pure-Python parser cost more CPU per request
than the rest of a cached answer. Everything else is here, in the event loop's thread (no
locks):

* requests are handled one at a time; pipelined ones wait in order (reading pauses meanwhile);
* ``receive()`` gives the body as it arrives (``Expect: 100-continue`` is answered at the first
  ``receive()``), then ``http.disconnect`` once the response is complete or the client has gone
  (a stream learns it at once: the ASGI spec version said is 2.3, so Starlette listens);
* ``send()`` frames the body by its ``content-length``, else chunked (HTTP/1.1), else by closing;
  a response of known length goes out in one write, head and body together (one packet for a
  small answer, instead of two system calls and two wake-ups of the client); writes wait while
  the transport's buffer is full;
* keep-alive, with an idle timeout once a response is out;

and the connection guard (see :mod:`boardd.daemon.http_guard`): a request head must be complete
within the guard's deadline of the connection waiting for one (its opening, or the end of the
previous response; a byte now and then does not extend it); a head over :data:`MAX_HEAD_BYTES`
(llhttp has no bound of its own, and httptools gathers a header's bytes until it ends) is
answered 414 or 431, a URL over :data:`MAX_URL_BYTES` 414 and a malformed request 400, all in
the API's JSON error shape, and the connection is closed.
"""

from __future__ import annotations

import asyncio
import http
import logging
import re
import urllib.parse
from collections import deque
from typing import Any, Protocol

import httptools

from boardd.api.errors import error_bytes
from boardd.daemon.http_guard import ConnectionGuard

#: The server's one logger (its summary lines and the app's failures), as configured by name.
log = logging.getLogger("boardd.daemon.http_server")

#: The largest request head (request line and headers) read: above the API's 64 KiB bound on
#: query strings (which answers 413 itself), well below anything that could cost memory.
MAX_HEAD_BYTES = 128 * 1024
#: The longest URL answered (httptools' URL parser keeps its fields' offsets in 16 bits).
MAX_URL_BYTES = 2**16 - 1
#: Request body bytes held for the app before reading pauses (the app's receive() resumes it).
BODY_HIGH_WATER = 64 * 1024


def _status_line(status: int) -> bytes:
    try:
        phrase = http.HTTPStatus(status).phrase
    except ValueError:
        phrase = ""
    return f"HTTP/1.1 {status} {phrase}\r\n".encode("ascii")


_STATUS_LINES = {status: _status_line(status) for status in range(100, 600)}
#: What a response header may not hold: a name is a token, a value has no control character
#: but tab (a CR or LF would let an app's value split the response).
_BAD_NAME = re.compile(rb'[\x00-\x20\x7f()<>@,;:\[\]={}\\"/?]')
_BAD_VALUE = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")
_CONTINUE = b"HTTP/1.1 100 Continue\r\n\r\n"
_INTERNAL_ERROR = (
    b"HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain; charset=utf-8\r\n"
    b"content-length: 21\r\nconnection: close\r\n\r\nInternal Server Error"
)


def raw_error(status: int, reason: str, message: str, code: str | None = None) -> bytes:
    """A whole HTTP/1.1 error response in the API's JSON shape, closing the connection (for
    answers given before, or instead of, handing a request to the app)."""
    body = error_bytes(status, message, code)
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


class ServerSettings(Protocol):
    """What a connection reads of its server's configuration."""

    @property
    def app(self) -> Any: ...

    @property
    def keep_alive(self) -> float: ...


class Host(Protocol):
    """What a connection uses of the server that accepted it
    (:class:`boardd.daemon.http_server.Server`), named here so that the connection does not
    import the server that imports it."""

    @property
    def guard(self) -> ConnectionGuard[HttpProtocol]: ...

    @property
    def config(self) -> ServerSettings: ...

    @property
    def tasks(self) -> set[asyncio.Task[None]]:
        """The requests being answered (the server's shutdown waits for them)."""
        ...

    @property
    def date_line(self) -> bytes:
        """The Date header line of responses."""
        ...


class _Refused(Exception):
    """Raised in a parser callback to stop parsing: the request was answered already."""


class HttpProtocol(asyncio.Protocol):
    """One client connection: parses its requests and runs the app for each, in order."""

    def __init__(self, server: Host, app_state: dict[str, Any]) -> None:
        self.server = server
        self.guard = server.guard
        self.app = server.config.app
        self.app_state = app_state
        self.loop = asyncio.get_running_loop()
        self.parser = httptools.HttpRequestParser(self)
        # Data after a request that said "Connection: close" is ignored, not an error that
        # would cut its response short.
        self.parser.set_dangerous_leniencies(lenient_data_after_close=True)
        self.transport: asyncio.Transport = None  # type: ignore[assignment]
        self.client: tuple[str, int] | None = None
        self.local: tuple[str, int] | None = None
        # The request being parsed: its URL and headers so far, Expect: 100-continue.
        self._url = b""
        self._headers: list[tuple[bytes, bytes]] = []
        self._expect_continue = False
        #: The request whose body the parser is reading (None before the first head).
        self._parsing: _Cycle | None = None
        #: The request the app is answering, and those waiting behind it (pipelined).
        self.active: _Cycle | None = None
        self._queue: deque[_Cycle] = deque()
        self._read_paused = False
        self.write_paused = False
        self._drained: asyncio.Future[None] | None = None
        # The wait for a request head: since when (None: not waiting), whether it follows a
        # response (then the keep-alive timeout applies too), the bytes received meanwhile and
        # whether a line ended among them (a head too large is then a header's, not the URL's).
        self._waiting_since: float | None = None
        self._kept_alive = False
        self._head_bytes = 0
        self._head_newline = False
        self._timer: asyncio.TimerHandle | None = None

    # -- asyncio's protocol ---------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        admitted = self.guard.admit(self)
        self.guard.open.add(self)
        if not admitted:
            transport.write(
                raw_error(503, "Service Unavailable", "too many connections; retry shortly")
            )
            transport.close()
            return
        peer = transport.get_extra_info("peername")
        if isinstance(peer, tuple):
            self.client = (str(peer[0]), int(peer[1]))
        local = transport.get_extra_info("sockname")
        if isinstance(local, tuple):
            self.local = (str(local[0]), int(local[1]))
        self._begin_wait(kept_alive=False)

    def connection_lost(self, exc: Exception | None) -> None:
        self.guard.open.discard(self)
        self._end_wait()
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        active = self.active
        if active is not None and not active.complete:
            active.disconnected = True
            active.wake()
        self._queue.clear()
        drained = self._drained
        if drained is not None and not drained.done():
            drained.set_result(None)

    def eof_received(self) -> bool | None:
        return None  # the transport closes: the client has gone

    def data_received(self, data: bytes) -> None:
        waiting = self._waiting_since is not None
        if waiting:
            self._head_bytes += len(data)
            if not self._head_newline and b"\n" in data:
                self._head_newline = True
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            # An upgrade (a WebSocket) is no route's: the request went to the app as a plain
            # one, and the parser stops at it, so the connection ends with its answer.
            if self._parsing is not None:
                self._parsing.keep_alive = False
            self._pause_reading()
            return
        except httptools.HttpParserError:
            if not self.transport.is_closing():
                self._malformed()
            return
        if (
            self._waiting_since is not None
            and self._head_bytes > MAX_HEAD_BYTES
            and not self.transport.is_closing()
        ):
            self._refuse_large_head()

    def pause_writing(self) -> None:
        self.write_paused = True

    def resume_writing(self) -> None:
        self.write_paused = False
        drained = self._drained
        if drained is not None:
            self._drained = None
            if not drained.done():
                drained.set_result(None)

    # -- the parser's callbacks -----------------------------------------------------------------

    def on_message_begin(self) -> None:
        self._url = b""
        self._headers = []
        self._expect_continue = False

    def on_url(self, url: bytes) -> None:
        self._url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        name = name.lower()
        # llhttp keeps trailing whitespace, which is not part of a field's value (RFC 9110 5.5).
        value = value.rstrip(b" \t")
        if name == b"expect" and value.lower() == b"100-continue":
            self._expect_continue = True
        self._headers.append((name, value))

    def on_headers_complete(self) -> None:
        self._end_wait()
        url = self._url
        if len(url) > MAX_URL_BYTES:
            self.guard.note("too_large")
            self._end_with(
                raw_error(414, "URI Too Long", f"the request line is over {MAX_URL_BYTES} bytes")
            )
            raise _Refused
        parser = self.parser
        parsed = httptools.parse_url(url)
        raw_path = parsed.path
        path = raw_path.decode("ascii")
        if "%" in path:
            path = urllib.parse.unquote(path)
        version = parser.get_http_version()
        scope = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": version,
            "server": self.local,
            "client": self.client,
            "scheme": "http",
            "method": parser.get_method().decode("ascii"),
            "root_path": "",
            "path": path,
            "raw_path": raw_path,
            "query_string": parsed.query or b"",
            "headers": self._headers,
            "state": self.app_state.copy(),
        }
        cycle = _Cycle(
            self,
            scope,
            version == "1.1",
            version != "1.0" and parser.should_keep_alive(),
            self._expect_continue,
        )
        self._parsing = cycle
        if self.active is None:
            self._start(cycle)
        else:
            self._queue.append(cycle)
            self._pause_reading()

    def on_body(self, body: bytes) -> None:
        cycle = self._parsing
        if cycle is None or cycle.complete:
            return
        cycle.body += body
        if len(cycle.body) > BODY_HIGH_WATER:
            self._pause_reading()
        cycle.wake()

    def on_message_complete(self) -> None:
        cycle = self._parsing
        if cycle is None or cycle.complete:
            return
        cycle.more_body = False
        cycle.wake()

    # -- requests, one at a time ----------------------------------------------------------------

    def _start(self, cycle: _Cycle) -> None:
        self.active = cycle
        task = self.loop.create_task(cycle.run(self.app))
        tasks = self.server.tasks
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    def response_done(self) -> None:
        """The active request's response is complete: the next one starts, or the wait for
        one does."""
        self.active = None
        if self.transport.is_closing():
            return
        if self._queue:
            self._start(self._queue.popleft())
            if not self._queue:
                self.resume_reading()
            return
        self.resume_reading()
        self._begin_wait(kept_alive=True)

    def shutdown(self) -> None:
        """The server is stopping: closes the connection now if idle, else after the response
        it is sending."""
        self._queue.clear()
        if self.active is None:
            self.transport.close()
        else:
            self.active.keep_alive = False

    def drop(self) -> None:
        """Closes the connection at once (it was waiting for a request head)."""
        self._end_wait()
        self.transport.close()

    def _pause_reading(self) -> None:
        if not self._read_paused:
            self._read_paused = True
            self.transport.pause_reading()

    def resume_reading(self) -> None:
        if self._read_paused and not self._queue:
            self._read_paused = False
            self.transport.resume_reading()

    async def drain(self) -> None:
        """Waits until the transport's buffer is below its low-water mark."""
        if self._drained is None:
            self._drained = self.loop.create_future()
        await self._drained

    # -- the guard ------------------------------------------------------------------------------

    def _begin_wait(self, *, kept_alive: bool) -> None:
        """The connection waits for a request head from now. The timer is lazy: armed when a
        wait begins and none is pending (or the pending one is for later than this wait's end),
        never cancelled when a head arrives; when it fires it re-arms for the current wait, if
        younger. A busy keep-alive connection so costs one timer per deadline, not one per
        request."""
        since = self.loop.time()
        self._waiting_since = since
        self._kept_alive = kept_alive
        self._head_bytes = 0
        self._head_newline = False
        self.guard.waiting[self] = None
        due = self._due(since)
        timer = self._timer
        if timer is None or timer.when() > due:  # none pending, or one for a later moment
            if timer is not None:
                timer.cancel()
            self._timer = self.loop.call_at(due, self._timed_out)

    def _end_wait(self) -> None:
        if self._waiting_since is not None:
            self._waiting_since = None
            self.guard.waiting.pop(self, None)

    def _due(self, since: float) -> float:
        """When the current wait ends: the head's deadline, or sooner the keep-alive timeout
        while a connection that has been answered stays silent."""
        due = since + self.guard.head_timeout
        if self._kept_alive and not self._head_bytes:
            due = min(due, since + self.server.config.keep_alive)
        return due

    def _timed_out(self) -> None:
        self._timer = None
        since = self._waiting_since
        if since is None or self.transport.is_closing():
            return
        due = self._due(since)
        if self.loop.time() + 0.001 < due:  # a later wait than the one it was armed for
            self._timer = self.loop.call_at(due, self._timed_out)
            return
        self._end_wait()
        if self._head_bytes:
            self.guard.note("timed_out")
            self.transport.write(
                raw_error(
                    408,
                    "Request Timeout",
                    f"the request head did not arrive within {self.guard.head_timeout:g} s",
                )
            )
        elif not self._kept_alive or due >= since + self.guard.head_timeout:
            # A connection that sent nothing at all is a browser's spare one (Chromium opens
            # them ahead of need and may never use them): closed as well, but not a client's
            # fault. One idle after a response is just keep-alive ending.
            self.guard.note("idle")
        self.transport.close()

    def _refuse_large_head(self) -> None:
        self.guard.note("too_large")
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

    def _malformed(self) -> None:
        # llhttp (or the URL parser) refused what was received.
        self.guard.note("malformed")
        active = self.active
        if active is not None and not active.complete:
            # A response is on its way: no second one inside it; the connection ends with it.
            active.keep_alive = False
            self._queue.clear()
            self._pause_reading()
            return
        self._end_with(raw_error(400, "Bad Request", "malformed HTTP request"))

    def _end_with(self, answer: bytes) -> None:
        self._end_wait()
        self.transport.write(answer)
        self.transport.close()


class _Cycle:
    """One request and its response: the ``receive`` and ``send`` the app is given."""

    __slots__ = (
        "body",
        "chunked",
        "complete",
        "conn",
        "delivered",
        "disconnected",
        "expect_continue",
        "held",
        "http11",
        "is_head",
        "keep_alive",
        "more_body",
        "remaining",
        "scope",
        "started",
        "waiter",
    )

    def __init__(
        self,
        conn: HttpProtocol,
        scope: dict[str, Any],
        http11: bool,
        keep_alive: bool,
        expect_continue: bool,
    ) -> None:
        self.conn = conn
        self.scope = scope
        self.http11 = http11
        self.keep_alive = keep_alive
        self.expect_continue = expect_continue
        self.is_head = scope["method"] == "HEAD"
        self.body = bytearray()
        self.more_body = True
        #: The whole body has been handed to the app (receive() now waits for the end).
        self.delivered = False
        self.disconnected = False
        self.started = False
        self.complete = False
        self.chunked = False
        #: Body bytes still due under the response's content-length (None: no length).
        self.remaining: int | None = None
        #: A response head held until the first body bytes, to go out in the same write.
        self.held: bytes | None = None
        self.waiter: asyncio.Future[None] | None = None

    def wake(self) -> None:
        waiter = self.waiter
        if waiter is not None:
            self.waiter = None
            if not waiter.done():
                waiter.set_result(None)

    async def run(self, app: Any) -> None:
        conn = self.conn
        try:
            await app(self.scope, self.receive, self.send)
        except asyncio.CancelledError:
            # The graceful shutdown's timeout ran out: the connection goes with the task.
            conn.transport.close()
            raise
        except Exception:
            log.exception("the app failed on %s %s", self.scope["method"], self.scope["path"])
            if not self.complete:  # else the connection has moved on to its next request
                if not self.started and not self.disconnected:
                    self.started = self.complete = True
                    conn.transport.write(_INTERNAL_ERROR)
                conn.transport.close()
        else:
            if not self.complete and not self.disconnected:
                log.error(
                    "the app returned without a whole response to %s %s",
                    self.scope["method"],
                    self.scope["path"],
                )
                if not self.started:
                    self.started = self.complete = True
                    conn.transport.write(_INTERNAL_ERROR)
                conn.transport.close()
        finally:
            if conn.active is self:
                conn.response_done()

    async def receive(self) -> dict[str, Any]:
        if self.expect_continue:
            self.expect_continue = False
            if not self.started and not self.conn.transport.is_closing():
                self.conn.transport.write(_CONTINUE)
        while not (self.disconnected or self.complete) and (
            self.delivered or (self.more_body and not self.body)
        ):
            self.conn.resume_reading()
            self.waiter = self.conn.loop.create_future()
            await self.waiter
        if self.disconnected or self.complete:
            return {"type": "http.disconnect"}
        body = bytes(self.body)
        self.body.clear()
        more = self.more_body
        if not more:
            self.delivered = True
        return {"type": "http.request", "body": body, "more_body": more}

    async def send(self, message: dict[str, Any]) -> None:
        conn = self.conn
        if conn.write_paused and not self.disconnected:
            await conn.drain()
        if self.disconnected:
            return  # the client has gone; the app learns it from receive()
        kind = message["type"]
        if not self.started:
            if kind != "http.response.start":
                raise RuntimeError(f"expected http.response.start, got {kind!r}")
            self._start_response(message)
            return
        if self.complete or kind != "http.response.body":
            raise RuntimeError(f"unexpected {kind!r} after the response")
        body = message.get("body", b"")
        more = message.get("more_body", False)
        transport = conn.transport
        if self.is_head:
            pass
        elif self.chunked:
            if body:
                data = b"%x\r\n%s\r\n" % (len(body), body)
                transport.write(data + b"0\r\n\r\n" if not more else data)
            elif not more:
                transport.write(b"0\r\n\r\n")
        else:
            remaining = self.remaining
            if remaining is not None:
                remaining -= len(body)
                if remaining < 0:
                    raise RuntimeError("response body longer than its content-length")
                self.remaining = remaining
            held = self.held
            if held is not None:
                if body or not more:
                    self.held = None
                    transport.write(held + body)
            elif body:
                transport.write(body)
        if more:
            return
        if self.remaining and not self.is_head:
            raise RuntimeError("response body shorter than its content-length")
        if self.held is not None:
            transport.write(self.held)
            self.held = None
        self.complete = True
        self.wake()
        if not self.keep_alive:
            transport.close()
        if conn.active is self:
            conn.response_done()

    def _start_response(self, message: dict[str, Any]) -> None:
        self.started = True
        self.expect_continue = False
        status = message["status"]
        line = _STATUS_LINES.get(status) or f"HTTP/1.1 {status} \r\n".encode("ascii")
        parts = [line, self.conn.server.date_line]
        length: int | None = None
        chunked = False
        close_said = False
        for name, value in message.get("headers", ()):
            if _BAD_NAME.search(name) or _BAD_VALUE.search(value):
                raise RuntimeError(f"invalid response header {name!r}: {value!r}")
            lower = name.lower()
            if lower == b"content-length":
                if length is None:
                    length = int(value)
            elif lower == b"transfer-encoding":
                chunked = value.lower() == b"chunked"
            elif lower == b"connection" and b"close" in value.lower():
                self.keep_alive = False
                close_said = True
            parts += (name, b": ", value, b"\r\n")
        if self.more_body:
            # Answered before its body was all received (a 413, an error): what is left of
            # the body would be read as the next request's head, so the connection ends.
            self.keep_alive = False
        bodiless = self.is_head or status in (204, 304) or status < 200
        if chunked:
            length = None
        elif length is None and not bodiless:
            if self.http11:
                chunked = True
                parts.append(b"transfer-encoding: chunked\r\n")
            else:
                self.keep_alive = False  # HTTP/1.0: the body ends where the connection does
        if not self.keep_alive and not close_said:
            parts.append(b"connection: close\r\n")
        parts.append(b"\r\n")
        head = b"".join(parts)
        self.chunked = chunked and not self.is_head
        self.remaining = length
        if length is not None and not self.is_head:
            self.held = head
        else:
            self.conn.transport.write(head)
