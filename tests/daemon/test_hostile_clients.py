"""``boardd serve`` under hostile HTTP clients: a real subprocess held at systemd's default
descriptor limit (1,024), real sockets that open a request and never finish it."""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
from tensorboard.compat.proto import event_pb2
from tensorboard.summary.writer.event_file_writer import EventFileWriter

from tests.daemon.conftest import ServeFactory, wait_until

#: systemd's default soft (and here also hard) RLIMIT_NOFILE.
NOFILE = 1024
#: More hostile connections than the daemon has descriptors.
ATTACKERS = 1100
#: The start of a request whose head never ends (no blank line).
PARTIAL = b"GET /api/v1/health HTTP/1.1\r\nHost: boardd\r\nX-Slow: "


def write_points(writer: EventFileWriter, steps: range) -> None:
    """Scalars ``step / 10`` of tag ``loss`` at ``steps``, flushed to the file."""
    for step in steps:
        event = event_pb2.Event(step=step, wall_time=1_700_000_000.0 + step)
        event.summary.value.add(tag="loss", simple_value=step / 10)
        writer.add_event(event)
    writer.flush()


@contextlib.contextmanager
def partial_requests(port: int, count: int) -> Iterator[list[socket.socket]]:
    """``count`` connections to the daemon, each holding a request head it never finishes."""
    held: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.settimeout(5.0)
            sock.connect(("127.0.0.1", port))
            with contextlib.suppress(OSError):  # the daemon may already have let it go
                sock.sendall(PARTIAL)
            held.append(sock)
        yield held
    finally:
        for sock in held:
            sock.close()


def test_a_thousand_partial_requests_stall_neither_http_nor_ingest(
    serve: ServeFactory, tmp_path: Path
) -> None:
    logdir = tmp_path / "logs"
    (logdir / "train").mkdir(parents=True)
    writer = EventFileWriter(str(logdir / "train"), flush_secs=3600)
    write_points(writer, range(3))
    daemon = serve(
        logdir,
        "--db",
        tmp_path / "store.sqlite",
        prefix=["prlimit", f"--nofile={NOFILE}:{NOFILE}", "--"],
    )
    daemon.wait_for_state("live")
    daemon.wait_for_steps("train", "loss", range(3))
    log_before = daemon.stderr().count("\n")

    with partial_requests(daemon.port, ATTACKERS) as held:
        assert len(held) == ATTACKERS
        # A well-behaved client on a fresh connection is answered at once, ...
        started = time.monotonic()
        with httpx.Client(
            base_url=f"http://127.0.0.1:{daemon.port}", timeout=5.0, trust_env=False
        ) as client:
            response = client.get("/api/v1/health")
            assert response.status_code == 200, response.text
            assert time.monotonic() - started < 5.0
            # ... and a point written during the attack is ingested and served.
            write_points(writer, range(3, 5))
            wait_until(
                lambda: (
                    [
                        p["step"]
                        for p in client.get(
                            "/api/v1/scalars",
                            params={"plugin": "scalars", "run": "train", "tag": "loss"},
                        ).json()["train"]["loss"]
                    ]
                    == list(range(5))
                ),
                what="the point written during the attack",
                alive=daemon.check_alive,
            )
    writer.close()
    daemon.check_alive()
    log_lines = daemon.stderr().count("\n") - log_before
    assert log_lines <= 10, f"{log_lines} log lines during the attack:\n{daemon.stderr()[-3000:]}"


def test_malformed_form_bodies_are_400s_that_write_no_log_line(
    serve: ServeFactory, tmp_path: Path
) -> None:
    """A client's malformed multipart bodies are its errors: each answered 400, none a line of
    the daemon's log (the form parser's own warning would be one per request)."""
    logdir = tmp_path / "logs"
    (logdir / "run").mkdir(parents=True)
    writer = EventFileWriter(str(logdir / "run"))
    write_points(writer, range(3))
    writer.close()
    daemon = serve(logdir)
    daemon.wait_for_steps("run", "loss", [0, 1, 2])
    headers = {"X-XSRF-Protected": "1", "Content-Type": "multipart/form-data; boundary=xyz"}
    url = f"http://127.0.0.1:{daemon.port}/data/plugin/scalars/scalars_multirun"
    with httpx.Client(trust_env=False) as client:
        for body in (b"{not a form", b"--abc\r\n", b"\xff\xfe" * 50) * 20:
            assert client.post(url, content=body, headers=headers).status_code == 400
    log = daemon.stderr()
    assert "boundary" not in log and "WARNING" not in log, log
