"""boardd's HTTP server (daemon/http_server.py) with real sockets: request heads that are too
slow or too large, the connection cap. The server is boardd's own, in a thread
(tests/conftest.py ThreadedServer), over a small ASGI app."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from boardd.daemon.http_protocol import MAX_HEAD_BYTES
from boardd.daemon.http_server import connection_cap
from tests.conftest import ThreadedServer

#: The head deadline of these servers (boardd serve's is HEAD_TIMEOUT).
HEAD = 0.5


class App:
    """Answers ``{"ok": true}``; ``/hold`` waits until :attr:`release` is set."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.holding = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["path"] == "/hold":
            self.holding += 1
            while not self.release.is_set():
                await asyncio.sleep(0.01)
        body = b'{"ok":true}'
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


@pytest.fixture
def app() -> Iterator[App]:
    made = App()
    yield made
    made.release.set()


def start(app: App, servers: list[ThreadedServer], **options: Any) -> ThreadedServer:
    server = ThreadedServer(app, graceful=1.0, **options).start()  # type: ignore[arg-type]
    servers.append(server)
    return server


def read_until_closed(sock: socket.socket, *, trickle: bool, limit: float = 10.0) -> bytes:
    """Everything the server sends until it closes; with ``trickle``, one more byte of a
    header every 0.1 s meanwhile (a slowloris client)."""
    sock.settimeout(0.1)
    answer = b""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            chunk = sock.recv(65536)
        except TimeoutError:
            if trickle:
                with contextlib.suppress(OSError):
                    sock.sendall(b"x")
            continue
        except ConnectionResetError:  # it closed with bytes of ours unread
            return answer
        if not chunk:
            return answer
        answer += chunk
    raise AssertionError(f"the server kept the connection for {limit:g} s; sent {answer!r}")


def error_of(answer: bytes, status: int) -> dict[str, str]:
    """The JSON error of a raw HTTP answer, after checking its status and headers."""
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("ascii").split("\r\n")
    assert lines[0].startswith(f"HTTP/1.1 {status} "), answer[:300]
    headers = dict(line.lower().split(": ", 1) for line in lines[1:])
    assert headers["content-type"] == "application/json"
    assert headers["connection"] == "close"
    assert int(headers["content-length"]) == len(body)
    error = json.loads(body)["error"]
    assert set(error) == {"code", "message"}
    assert isinstance(error, dict)
    return error


def closing_lines(caplog: pytest.LogCaptureFixture, level: int) -> list[str]:
    """The server's summary lines of connections it closed, at ``level``."""
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "boardd.daemon.http_server"
        and r.levelno == level
        and "closed by the server" in r.getMessage()
    ]


def wait_for_line(caplog: pytest.LogCaptureFixture, level: int, timeout: float = 5.0) -> str:
    deadline = time.monotonic() + timeout
    while not (lines := closing_lines(caplog, level)):
        assert time.monotonic() < deadline, [r.getMessage() for r in caplog.records]
        time.sleep(0.02)
    return lines[0]


def test_a_silent_connection_is_closed(
    app: App, servers: list[ThreadedServer], caplog: pytest.LogCaptureFixture
) -> None:
    """A connection that sends nothing (a browser's spare one) is closed at the deadline and
    noted at INFO, not warned about: Chromium opens them on every page."""
    caplog.set_level(logging.INFO, logger="boardd.daemon.http_server")
    server = start(app, servers, head_timeout=HEAD)
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        opened = time.monotonic()
        assert read_until_closed(sock, trickle=False) == b""
        assert time.monotonic() - opened >= HEAD * 0.9
    line = wait_for_line(caplog, logging.INFO)
    assert "1 sent nothing within 0.5 s" in line, line
    assert closing_lines(caplog, logging.WARNING) == []


@pytest.mark.parametrize("after_a_response", [False, True])
def test_a_request_head_that_never_ends_is_answered_408(
    app: App,
    servers: list[ThreadedServer],
    after_a_response: bool,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="boardd.daemon.http_server")
    server = start(app, servers, head_timeout=HEAD)
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        if after_a_response:
            # A keep-alive connection: the keep-alive timeout stops at the next byte.
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            answer = b""
            while not answer.endswith(b'{"ok":true}'):
                answer += sock.recv(65536)
            assert answer.startswith(b"HTTP/1.1 200 ")
        opened = time.monotonic()
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        answer = read_until_closed(sock, trickle=True)
        waited = time.monotonic() - opened
    assert error_of(answer, 408)["code"] == "request_timeout"
    assert HEAD * 0.9 <= waited < HEAD + 5.0
    # A head begun and not finished is the client's fault: a warning.
    line = wait_for_line(caplog, logging.WARNING)
    assert "1 sent no whole request head within 0.5 s" in line, line


def test_a_whole_request_is_not_cut(app: App, servers: list[ThreadedServer]) -> None:
    # A request that takes longer than the head deadline once its head is in is the app's.
    server = start(app, servers, head_timeout=HEAD)
    with httpx.Client(base_url=server.url, trust_env=False, timeout=10.0) as client:
        holding = threading.Thread(target=lambda: client.get("/hold"))
        holding.start()
        deadline = time.monotonic() + 10.0
        while app.holding < 1:
            assert time.monotonic() < deadline, "the held request did not arrive"
            time.sleep(0.01)
        time.sleep(HEAD * 2)  # the head deadline passes while the app works
        app.release.set()
        holding.join(10.0)
        assert client.get("/").json() == {"ok": True}


@pytest.mark.parametrize(
    ("head", "status", "code"),
    [
        (b"GET /" + b"a" * 1_000_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414, "uri_too_long"),
        # Under the head's bound, over what the URL parser takes (it used to be a 400,
        # "malformed"): the same 414.
        (b"GET /?q=" + b"a" * 70_000 + b" HTTP/1.1\r\nHost: x\r\n\r\n", 414, "uri_too_long"),
        (
            b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 1_000_000 + b"\r\n\r\n",
            431,
            "header_too_large",
        ),
        (
            b"GET / HTTP/1.1\r\nHost: x\r\n" + b"X-Many: a\r\n" * 100_000 + b"\r\n",
            431,
            "header_too_large",
        ),
        (b"GET\x00 / HTTP/1.1\r\n\r\n", 400, "bad_request"),
    ],
    ids=["url", "url-past-the-parser", "header", "headers", "malformed"],
)
def test_heads_too_large_or_malformed_get_the_json_error_shape(
    app: App, servers: list[ThreadedServer], head: bytes, status: int, code: str
) -> None:
    server = start(app, servers)
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        with contextlib.suppress(OSError):  # the server may answer and close mid-way
            sock.sendall(head)
        answer = read_until_closed(sock, trickle=False)
    assert error_of(answer, status)["code"] == code


def test_a_head_under_the_bound_is_served(app: App, servers: list[ThreadedServer]) -> None:
    server = start(app, servers)
    with httpx.Client(base_url=server.url, trust_env=False, timeout=10.0) as client:
        # (httpx refuses URLs over 64 KiB.)
        url, header = "a" * 60_000, "b" * (MAX_HEAD_BYTES - 70_000)
        assert client.get(f"/{url}", headers={"x-big": header}).json() == {"ok": True}


def test_beyond_the_cap_the_longest_waiting_connection_makes_room(
    app: App, servers: list[ThreadedServer]
) -> None:
    server = start(app, servers, max_connections=4)
    stalled = [socket.create_connection(("127.0.0.1", server.port)) for _ in range(8)]
    try:
        for sock in stalled:
            sock.sendall(b"GET / HTTP/1.1\r\n")
        # The first four made room for the last four (closed, nothing sent).
        for sock in stalled[:4]:
            assert read_until_closed(sock, trickle=False) == b""
        with httpx.Client(base_url=server.url, trust_env=False, timeout=5.0) as client:
            assert client.get("/").json() == {"ok": True}
    finally:
        for sock in stalled:
            sock.close()


def test_when_every_connection_is_busy_a_new_one_gets_503(
    app: App, servers: list[ThreadedServer]
) -> None:
    server = start(app, servers, max_connections=2)
    clients = [httpx.Client(base_url=server.url, trust_env=False, timeout=10.0) for _ in range(2)]
    threads = [threading.Thread(target=c.get, args=("/hold",)) for c in clients]
    try:
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 10.0
        while app.holding < 2:
            assert time.monotonic() < deadline, "the held requests did not arrive"
            time.sleep(0.01)
        with socket.create_connection(("127.0.0.1", server.port)) as sock:
            answer = read_until_closed(sock, trickle=False)
        assert error_of(answer, 503)["code"] == "unavailable"
    finally:
        app.release.set()
        for thread in threads:
            thread.join(10.0)
        for client in clients:
            client.close()


def test_the_cap_leaves_half_the_descriptors_to_the_rest() -> None:
    assert connection_cap(1024) == 512
    assert connection_cap(65536) == 512
    assert connection_cap(100) == 50
    assert connection_cap(10) == 16
