"""Request bodies over a route's limit are refused with 413 in the API's envelope, before
they are read when their length is declared, and as soon as they pass it when chunked: a client
cannot make the server hold a body larger than the route takes."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import httpx
import pytest

from boardd.api import bodies
from boardd.api.app import create_app
from boardd.config import ExperimentSpec
from boardd.lineage import LineageService
from tests.conftest import WAIT, ThreadedServer

#: (path, the route's limit, extra headers): one route of each kind that reads a body.
BODY_ROUTES = [
    ("/api/v1/hparams/session_groups", 1 << 20, {}),
    ("/api/v1/metadata/get_artifacts", 8 << 20, {}),
    ("/data/plugin/hparams/session_groups", bodies.MAX_BODY_BYTES, {}),
    ("/data/plugin/timeseries/timeSeries", bodies.MAX_BODY_BYTES, {"x-xsrf-protected": "1"}),
    ("/data/plugin/scalars/scalars_multirun", bodies.MAX_BODY_BYTES, {"x-xsrf-protected": "1"}),
]


@pytest.fixture(scope="module")
def lineage_server(
    spec_all: ExperimentSpec, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ThreadedServer]:
    service = LineageService(tmp_path_factory.mktemp("lineage") / "lineage.sqlite", [spec_all])
    server = ThreadedServer(create_app([spec_all], lineage=service)).start()
    yield server
    server.stop()
    service.close()


def _head(path: str, headers: dict[str, str]) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _response(sock: socket.socket) -> tuple[int, dict[str, str], bytes]:
    """Status, headers and body of the answer on ``sock`` (read until it is complete)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, data
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines)}
    length = int(headers["content-length"])
    while len(rest) < length:
        chunk = sock.recv(65536)
        assert chunk
        rest += chunk
    return int(status_line.split()[1]), headers, rest[:length]


def _assert_too_large(answer: tuple[int, dict[str, str], bytes], limit: int) -> None:
    status, headers, body = answer
    assert status == 413, body
    assert headers["content-type"].startswith("application/json")
    error = json.loads(body)["error"]
    assert error["code"] == "too_large"
    assert f"{limit} bytes" in error["message"]


@pytest.mark.parametrize(("path", "limit", "extra"), BODY_ROUTES)
def test_declared_body_over_the_limit_is_refused_unread(
    lineage_server: ThreadedServer, path: str, limit: int, extra: dict[str, str]
) -> None:
    # Only the head is sent: the answer must come without waiting for the body.
    headers = {"content-type": "application/x-www-form-urlencoded", **extra}
    headers["content-length"] = str(limit + 1)
    with socket.create_connection(("127.0.0.1", lineage_server.port), timeout=WAIT) as sock:
        sock.sendall(_head(path, headers))
        _assert_too_large(_response(sock), limit)


@pytest.mark.parametrize(("path", "limit", "extra"), BODY_ROUTES)
def test_chunked_body_is_refused_once_past_the_limit(
    lineage_server: ThreadedServer, path: str, limit: int, extra: dict[str, str]
) -> None:
    # A chunked body that never ends: the server answers once it has passed the limit.
    headers = {
        "content-type": "application/x-www-form-urlencoded",
        "transfer-encoding": "chunked",
        **extra,
    }
    chunk = b"x" * 65536
    framed = b"%x\r\n%s\r\n" % (len(chunk), chunk)
    with socket.create_connection(("127.0.0.1", lineage_server.port), timeout=WAIT) as sock:
        sock.sendall(_head(path, headers))
        for _ in range(limit // len(chunk) + 1):
            sock.sendall(framed)
        _assert_too_large(_response(sock), limit)


def test_the_limit_is_exact_and_bodies_within_it_are_read(lineage_server: ThreadedServer) -> None:
    limit = bodies.MAX_BODY_BYTES
    at_limit = b"{}" + b" " * (limit - 2)
    with httpx.Client(base_url=lineage_server.url, timeout=WAIT, trust_env=False) as client:
        answer = client.post("/data/plugin/hparams/session_groups", content=at_limit)
        assert answer.status_code == 200, answer.text
        over = client.post("/data/plugin/hparams/session_groups", content=at_limit + b" ")
        assert over.status_code == 413, over.text
        answer = client.post(
            "/data/plugin/scalars/scalars_multirun",
            data={"tag": "loss", "runs": ["train", "eval"]},
            headers={"x-xsrf-protected": "1"},
        )
        assert answer.status_code == 200, answer.text
        assert set(answer.json()) == {"train", "eval"}
