"""The systemd notify protocol (sd_notify): readiness, status, watchdog and stop messages."""

from __future__ import annotations

import logging
import os
import socket
import threading
from collections.abc import Mapping

logger = logging.getLogger(__name__)

#: How long one send may wait for room in the notify socket's queue before it is dropped.
SEND_TIMEOUT_SECONDS = 2.0


class Notifier:
    """Sends sd_notify messages; a no-op without ``$NOTIFY_SOCKET``. Thread-safe.

    A message is one datagram of newline-separated ``KEY=VALUE`` fields sent to the AF_UNIX
    socket named by ``$NOTIFY_SOCKET`` (an abstract socket when the name starts with ``@``), as
    described in sd_notify(3). Failing to send never raises: the daemon must keep serving even
    if systemd's socket is gone; the first failure is logged as a warning, later ones at debug.
    A send waits at most ``send_timeout`` seconds for room in the socket's queue. close() is
    idempotent.
    """

    def __init__(
        self,
        environ: Mapping[str, str] | None = None,
        *,
        send_timeout: float = SEND_TIMEOUT_SECONDS,
    ) -> None:
        env = os.environ if environ is None else environ
        self._lock = threading.Lock()
        self._warned = False
        self._address = _socket_address(env.get("NOTIFY_SOCKET", ""))
        self._watchdog_usec = _watchdog_usec(env)
        self._socket: socket.socket | None = None
        if self._address is not None:
            self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
            # A datagram queue holds few messages (net.unix.max_dgram_qlen, often 10): if the
            # service manager stops reading, a blocking send would hang the daemon with it.
            self._socket.settimeout(send_timeout)

    @property
    def enabled(self) -> bool:
        """True while there is a notify socket to send to (and close() was not called)."""
        return self._socket is not None

    def send(self, *fields: str) -> bool:
        """Sends one message made of ``fields`` (e.g. ``"READY=1", "STATUS=catching up"``).

        Returns True if the datagram was handed to the kernel, False when disabled, closed, or
        sending failed. A field holding a newline would split into two fields, so it is refused
        with ValueError (a bug in the caller, unlike a vanished socket).
        """
        for field in fields:
            if "\n" in field or "=" not in field:
                raise ValueError(f"not a KEY=VALUE notify field without newlines: {field!r}")
        if not fields:
            return False
        payload = "\n".join(fields).encode("utf-8", "replace")
        with self._lock:
            sock = self._socket
            if sock is None or self._address is None:
                return False
            try:
                sock.sendto(payload, self._address)
            except OSError as exc:
                self._report_failure(exc)
                return False
        return True

    def ready(self, status: str = "") -> None:
        """Tells systemd the service is up (``READY=1``), with an optional status line."""
        if status:
            self.send("READY=1", _status_field(status))
        else:
            self.send("READY=1")

    def status(self, text: str) -> None:
        """Sets the one-line status shown by ``systemctl status`` (newlines become spaces)."""
        self.send(_status_field(text))

    def stopping(self) -> None:
        """Tells systemd the service is shutting down (``STOPPING=1``)."""
        self.send("STOPPING=1")

    def watchdog(self) -> None:
        """Pings the watchdog (``WATCHDOG=1``); call it every watchdog_interval() seconds."""
        self.send("WATCHDOG=1")

    def watchdog_interval(self) -> float | None:
        """Seconds between watchdog pings (half of ``$WATCHDOG_USEC``), or None if not asked for.

        None too when ``$WATCHDOG_PID`` names another process (the variables were inherited, not
        meant for us) or when there is no socket to ping.
        """
        if self._watchdog_usec is None or not self.enabled:
            return None
        return self._watchdog_usec / 2 / 1_000_000

    def close(self) -> None:
        """Closes the socket; later sends return False. Safe to call more than once."""
        with self._lock:
            sock, self._socket = self._socket, None
        if sock is not None:
            sock.close()

    def __enter__(self) -> Notifier:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _report_failure(self, exc: OSError) -> None:
        # Called with the lock held, so the warning is logged exactly once.
        if not self._warned:
            self._warned = True
            logger.warning(
                "cannot send to systemd's notify socket %r (%s); status and watchdog "
                "messages are dropped from now on, the service keeps running",
                self._address,
                exc,
            )
        else:
            logger.debug("notify socket send failed again: %s", exc)


def _socket_address(name: str) -> str | None:
    if name.startswith("@"):
        # Abstract namespace: the name carries a leading NUL instead of the '@'.
        return "\0" + name[1:]
    if name.startswith("/"):
        return name
    if name:
        # e.g. systemd 253's vsock: addresses, which a local daemon never gets.
        logger.warning("ignoring unsupported NOTIFY_SOCKET %r", name)
    return None


def _watchdog_usec(env: Mapping[str, str]) -> int | None:
    try:
        usec = int(env.get("WATCHDOG_USEC", ""))
    except ValueError:
        return None
    if usec <= 0:
        return None
    pid = env.get("WATCHDOG_PID")
    if pid is not None:
        try:
            if int(pid) != os.getpid():
                return None
        except ValueError:
            return None
    return usec


def _status_field(text: str) -> str:
    return "STATUS=" + " ".join(text.splitlines())
