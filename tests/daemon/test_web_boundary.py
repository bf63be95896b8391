"""What keeps web pages out of ``boardd serve`` on loopback (a page in the browser runs on this
machine too): the Host names it answers to (DNS rebinding), the pages that may frame its UIs,
the token's file and the login URL kept out of logs, and the bearer scheme in any case. Real
subprocesses, real HTTP."""

from __future__ import annotations

import os
import pty
import re
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from tensorboardX import SummaryWriter

from tests.daemon.conftest import START_TIMEOUT, Daemon, ServeFactory, boardd_env, wait_until

TOKEN = "boundary-test-token-0123456789abcdef"
#: What every page may be framed by unless more origins are given.
LOOPBACK_ANCESTORS = "frame-ancestors 'self' http://localhost:* http://127.0.0.1:*"


@pytest.fixture
def logdir(tmp_path: Path) -> Path:
    root = tmp_path / "logs"
    with SummaryWriter(str(root / "train")) as w:
        for step in range(3):
            w.add_scalar("loss", 1.0 / (step + 1), step)
    return root


def client(daemon: Daemon, **kwargs: object) -> httpx.Client:
    return httpx.Client(
        base_url=f"http://127.0.0.1:{daemon.port}",
        timeout=30.0,
        trust_env=False,
        **kwargs,  # type: ignore[arg-type]
    )


def status_with_host(daemon: Daemon, host: str, path: str = "/api/v1/health") -> int:
    with client(daemon) as c:
        return c.get(path, headers={"host": host}).status_code


def raw_get(port: int, head: bytes) -> bytes:
    """The answer to one raw request head (the server closes after an HTTP/1.0 answer)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10.0) as sock:
        sock.sendall(head)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


def test_only_the_names_of_this_server_are_answered(serve: ServeFactory, logdir: Path) -> None:
    daemon = serve(logdir)
    port = daemon.port
    # A page of evil.example whose name now resolves to 127.0.0.1 (DNS rebinding): refused,
    # saying which flag would allow the name.
    for path in ["/api/v1/health", "/api/v1/runs", "/", "/tensorboard/", "/tensorboard/data/runs"]:
        for host in ["evil.example", f"evil.example:{port}", "127.0.0.1.evil.example"]:
            with client(daemon) as c:
                r = c.get(path, headers={"host": host})
            assert r.status_code == 421, (path, host)
            error = r.json()["error"]
            assert error["code"] == "misdirected"
            assert "--allowed-host evil.example" in error["message"] or (
                "--allowed-host 127.0.0.1.evil.example" in error["message"]
            )
    # The names the server is reachable as, with or without a port, in any case.
    for host in [
        f"127.0.0.1:{port}",
        "127.0.0.1",
        "127.9.8.7",
        f"localhost:{port}",
        "LocalHost",
        "localhost.",
        f"boardd.localhost:{port}",
        f"[::1]:{port}",
        "[::1]",
    ]:
        assert status_with_host(daemon, host) == 200, host
    # HTTP/1.0 without a Host header: nothing a browser sends, answered.
    answer = raw_get(port, b"GET /api/v1/health HTTP/1.0\r\n\r\n")
    assert answer.split(b"\r\n", 1)[0].endswith(b" 200 OK"), answer[:200]
    answer = raw_get(port, b"GET /api/v1/health HTTP/1.0\r\nHost: evil.example\r\n\r\n")
    assert b" 421 " in answer.split(b"\r\n", 1)[0], answer[:200]


def test_allowed_host_adds_names(serve: ServeFactory, logdir: Path) -> None:
    daemon = serve(logdir, "--allowed-host", "Boardd.Example.org", "--allowed-host", "10.1.2.3")
    assert status_with_host(daemon, "boardd.example.org") == 200
    assert status_with_host(daemon, f"BOARDD.example.org:{daemon.port}") == 200
    assert status_with_host(daemon, "10.1.2.3:80") == 200
    assert status_with_host(daemon, "localhost") == 200
    assert status_with_host(daemon, "other.example.org") == 421
    assert status_with_host(daemon, "10.1.2.4") == 421

    anything = serve(logdir, "--allowed-host", "*")
    assert status_with_host(anything, "evil.example") == 200


def test_on_every_interface_the_machine_name_and_addresses(
    serve: ServeFactory, logdir: Path
) -> None:
    daemon = serve(logdir, "--host", "0.0.0.0", "--insecure")
    name = socket.gethostname()
    assert status_with_host(daemon, name) == 200
    assert status_with_host(daemon, f"{name}:{daemon.port}") == 200
    # Any address: only a name can be rebound, and addresses may change while it runs.
    assert status_with_host(daemon, "192.0.2.7") == 200
    assert status_with_host(daemon, "[2001:db8::7]:80") == 200
    assert status_with_host(daemon, "evil.example") == 421


def test_bad_allowed_host_or_frame_ancestor_is_refused(
    serve: ServeFactory, logdir: Path, tmp_path: Path
) -> None:
    for flag, value in [
        ("--allowed-host", "http://x.example"),
        ("--allowed-host", "x.example:80"),
        ("--frame-ancestor", "notebooks.example.org"),
        ("--frame-ancestor", "https://x.example; script-src *"),
        ("--frame-ancestor", "http://[::1]:8888"),
        ("--frame-ancestor", "https://x.example/path"),
    ]:
        done = subprocess.run(
            [sys.executable, "-m", "boardd", "serve", str(logdir), flag, value, "--port", "0"],
            env=boardd_env(STATE_DIRECTORY=str(tmp_path / "state")),
            capture_output=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 2, (flag, value, done.stderr)
        assert flag in done.stderr.decode(), done.stderr


def test_bearer_scheme_in_any_case(serve: ServeFactory, logdir: Path, tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    token_file.chmod(0o600)
    daemon = serve(logdir, "--token-file", token_file)
    with client(daemon) as c:
        for scheme in ["Bearer", "bearer", "BEARER", "bEaReR"]:
            r = c.get("/api/v1/health", headers={"authorization": f"{scheme} {TOKEN}"})
            assert r.status_code == 200, scheme
        for value in [f"Basic {TOKEN}", f"bearer {TOKEN}x", "bearer", TOKEN, f"bearer{TOKEN}"]:
            r = c.get("/api/v1/health", headers={"authorization": value})
            assert r.status_code == 401, value


def frame_ancestors_of(policy: str) -> list[str]:
    return [d.strip() for d in policy.split(";") if d.strip().startswith("frame-ancestors")]


def test_pages_may_be_framed_by_loopback_origins_only(serve: ServeFactory, logdir: Path) -> None:
    daemon = serve(logdir)
    with client(daemon) as c:
        dashboard = c.get("/")
        assert dashboard.status_code == 200
        policy = dashboard.headers["content-security-policy"]
        assert frame_ancestors_of(policy) == [LOOPBACK_ANCESTORS]
        assert "script-src 'self'" in policy  # the page's own policy is kept
        for path in ["/tensorboard/", "/tensorboard/index.html"]:
            ui = c.get(path)
            assert ui.status_code == 200, path
            policy = ui.headers["content-security-policy"]
            assert frame_ancestors_of(policy) == [LOOPBACK_ANCESTORS], path
            assert "default-src 'self'" in policy  # TensorBoard's own policy is kept
            assert len(ui.headers.get_list("content-security-policy")) == 1


def test_frame_ancestor_adds_origins(serve: ServeFactory, logdir: Path) -> None:
    daemon = serve(
        logdir,
        "--frame-ancestor",
        "https://notebooks.example.org/",
        "--frame-ancestor",
        "http://10.0.0.5:8888",
    )
    with client(daemon) as c:
        for path in ["/", "/tensorboard/"]:
            policy = c.get(path).headers["content-security-policy"]
            assert frame_ancestors_of(policy) == [
                f"{LOOPBACK_ANCESTORS} https://notebooks.example.org http://10.0.0.5:8888"
            ], path
    anyone = serve(logdir, "--frame-ancestor", "*")
    with client(anyone) as c:
        policy = c.get("/").headers["content-security-policy"]
        assert frame_ancestors_of(policy) == ["frame-ancestors *"]


def test_a_token_file_others_can_read_is_warned_about(
    serve: ServeFactory, logdir: Path, tmp_path: Path
) -> None:
    shared = tmp_path / "shared-token"
    shared.write_text(TOKEN)
    shared.chmod(0o644)
    daemon = serve(logdir, "--token-file", shared)
    warning = re.search(r"WARNING .*--token-file .*", daemon.stderr())
    assert warning, daemon.stderr()
    assert "readable by its group and others (mode 644)" in warning.group(0)
    assert f"chmod 600 {shared}" in warning.group(0)
    daemon.stop()

    private = tmp_path / "private-token"
    private.write_text(TOKEN)
    private.chmod(0o600)
    daemon = serve(logdir, "--token-file", private)
    assert "--token-file" not in daemon.stderr()


def test_the_log_names_the_token_file_not_the_token(
    serve: ServeFactory, logdir: Path, tmp_path: Path
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    token_file.chmod(0o600)
    daemon = serve(logdir, "--token-file", token_file)
    log = daemon.stderr()
    assert TOKEN not in log
    base = f"http://127.0.0.1:{daemon.port}"
    assert f"open {base}/login?token=TOKEN with TOKEN the token in {token_file} " in log, log


def test_a_terminal_gets_the_login_url_with_the_token(logdir: Path, tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN)
    token_file.chmod(0o600)
    port_file = tmp_path / "port"
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "boardd",
            "serve",
            str(logdir),
            "--token-file",
            str(token_file),
            "--port",
            "0",
            "--port-file",
            str(port_file),
        ],
        env=boardd_env(STATE_DIRECTORY=str(tmp_path / "state")),
        stdin=subprocess.DEVNULL,
        stdout=follower,
        stderr=follower,
    )
    os.close(follower)
    seen = b""
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while b"listening on" not in seen and time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 0.5)
            if ready:
                try:
                    seen += os.read(leader, 65536)
                except OSError:  # the process ended: the pty is closed
                    break
        while not port_file.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        port = int(port_file.read_text())
        # Serving (its signal handlers set) before the SIGTERM below.
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", trust_env=False) as c:
            wait_until(lambda: c.get("/api/v1/health").status_code == 401, what="the first answer")
        text = seen.decode(errors="replace")
        assert f"open http://127.0.0.1:{port}/login?token={TOKEN} " in text, text
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            os.close(leader)
    assert proc.returncode == 0
