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
from boardd.config import (
    LOOPBACK_FRAME_ANCESTORS,
    ExperimentSpec,
    SettingsError,
    host_policy,
    is_loopback,
    parse_frame_ancestors,
)

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


def test_host_policy_names() -> None:
    loopback = host_policy("127.0.0.1")
    assert loopback is not None and not loopback.any_address
    assert loopback.names == {b"localhost", b"127.0.0.1", b"[::1]"}
    for name in [b"LOCALHOST", b"localhost.", b"a.b.localhost", b"127.0.0.2", b"[::1]"]:
        assert loopback.allows(name), name
    for name in [b"evil.example", b"localhost.evil.example", b"10.0.0.1", b"[2001:db8::1]", b""]:
        assert not loopback.allows(name), name

    ipv6 = host_policy("::1", ["Boards.Example.org.", "[2001:DB8::1]", "10.0.0.1"])
    assert ipv6 is not None
    assert {b"[::1]", b"boards.example.org", b"[2001:db8::1]", b"10.0.0.1"} <= ipv6.names

    everywhere = host_policy("0.0.0.0")
    assert everywhere is not None and everywhere.any_address
    assert everywhere.allows(b"192.0.2.1") and everywhere.allows(b"[2001:db8::1]")
    assert not everywhere.allows(b"evil.example")

    assert host_policy("127.0.0.1", ["*"]) is None
    for bad in ["http://x.example", "x.example:80", "a b", "x..example", "/x"]:
        with pytest.raises(SettingsError, match="--allowed-host"):
            host_policy("127.0.0.1", [bad])


def test_frame_ancestors_parsing() -> None:
    assert parse_frame_ancestors([]) == LOOPBACK_FRAME_ANCESTORS
    assert parse_frame_ancestors(["https://hub.example.org/", "http://10.0.0.5:*"]) == (
        *LOOPBACK_FRAME_ANCESTORS,
        "https://hub.example.org",
        "http://10.0.0.5:*",
    )
    assert parse_frame_ancestors(["https://a.example", "*"]) == ("*",)
    for bad in ["hub.example.org", "http://[::1]:8888", "https://a.example/path", "https://a b"]:
        with pytest.raises(SettingsError, match="--frame-ancestor"):
            parse_frame_ancestors([bad])
