"""boardd's HTTP/1.1 server (daemon/http_server.py, daemon/http_protocol.py) speaking to real
sockets: framing (chunked, HEAD, 100-continue, request bodies), keep-alive and its timeout,
pipelining, the client's disconnect reaching a streaming app, write flow control, the ASGI
lifespan and a graceful stop. The server runs in a thread (tests/conftest.py ThreadedServer)
over small ASGI apps written here."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from boardd.daemon.http_server import Server, server_config
from tests.conftest import ThreadedServer
from tests.daemon.conftest import SRC, ServeFactory

Scope = dict[str, Any]

#: The chunks /chunks sends (no content-length: the server frames them).
CHUNKS = [b"first ", b"", b"second ", b"third"]
#: Bytes /big sends, in 1 MiB parts: more than the kernel's socket buffers hold.
BIG = 32 * 2**20


class App:
    """Routes by path; records what the server handed it."""

    def __init__(self) -> None:
        self.order: list[str] = []
        self.running = 0
        self.most_running = 0
        self.disconnected = threading.Event()
        self.streaming = threading.Event()
        self.release = threading.Event()
        self.sent_all_at: float | None = None
        self.state_seen: list[Any] = []

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (message := await receive())["type"] != "lifespan.shutdown":
                assert message["type"] == "lifespan.startup"
                scope["state"]["greeting"] = "hello"
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        path = scope["path"]
        self.order.append(path)
        self.running += 1
        self.most_running = max(self.most_running, self.running)
        try:
            await self._route(path, scope, receive, send)
        finally:
            self.running -= 1

    async def _route(self, path: str, scope: Scope, receive: Any, send: Any) -> None:
        if path == "/chunks":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            for chunk in CHUNKS:
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        elif path == "/echo":
            body = b""
            parts = 0
            while True:
                message = await receive()
                assert message["type"] == "http.request"
                body += message["body"]
                parts += 1
                if not message["more_body"]:
                    break
            await respond(send, json.dumps({"length": len(body), "body": body.decode()}))
        elif path == "/stream":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"data: 1\n\n", "more_body": True})
            self.streaming.set()
            assert (await receive())["type"] == "http.request"
            # What Starlette's StreamingResponse does meanwhile: wait for the disconnect.
            if (await receive())["type"] == "http.disconnect":
                self.disconnected.set()
        elif path == "/big":
            await send(
                {
                    "type": "http.response.start",
                    "status": 200,
                    "headers": [(b"content-length", str(BIG).encode())],
                }
            )
            part = b"x" * 2**20
            for _ in range(BIG // len(part)):
                await send({"type": "http.response.body", "body": part, "more_body": True})
            self.sent_all_at = time.monotonic()
            await send({"type": "http.response.body", "body": b""})
        elif path == "/hold":
            while not self.release.is_set():
                await asyncio.sleep(0.01)
            await respond(send, "released")
        elif path == "/state":
            self.state_seen.append(dict(scope["state"]))
            await respond(send, scope["state"]["greeting"])
        elif path == "/fail":
            raise RuntimeError("the app fails")
        else:
            await asyncio.sleep(0.02)  # long enough for pipelined requests to overlap
            await respond(send, f"{scope['method']} {path}?{scope['query_string'].decode()}")


async def respond(send: Any, text: str) -> None:
    body = text.encode()
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [
                (b"content-type", b"text/plain"),
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


def read_response(sock: socket.socket, buffered: bytearray) -> tuple[bytes, dict[str, str], bytes]:
    """One response from ``sock`` (its head's first line, headers, raw body), framed by its
    content-length or chunked encoding; bytes after it stay in ``buffered``."""
    sock.settimeout(5.0)

    def fill() -> None:
        chunk = sock.recv(65536)
        assert chunk, f"the connection closed; had {bytes(buffered)!r}"
        buffered.extend(chunk)

    while b"\r\n\r\n" not in buffered:
        fill()
    head, _, rest = bytes(buffered).partition(b"\r\n\r\n")
    buffered[:] = rest
    line, *lines = head.decode("latin-1").split("\r\n")
    headers = dict(h.lower().split(": ", 1) for h in lines)
    if "content-length" in headers:
        size = int(headers["content-length"])
        while len(buffered) < size:
            fill()
        body = bytes(buffered[:size])
        buffered[:] = buffered[size:]
        return line.encode(), headers, body
    assert headers.get("transfer-encoding") == "chunked", headers
    body = b""
    while True:
        while b"\r\n" not in buffered:
            fill()
        size_line, _, rest = bytes(buffered).partition(b"\r\n")
        size = int(size_line, 16)
        while len(rest) < size + 2:
            fill()
            size_line, _, rest = bytes(buffered).partition(b"\r\n")
        body += rest[:size]
        assert rest[size : size + 2] == b"\r\n"
        buffered[:] = rest[size + 2 :]
        if size == 0:
            return line.encode(), headers, body


def closed_within(sock: socket.socket, seconds: float) -> bool:
    """Whether the server closes ``sock`` within ``seconds`` (it sends nothing meanwhile)."""
    sock.settimeout(seconds)
    try:
        return sock.recv(1) == b""
    except TimeoutError:
        return False
    except ConnectionResetError:
        return True


def test_a_body_of_unknown_length_is_sent_chunked(app: App, servers: list[ThreadedServer]) -> None:
    server = start(app, servers)
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        buffered = bytearray()
        for _ in range(2):  # the connection stays usable after a chunked response
            sock.sendall(b"GET /chunks HTTP/1.1\r\nHost: x\r\n\r\n")
            line, headers, body = read_response(sock, buffered)
            assert line.startswith(b"HTTP/1.1 200 ")
            assert headers["transfer-encoding"] == "chunked"
            assert "content-length" not in headers
            assert body == b"".join(CHUNKS)
    # An HTTP/1.0 client knows no chunks: the body ends where the connection does.
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(b"GET /chunks HTTP/1.0\r\n\r\n")
        answer = b""
        sock.settimeout(5.0)
        while chunk := sock.recv(65536):
            answer += chunk
        head, _, body = answer.partition(b"\r\n\r\n")
        assert b"transfer-encoding" not in head.lower() and b"connection: close" in head
        assert body == b"".join(CHUNKS)


def test_head_gets_the_headers_and_no_body(app: App, servers: list[ThreadedServer]) -> None:
    server = start(app, servers)
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(b"HEAD /x HTTP/1.1\r\nHost: x\r\n\r\n")
        sock.settimeout(5.0)
        answer = b""
        while b"\r\n\r\n" not in answer:
            answer += sock.recv(65536)
        head, _, after = answer.partition(b"\r\n\r\n")
        assert head.startswith(b"HTTP/1.1 200 ")
        assert b"content-length: 8" in head.split(b"\r\n")  # the app's: "HEAD /x?"
        assert after == b""
        # Nothing follows the head: the next answer on the connection is the next request's.
        sock.sendall(b"GET /x?again HTTP/1.1\r\nHost: x\r\n\r\n")
        buffered = bytearray()
        line, _, body = read_response(sock, buffered)
        assert line.startswith(b"HTTP/1.1 200 ") and body == b"GET /x?again"


def test_expect_100_continue_is_answered_before_the_body(
    app: App, servers: list[ThreadedServer]
) -> None:
    server = start(app, servers)
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(
            b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"
        )
        sock.settimeout(5.0)
        interim = b""
        while b"\r\n\r\n" not in interim:
            interim += sock.recv(65536)
        assert interim == b"HTTP/1.1 100 Continue\r\n\r\n"
        sock.sendall(b"hello")
        line, _, body = read_response(sock, bytearray())
        assert line.startswith(b"HTTP/1.1 200 ")
        assert json.loads(body) == {"length": 5, "body": "hello"}


def test_request_bodies_arrive_whole_chunked_or_not(
    app: App, servers: list[ThreadedServer]
) -> None:
    server = start(app, servers)
    payload = "abc" * 100_000  # over the read buffer's high-water mark: reading pauses
    with httpx.Client(base_url=server.url, trust_env=False, timeout=10.0) as client:
        answer = client.post("/echo", content=payload.encode())
        assert answer.json() == {"length": len(payload), "body": payload}

        def parts() -> Iterator[bytes]:
            yield b"one,"
            yield b"two"

        answer = client.post("/echo", content=parts())  # transfer-encoding: chunked
        assert answer.json() == {"length": 7, "body": "one,two"}


def test_an_answer_before_the_body_is_read_ends_the_connection(
    app: App, servers: list[ThreadedServer]
) -> None:
    # An app that answers without reading the body (a 413 for a body over a limit does):
    # the rest of the body must not be read as the next request's head.
    server = start(app, servers)
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        size = 3 * 2**20
        sock.sendall(
            f"POST /unread HTTP/1.1\r\nhost: x\r\ncontent-length: {size}\r\n\r\n".encode()
            + b"x" * 200_000
        )
        buffered = bytearray()
        line, headers, body = read_response(sock, buffered)
        assert line == b"HTTP/1.1 200 OK" and body == b"POST /unread?"
        assert headers.get("connection") == "close", headers
        assert closed_within(sock, 5.0)
    # The server goes on answering others.
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(b"GET /again HTTP/1.1\r\nhost: x\r\n\r\n")
        line, _headers, body = read_response(sock, bytearray())
        assert line == b"HTTP/1.1 200 OK" and body == b"GET /again?"


def test_pipelined_requests_are_answered_one_at_a_time_in_order(
    app: App, servers: list[ThreadedServer]
) -> None:
    server = start(app, servers)
    paths = [f"/p{i}" for i in range(5)]
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(b"".join(f"GET {p} HTTP/1.1\r\nHost: x\r\n\r\n".encode() for p in paths))
        buffered = bytearray()
        bodies = [read_response(sock, buffered)[2] for _ in paths]
    assert bodies == [f"GET {p}?".encode() for p in paths]
    assert app.order == paths
    assert app.most_running == 1


def test_keep_alive_ends_after_its_idle_timeout(
    app: App, servers: list[ThreadedServer], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="boardd.daemon.http_server")
    server = start(app, servers, keep_alive=0.5, head_timeout=30.0)
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        buffered = bytearray()
        sock.sendall(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
        read_response(sock, buffered)
        # Within the timeout the connection serves again ...
        time.sleep(0.25)
        sock.sendall(b"GET /b HTTP/1.1\r\nHost: x\r\n\r\n")
        assert read_response(sock, buffered)[2] == b"GET /b?"
        answered = time.monotonic()
        # ... and once silent that long after a response, it is closed.
        assert closed_within(sock, 5.0)
        assert 0.4 <= time.monotonic() - answered < 3.0
    # Keep-alive ending is no dropped connection: no summary line.
    time.sleep(0.2)
    assert not [r for r in caplog.records if "closed by the server" in r.getMessage()]


def test_the_client_leaving_reaches_a_streaming_app(
    app: App, servers: list[ThreadedServer]
) -> None:
    server = start(app, servers)
    sock = socket.create_connection(("127.0.0.1", server.port))
    try:
        sock.sendall(b"GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")
        sock.settimeout(5.0)
        assert sock.recv(65536).startswith(b"HTTP/1.1 200 ")
        assert app.streaming.wait(5.0)
        assert not app.disconnected.is_set()
    finally:
        sock.close()
    closed = time.monotonic()
    assert app.disconnected.wait(5.0), "the app never saw http.disconnect"
    assert time.monotonic() - closed < 1.0


def test_writes_wait_for_a_slow_reader(app: App, servers: list[ThreadedServer]) -> None:
    server = start(app, servers)
    with socket.create_connection(("127.0.0.1", server.port)) as sock:
        sock.sendall(b"GET /big HTTP/1.1\r\nHost: x\r\n\r\n")
        time.sleep(1.0)  # not reading: the app's sends must wait for the transport to drain
        assert app.sent_all_at is None, "the whole body was buffered in the server"
        sock.settimeout(10.0)
        received = 0
        head = b""
        while b"\r\n\r\n" not in head:
            head += sock.recv(65536)
        received = len(head.partition(b"\r\n\r\n")[2])
        while received < BIG:
            chunk = sock.recv(2**20)
            assert chunk
            received += len(chunk)
        assert received == BIG
    deadline = time.monotonic() + 5.0
    while app.sent_all_at is None:  # the server's thread notes it after its last write
        assert time.monotonic() < deadline, "the app's sends never finished"
        time.sleep(0.01)


def test_lifespan_state_reaches_each_request(app: App, servers: list[ThreadedServer]) -> None:
    server = start(app, servers)
    with httpx.Client(base_url=server.url, trust_env=False, timeout=10.0) as client:
        assert client.get("/state").text == "hello"
        assert client.get("/state").text == "hello"
    assert app.state_seen == [{"greeting": "hello"}] * 2


def test_an_app_failure_is_a_500_and_a_log_line(
    app: App, servers: list[ThreadedServer], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="boardd.daemon.http_server")
    server = start(app, servers)
    with httpx.Client(base_url=server.url, trust_env=False, timeout=10.0) as client:
        answer = client.get("/fail")
        assert answer.status_code == 500 and answer.text == "Internal Server Error"
        assert client.get("/after").text == "GET /after?"  # the server goes on
    assert any("GET /fail" in r.getMessage() and r.exc_info for r in caplog.records)


def test_stopping_lets_a_request_in_flight_finish(app: App, servers: list[ThreadedServer]) -> None:
    server = start(app, servers)
    with httpx.Client(base_url=server.url, trust_env=False, timeout=10.0) as client:
        answers: list[httpx.Response] = []
        holding = threading.Thread(target=lambda: answers.append(client.get("/hold")))
        holding.start()
        deadline = time.monotonic() + 5.0
        while app.order != ["/hold"]:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        server.server.should_exit = True
        time.sleep(0.3)
        # No new connection is accepted once stopping ...
        with pytest.raises(OSError), socket.create_connection(("127.0.0.1", server.port), 1):
            pass
        # ... and the request in flight is answered.
        app.release.set()
        holding.join(5.0)
        assert [a.text for a in answers] == ["released"]
    server.stop()


def test_a_request_past_the_graceful_time_is_cut(
    app: App, servers: list[ThreadedServer], caplog: pytest.LogCaptureFixture
) -> None:
    server = start(app, servers)
    sock = socket.create_connection(("127.0.0.1", server.port))
    try:
        sock.sendall(b"GET /hold HTTP/1.1\r\nHost: x\r\n\r\n")
        deadline = time.monotonic() + 5.0
        while app.order != ["/hold"]:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        stopping = time.monotonic()
        server.stop()  # graceful=1.0
        assert 0.9 <= time.monotonic() - stopping < 4.0
        assert closed_within(sock, 2.0)
    finally:
        sock.close()
    assert any("still running" in r.getMessage() for r in caplog.records)


class FailingStart:
    """An app whose lifespan's start-up fails."""

    def __init__(self, how: str) -> None:
        self.how = how

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        assert scope["type"] == "lifespan"
        await receive()
        if self.how == "raise":
            raise OSError("the cache directory is gone")
        await send({"type": "lifespan.startup.failed", "message": "no stores"})


@pytest.mark.parametrize(
    ("how", "said"), [("raise", "the cache directory is gone"), ("message", "no stores")]
)
def test_a_failed_start_up_serves_nothing(
    how: str, said: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="boardd.daemon.http_server")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(8)
        server = Server(server_config(FailingStart(how)))
        server.run([sock])  # returns at once
        assert not server.started
    messages = [r.getMessage() for r in caplog.records]
    assert any("start-up failed" in m and said in m for m in messages), messages


#: Installed in the daemon's interpreter through sitecustomize: the app's lifespan fails.
_FAILING_LIFESPAN = """\
import boardd.api.app as app_module

_create_app = app_module.create_app


def create_app(*args, **kwargs):
    app = _create_app(*args, **kwargs)

    async def failing(scope, receive, send):
        if scope["type"] == "lifespan":
            await receive()
            await send({"type": "lifespan.startup.failed", "message": "the stores cannot open"})
            return
        await app(scope, receive, send)

    return failing


app_module.create_app = create_app
"""


def test_serve_exits_non_zero_when_the_app_cannot_start(
    serve: ServeFactory, tmp_path: Path
) -> None:
    logdir = tmp_path / "logs"
    (logdir / "run").mkdir(parents=True)
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(_FAILING_LIFESPAN)
    daemon = serve(logdir, env={"PYTHONPATH": f"{hook}{os.pathsep}{SRC}"}, wait=False)
    rc = daemon.proc.wait(30)
    assert rc != 0
    log = daemon.stderr()
    assert "the app's start-up failed: the stores cannot open" in log, log
    assert "the HTTP server failed to start" in log, log
