"""The writer lease: exactly one process at a time ingests into a store.

The lease is a row (owner id, host, pid, start, heartbeat, expiry) in the store itself, taken in
an IMMEDIATE transaction so two processes cannot both win. A holder renews its heartbeat inside
every commit it makes, so it can never commit after losing the lease. A lease whose heartbeat is
older than its expiry is taken over (a writer killed with SIGKILL cannot lock a store forever),
and on the same host a lease whose process no longer exists is taken over at once.
"""

from __future__ import annotations

import os
import secrets
import socket
import time
from typing import NamedTuple

import apsw

from boardd.store.connection import immediate
from boardd.store.errors import LeaseHeldError, StoreError

DEFAULT_EXPIRY_SECONDS = 30.0


class LeaseLostError(StoreError):
    """This process's lease was taken over by another writer; it must stop writing."""


class LeaseInfo(NamedTuple):
    """Who holds a store's lease."""

    owner: str
    host: str
    pid: int
    started: float
    heartbeat: float
    expiry_seconds: float

    def describe(self, now: float) -> str:
        """A sentence naming the holder, for error messages."""
        age = max(0.0, now - self.heartbeat)
        return (
            f"pid {self.pid} on {self.host} (owner {self.owner[:8]}, last heartbeat "
            f"{age:.1f} s ago, expires after {self.expiry_seconds:g} s)"
        )

    def expired(self, now: float) -> bool:
        """Whether the holder has missed its heartbeat for longer than the expiry."""
        return now - self.heartbeat > self.expiry_seconds


class Lease:
    """This process's claim on one store's writer role."""

    def __init__(
        self, connection: apsw.Connection, *, expiry_seconds: float = DEFAULT_EXPIRY_SECONDS
    ) -> None:
        self._connection = connection
        self.expiry_seconds = expiry_seconds
        self.owner = secrets.token_hex(16)
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.held = False

    def acquire(self) -> LeaseInfo | None:
        """Takes the lease, or raises LeaseHeldError; returns the lease taken over, if any."""
        now = time.time()
        try:
            with immediate(self._connection):
                holder = current_holder(self._connection)
                if holder is not None and holder.owner != self.owner and not self._can_take(holder):
                    raise LeaseHeldError(
                        "the store is being written by another boardd: "
                        f"{holder.describe(now)}. Stop that process, use another --db, "
                        "or wait for its lease to expire."
                    )
                self._connection.execute(
                    "INSERT OR REPLACE INTO lease (id, owner, host, pid, started, heartbeat, "
                    "expiry_seconds) VALUES (1, ?, ?, ?, ?, ?, ?)",
                    (self.owner, self.host, self.pid, now, now, self.expiry_seconds),
                )
        except apsw.BusyError as exc:
            # Another connection kept the write lock past the busy timeout (a writer stopped
            # or stuck inside a transaction): as much a held store as a live lease row.
            holder = current_holder(self._connection)
            who = holder.describe(time.time()) if holder is not None else "another process"
            raise LeaseHeldError(
                f"the store's write lock is held by another writer ({who}). Stop that "
                "process, use another --db, or try again later."
            ) from exc
        self.held = True
        return holder if holder is not None and holder.owner != self.owner else None

    def renew(self) -> None:
        """Renews the heartbeat; call it inside the transaction that commits data.

        Raises LeaseLostError if another writer took the lease over.
        """
        self._connection.execute(
            "UPDATE lease SET heartbeat = ? WHERE id = 1 AND owner = ?", (time.time(), self.owner)
        )
        if self._connection.changes() != 1:
            self.held = False
            raise LeaseLostError(
                "this process's writer lease was taken over by another boardd; stopping writes"
            )

    def release(self) -> None:
        """Gives the lease up (safe to call when not held)."""
        if not self.held:
            return
        with immediate(self._connection):
            self._connection.execute("DELETE FROM lease WHERE id = 1 AND owner = ?", (self.owner,))
        self.held = False

    def _can_take(self, holder: LeaseInfo) -> bool:
        if holder.expired(time.time()):
            return True
        return holder.host == self.host and not _process_alive(holder.pid)


def current_holder(connection: apsw.Connection) -> LeaseInfo | None:
    """The lease row, if any (whether or not it has expired)."""
    for row in connection.execute(
        "SELECT owner, host, pid, started, heartbeat, expiry_seconds FROM lease WHERE id = 1"
    ):
        owner, host, pid, started, heartbeat, expiry = row
        return LeaseInfo(str(owner), str(host), int(pid), started, heartbeat, expiry)
    return None


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists, owned by someone else
    return True
