"""The sd_notify client: messages on a real AF_UNIX datagram socket, watchdog settings, failures."""

from __future__ import annotations

import logging
import os
import socket
import tempfile
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from boardd.daemon.notify import Notifier


def _short_dir(tmp_path: Path) -> Iterator[Path]:
    # sun_path holds at most 107 bytes; pytest's tmp_path can be longer for long test names.
    if len(str(tmp_path)) < 80:
        yield tmp_path
    else:
        with tempfile.TemporaryDirectory(prefix="bn") as short:
            yield Path(short)


@pytest.fixture
def receiver(tmp_path: Path) -> Iterator[tuple[socket.socket, str]]:
    """A bound datagram socket standing in for systemd's notify socket, and its path."""
    for directory in _short_dir(tmp_path):
        path = str(directory / "notify.sock")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        sock.bind(path)
        sock.settimeout(5)
        try:
            yield sock, path
        finally:
            sock.close()


def _receive(sock: socket.socket) -> list[str]:
    return sock.recv(65536).decode("utf-8").split("\n")


def test_messages_arrive_in_order(receiver: tuple[socket.socket, str]) -> None:
    sock, path = receiver
    with Notifier({"NOTIFY_SOCKET": path}) as notifier:
        assert notifier.enabled
        notifier.ready("catching up")
        notifier.status("serving\non port 6007")
        notifier.watchdog()
        notifier.stopping()
        assert notifier.send("STATUS=raw", "ERRNO=0")
    assert _receive(sock) == ["READY=1", "STATUS=catching up"]
    assert _receive(sock) == ["STATUS=serving on port 6007"]
    assert _receive(sock) == ["WATCHDOG=1"]
    assert _receive(sock) == ["STOPPING=1"]
    assert _receive(sock) == ["STATUS=raw", "ERRNO=0"]


def test_ready_without_status_sends_one_field(receiver: tuple[socket.socket, str]) -> None:
    sock, path = receiver
    with Notifier({"NOTIFY_SOCKET": path}) as notifier:
        notifier.ready()
    assert _receive(sock) == ["READY=1"]


def test_abstract_socket_name() -> None:
    name = f"boardd-test-{uuid.uuid4().hex}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind("\0" + name)
        sock.settimeout(5)
        with Notifier({"NOTIFY_SOCKET": "@" + name}) as notifier:
            assert notifier.send("READY=1")
        assert _receive(sock) == ["READY=1"]


def test_without_notify_socket_everything_is_a_no_op() -> None:
    for environ in ({}, {"NOTIFY_SOCKET": ""}, {"WATCHDOG_USEC": "30000000"}):
        notifier = Notifier(environ)
        assert not notifier.enabled
        assert notifier.send("READY=1") is False
        notifier.ready("x")
        notifier.status("x")
        notifier.watchdog()
        notifier.stopping()
        assert notifier.watchdog_interval() is None
        notifier.close()


def test_default_environment_is_os_environ(
    receiver: tuple[socket.socket, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    sock, path = receiver
    monkeypatch.setenv("NOTIFY_SOCKET", path)
    with Notifier() as notifier:
        assert notifier.send("STATUS=from os.environ")
    assert _receive(sock) == ["STATUS=from os.environ"]


def test_unsupported_socket_kind_is_ignored(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="boardd.daemon.notify"):
        notifier = Notifier({"NOTIFY_SOCKET": "vsock:2:1234"})
    assert not notifier.enabled
    assert "unsupported NOTIFY_SOCKET" in caplog.text


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        ({"WATCHDOG_USEC": "30000000"}, 15.0),
        ({"WATCHDOG_USEC": "1000"}, 0.0005),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": str(os.getpid())}, 15.0),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": str(os.getpid() + 1)}, None),
        ({"WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "not a pid"}, None),
        ({"WATCHDOG_USEC": "0"}, None),
        ({"WATCHDOG_USEC": "-5"}, None),
        ({"WATCHDOG_USEC": "soon"}, None),
        ({}, None),
    ],
)
def test_watchdog_interval(
    receiver: tuple[socket.socket, str], environ: dict[str, str], expected: float | None
) -> None:
    _, path = receiver
    with Notifier({"NOTIFY_SOCKET": path, **environ}) as notifier:
        assert notifier.watchdog_interval() == expected


def test_vanished_receiver_logs_once_and_never_raises(
    receiver: tuple[socket.socket, str], caplog: pytest.LogCaptureFixture
) -> None:
    sock, path = receiver
    with Notifier({"NOTIFY_SOCKET": path}) as notifier:
        assert notifier.send("READY=1")
        sock.close()  # the path stays, nobody listens: ECONNREFUSED
        with caplog.at_level(logging.DEBUG, logger="boardd.daemon.notify"):
            assert notifier.send("WATCHDOG=1") is False
            notifier.watchdog()
            notifier.status("still alive")
            Path(path).unlink()  # now the path is gone too: ENOENT
            assert notifier.send("WATCHDOG=1") is False
        assert notifier.enabled
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1
    assert "keeps running" in warnings[0].getMessage()
    assert sum(r.levelno == logging.DEBUG for r in caplog.records) == 3


def test_a_receiver_that_stops_reading_cannot_hang_the_sender(
    receiver: tuple[socket.socket, str], caplog: pytest.LogCaptureFixture
) -> None:
    _, path = receiver
    results: list[bool] = []
    with Notifier({"NOTIFY_SOCKET": path}, send_timeout=0.05) as notifier:
        # The queue's length is a sysctl (net.unix.max_dgram_qlen); once it is full, a send
        # times out and is dropped instead of blocking.
        while len(results) < 100_000 and (not results or results[-1]):
            results.append(notifier.send("WATCHDOG=1"))
    assert results[0] is True
    assert results[-1] is False
    assert "keeps running" in caplog.text


def test_close_is_idempotent_and_disables(receiver: tuple[socket.socket, str]) -> None:
    _, path = receiver
    notifier = Notifier({"NOTIFY_SOCKET": path})
    notifier.close()
    notifier.close()
    assert not notifier.enabled
    assert notifier.send("READY=1") is False


def test_fields_must_be_single_line_assignments(receiver: tuple[socket.socket, str]) -> None:
    _, path = receiver
    with Notifier({"NOTIFY_SOCKET": path}) as notifier:
        with pytest.raises(ValueError, match="KEY=VALUE"):
            notifier.send("STATUS=two\nlines")
        with pytest.raises(ValueError, match="KEY=VALUE"):
            notifier.send("READY")
        assert notifier.send() is False


def test_concurrent_senders_and_close(receiver: tuple[socket.socket, str]) -> None:
    sock, path = receiver
    notifier = Notifier({"NOTIFY_SOCKET": path})
    sent: list[bool] = []
    received: list[list[str]] = []
    start = threading.Barrier(5)
    sock.settimeout(0.5)

    def drain() -> None:
        # Like systemd, read while senders send: a datagram queue holds only a few messages.
        while True:
            try:
                received.append(_receive(sock))
            except TimeoutError:
                return

    def ping() -> None:
        start.wait()
        for _ in range(50):
            sent.append(notifier.send("WATCHDOG=1"))

    drainer = threading.Thread(target=drain)
    drainer.start()
    threads = [threading.Thread(target=ping) for _ in range(4)]
    for thread in threads:
        thread.start()
    start.wait()
    notifier.close()
    for thread in threads:
        thread.join()
    drainer.join()
    # Every datagram reported as sent arrived whole; the rest were refused after close().
    assert len(sent) == 200
    assert received == [["WATCHDOG=1"]] * sum(sent)
