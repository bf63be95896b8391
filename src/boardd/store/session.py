"""A writing session on a store: open, take the lease, check the fingerprint; close cleanly.

With ``rebuild=True`` the session writes a fresh store beside the old one, while holding the old
one's lease so nobody else writes it meanwhile, and swaps it in atomically on a clean close; the
old store stays readable until then. A failed or interrupted rebuild leaves the old store as it
was and removes the partial new one.

A store that keeps more points of a series than the sampling asked is written with its own
sampling (the larger one); one that keeps fewer is refused (SamplingGrowsError), as a changed
logdir is.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

import apsw

from boardd.store import fingerprint, integrity
from boardd.store.connection import open_writer, store_error
from boardd.store.errors import StoreDamagedError
from boardd.store.lease import DEFAULT_EXPIRY_SECONDS, Lease
from boardd.store.writer import StoreWriter

log = logging.getLogger(__name__)


class WriteSession:
    """Owns a store's writer connection, lease and :class:`StoreWriter` for one process."""

    def __init__(
        self,
        db: str | os.PathLike[str],
        logdir: str | os.PathLike[str],
        *,
        sampling: Mapping[str, int | None] | None = None,
        rebuild: bool = False,
        lease_expiry: float = DEFAULT_EXPIRY_SECONDS,
        scan: bool = True,
    ) -> None:
        """``scan``: read the existing store whole at open (quick_check); without it only its
        size is checked, and the caller scans it later (``boardd serve``, in the background)."""
        self.db = Path(db)
        self.rebuild = rebuild
        self._old: apsw.Connection | None = None
        self._old_lease: Lease | None = None
        self._closed = False
        #: A rebuild of a damaged store: where it was set aside, and what was found.
        self.damaged: tuple[Path, str] | None = None
        wanted = fingerprint.compute(logdir, sampling or {})
        target = self.db
        if rebuild:
            if self.db.exists():
                try:
                    self._open_old(lease_expiry)
                except StoreDamagedError as exc:
                    # Rebuilt from the logdir all the same: the damaged file is set aside
                    # (kept for inspection), neither served nor read meanwhile.
                    aside = integrity.set_aside(self.db)
                    self.damaged = (aside, str(exc))
                    log.warning("%s; set aside as %s, rebuilt from the logdir", exc, aside)
            target = self.db.with_name(self.db.name + ".rebuild")
            _remove_store_files(target)
        self.path = target
        self.connection = open_writer(target, scan=scan)
        self.lease = Lease(self.connection, expiry_seconds=lease_expiry)
        try:
            self.lease.acquire()
            #: What the store keeps: the sampling asked, or the store's own larger one.
            self.sampling = fingerprint.check_or_record(self.connection, wanted, sampling)
        except (apsw.ReadOnlyError, apsw.CorruptError, apsw.NotADBError) as exc:
            # The lease is the first write: a store that cannot be written (an immutable file,
            # a read-only mount) or is damaged is said so here, as a StoreError.
            self._abort()
            raise store_error(target, exc) from exc
        except BaseException:
            self._abort()
            raise
        self.writer = StoreWriter(self.connection, self.lease, sampling=self.sampling)

    def abandon(self) -> None:
        """Closes a session on a damaged store: no lease released, no checkpoint, no swap
        (whatever is in its log stays there, with it)."""
        if self._closed:
            return
        self._closed = True
        with contextlib.suppress(apsw.Error):
            self.connection.close()
        if self.rebuild:
            _remove_store_files(self.path)
        if self._old is not None:
            with contextlib.suppress(apsw.Error):
                self._old.close()

    def _open_old(self, lease_expiry: float) -> None:
        self._old = open_writer(self.db)
        self._old_lease = Lease(self._old, expiry_seconds=lease_expiry)
        try:
            self._old_lease.acquire()
        except (apsw.ReadOnlyError, apsw.CorruptError, apsw.NotADBError) as exc:
            self._old.close()
            self._old, self._old_lease = None, None
            raise store_error(self.db, exc) from exc
        except BaseException:
            self._old.close()
            self._old, self._old_lease = None, None
            raise

    def close(self, *, success: bool = True) -> None:
        """Releases the lease and checkpoints; a rebuild is swapped in only on success."""
        if self._closed:
            return
        self._closed = True
        if self.rebuild and not success:
            self._abort()
            return
        if not success and self.connection.in_transaction:
            # Interrupted inside a transaction: what it had written is not kept, what was
            # committed before it is (and the checkpoint below cannot run in a transaction).
            with contextlib.suppress(apsw.Error):
                self.connection.execute("ROLLBACK")
        with contextlib.suppress(apsw.Error):
            self.lease.release()
        try:
            checkpoint(self.connection)
            folded = True
        except apsw.Error as exc:
            # A full disk: the main file cannot take the log's pages. The log stays beside
            # it and is replayed by the next open: nothing is lost.
            folded = False
            log.warning(
                "%s: the write-ahead log could not be folded into the store (%s); it is kept "
                "and replayed at the next start",
                self.path,
                exc,
            )
        self.connection.close()
        if self.rebuild:
            wal = Path(str(self.path) + "-wal")
            if folded and not (wal.exists() and wal.stat().st_size > 0):
                self._swap()
            else:
                # Swapping would leave the log behind (the swap removes it): the old store
                # stays in place, untouched, and the next --rebuild starts over.
                log.warning(
                    "%s: the rebuilt store is not swapped in: its write-ahead log could not be "
                    "folded into it; %s is kept as it was",
                    self.path,
                    self.db,
                )
                self._abort()

    def __enter__(self) -> WriteSession:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close(success=exc_type is None)

    def _swap(self) -> None:
        # The new file is complete and its WAL checkpointed away; the old store's WAL is
        # checkpointed too (as far as its readers allow); then one rename replaces it.
        if self._old is not None:
            with contextlib.suppress(apsw.Error):
                checkpoint(self._old)
            if self._old_lease is not None:
                with contextlib.suppress(apsw.Error):
                    self._old_lease.release()
            self._old.close()
        # Connections still open on the old file (readers) keep its WAL and shared-memory
        # files open, unlinked or not. Left in place, those files would be found by name by
        # every new connection to the new file, and the old readers would read the new file's
        # WAL frames over the old file's pages (a corrupt view). Unlinked, they stay the old
        # readers' own, and the new file gets fresh ones.
        for suffix in ("-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(str(self.db) + suffix)
        os.replace(self.path, self.db)
        for suffix in ("-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(str(self.path) + suffix)
        self.path = self.db

    def _abort(self) -> None:
        # A refused or failed session gives back the lease it took: while this process lives
        # (a daemon, a test, a retry) its row would block every other writer until it expires.
        with contextlib.suppress(Exception):
            self.lease.release()
        with contextlib.suppress(Exception):
            self.connection.close()
        if self.rebuild:
            _remove_store_files(self.path)
        if self._old_lease is not None:
            with contextlib.suppress(apsw.Error):
                self._old_lease.release()
        if self._old is not None:
            self._old.close()


def checkpoint(connection: apsw.Connection) -> None:
    """Moves the WAL's content into the main file and truncates the WAL
    (https://www.sqlite.org/pragma.html#pragma_wal_checkpoint)."""
    with contextlib.suppress(apsw.BusyError):
        connection.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_TRUNCATE)


def _remove_store_files(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.remove(str(path) + suffix)
