"""The connection guard of boardd's HTTP server: who is open, who waits for a request head.

A server that only times out idle keep-alive connections keeps for ever one that never sends a
request, or sends part of a request head and stops (slowloris), and each holds a file
descriptor; at the descriptor limit ``accept()`` fails with EMFILE, asyncio logs it with a
traceback up to a batch of times per turn of the loop, and ingest can no longer open files. So
every connection of one server (:mod:`boardd.daemon.http_server`) shares a :class:`ConnectionGuard`:

* a request head must be complete within ``head_timeout`` seconds (the server's default:
  :data:`boardd.daemon.http_server.HEAD_TIMEOUT`) of the connection waiting for one (its opening, or
  the end of the previous response; the keep-alive timeout closes silent ones sooner): a byte
  now and then does not extend it. A partial head is answered 408 (the JSON error shape), a
  silent connection is just closed;
* at most ``cap`` connections are open (default: :func:`boardd.daemon.http_server.connection_cap`):
  one more evicts the connection that has waited longest for a request head (a well-behaved
  client sends its head at once, so only idle or stalled ones are waiting); when none is
  waiting (every one is busy), the newcomer gets a 503 and is closed;
* a head too large gets the JSON error shape (414 or 431), as does a malformed request (400).

The connection (:mod:`boardd.daemon.http_protocol`) keeps its own deadlines and answers; the
guard only counts and chooses whom to evict. What it drops, and the accepts that failed for
want of descriptors, are logged as one summary line at most once a minute, never a line per
connection.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from typing import Generic, Protocol, TypeVar

#: The server's one logger, as configured by name (the summary lines are the server's).
log = logging.getLogger("boardd.daemon.http_server")

#: Seconds between two summary lines of dropped connections.
REPORT_INTERVAL = 60.0


class Droppable(Protocol):
    """A connection as the guard sees it: one it can close at once to make room."""

    def drop(self) -> None: ...


Connection = TypeVar("Connection", bound=Droppable)


class ConnectionGuard(Generic[Connection]):
    """What the connections of one server share: who is open, who waits for a request head
    (oldest first), and the counts of the next summary line."""

    def __init__(self, cap: int, head_timeout: float) -> None:
        self.cap = cap
        self.head_timeout = head_timeout
        self.open: set[Connection] = set()
        #: Connections waiting for a request head, in the order they began to wait.
        self.waiting: dict[Connection, None] = {}
        self._counts: Counter[str] = Counter()
        self._last_report = -REPORT_INTERVAL
        self._report_due: asyncio.TimerHandle | None = None

    def admit(self, newcomer: Connection) -> bool:
        """Makes room for one more connection; False if it must be refused."""
        if len(self.open) < self.cap:
            return True
        if self.waiting:
            oldest = next(iter(self.waiting))
            oldest.drop()
            self.note("evicted")
            return True
        self.note("refused")
        return False

    def note(self, what: str) -> None:
        """Counts one dropped connection; the summary line follows within the interval (called
        in the event loop's thread)."""
        self._counts[what] += 1
        if self._report_due is None:
            delay = max(0.0, self._last_report + REPORT_INTERVAL - time.monotonic())
            self._report_due = asyncio.get_running_loop().call_later(delay, self._report)

    def flush(self) -> None:
        """Logs the summary now, if anything is left to report (at shutdown)."""
        if self._report_due is not None:
            self._report_due.cancel()
            self._report()

    def _report(self) -> None:
        self._report_due = None
        self._last_report = time.monotonic()
        counts, self._counts = self._counts, Counter()
        parts = {
            "timed_out": f"{{}} sent no whole request head within {self.head_timeout:g} s",
            "evicted": f"{{}} waiting for a request head made room (at most {self.cap} open)",
            "refused": f"{{}} refused with 503 (all {self.cap} connections busy)",
            "too_large": "{} sent a request head over the size limit",
            "malformed": "{} sent a malformed request",
            "accept_failed": "{} could not be accepted (out of descriptors or memory)",
        }
        text = "; ".join(parts[k].format(n) for k, n in sorted(counts.items()) if n and k in parts)
        if text:
            log.warning("HTTP connections closed by the server: %s", text)
        if counts["idle"]:
            log.info(
                "HTTP connections closed by the server: %d sent nothing within %g s (a browser "
                "opens spare connections ahead of need)",
                counts["idle"],
                self.head_timeout,
            )
