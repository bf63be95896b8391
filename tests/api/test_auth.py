"""Bearer-token protection, the loopback default, and the query-size limit."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from boardd.api.app import create_app
from boardd.api.auth import MAX_QUERY_BYTES, Guard
from boardd.cli import ExitCode, main
from boardd.config import ExperimentSpec, is_loopback

TOKEN = "s3cret-token-0123456789"


def test_token_required_on_every_route(store: ExperimentSpec) -> None:
    with TestClient(create_app([store], token=TOKEN)) as client:
        for url in ["/api/v1/health", "/api/v1/runs", "/api/v1/scalars?plugin=scalars", "/x"]:
            r = client.get(url)
            assert r.status_code == 401, url
            assert r.json() == {
                "error": {"code": "unauthorized", "message": r.json()["error"]["message"]}
            }
            assert r.headers["www-authenticate"] == "Bearer"
        assert (
            client.get("/api/v1/health", headers={"authorization": "Bearer wrong"}).status_code
            == 401
        )
        assert client.get("/api/v1/health", headers={"authorization": TOKEN}).status_code == 401
        ok = client.get("/api/v1/health", headers={"authorization": f"Bearer {TOKEN}"})
        assert ok.status_code == 200


def test_no_token_means_open(store: ExperimentSpec) -> None:
    with TestClient(create_app([store])) as client:
        assert client.get("/api/v1/health").status_code == 200


def test_query_string_is_bounded() -> None:
    # HTTP clients refuse such URLs themselves, so the ASGI app is called directly.
    reached: list[bool] = []

    async def inner(scope: object, receive: object, send: object) -> None:
        reached.append(True)

    sent: list[dict[str, object]] = []

    async def send(message: dict[str, object]) -> None:
        sent.append(message)

    async def receive() -> dict[str, object]:
        return {"type": "http.request", "body": b""}

    scope = {"type": "http", "query_string": b"run=x&" * (MAX_QUERY_BYTES // 6 + 1), "headers": []}
    asyncio.run(Guard(inner, None)(scope, receive, send))  # type: ignore[arg-type]
    assert not reached
    assert sent[0]["status"] == 413
    assert json.loads(sent[1]["body"])["error"]["code"] == "too_large"  # type: ignore[arg-type]


def test_loopback_detection() -> None:
    for host in ["127.0.0.1", "127.1.2.3", "::1", "[::1]", "localhost"]:
        assert is_loopback(host), host
    for host in ["0.0.0.0", "::", "192.168.1.5", "example.org"]:
        assert not is_loopback(host), host


def test_serve_refuses_a_public_host_without_token(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logdir = tmp_path / "logs"
    logdir.mkdir()
    code = main(["serve", str(logdir), "--db", str(tmp_path / "s.sqlite"), "--host", "0.0.0.0"])
    assert code == ExitCode.USAGE
    assert "--token-file" in capsys.readouterr().err


def test_short_token_file_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    logdir = tmp_path / "logs"
    logdir.mkdir()
    token_file = tmp_path / "token"
    token_file.write_text("short\n")
    code = main(["serve", str(logdir), "--token-file", str(token_file), "--port", "0"])
    assert code == ExitCode.USAGE
    assert "at least 16" in capsys.readouterr().err
