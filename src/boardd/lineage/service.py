"""The lineage service of ``boardd serve``: one writer thread owning the read-write lineage
store, fed by a queue (the API's writes, the populator's refreshes), and read-only stores of
their own for reading threads (as datasette's ``Database`` does).

Refreshes follow the commit bus: a commit of an experiment's store marks it due, and the
writer refreshes it once no call waits (at most every ``min_interval`` seconds, so a burst of
commits is one refresh). Every ``refresh_interval`` seconds all experiments are refreshed
anyway: a run goes inactive and a checkpoint appears without any commit.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import fcntl
import logging
import os
import queue
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from boardd.config import DEFAULT_HPARAMS_IDLE_SECONDS, ExperimentSpec
from boardd.data.changes import ChangeHub

T = TypeVar("T")

log = logging.getLogger(__name__)

#: Every experiment is refreshed at least this often (inactivity, new checkpoints).
REFRESH_INTERVAL_SECONDS = 30.0
#: An experiment is refreshed at most this often however often it commits.
MIN_INTERVAL_SECONDS = 1.0
#: ... and at most this share of the writer thread's time: an experiment whose refresh takes
#: long (10,000 runs: its store's series and the walk for checkpoints) is refreshed less often
#: while it commits (a catch-up commits many times a second).
REFRESH_TIME_SHARE = 0.05
#: How often a refresh waiting for a catch-up checks again.
BUSY_RECHECK_SECONDS = 0.5
#: A refresh that failed is tried again after the usual spacing, doubled at each failure in
#: a row up to this (a store that cannot be read now is not asked every second).
RETRY_MAX_SECONDS = 60.0


class LineageUnavailable(RuntimeError):
    """The lineage store cannot be used: it could not be opened, or it is closed (the daemon
    is stopping). The message says which."""


#: How long a reader waits for the writer to have opened (created) the store.
OPEN_TIMEOUT_SECONDS = 30.0


def connection_config(path: Path, *, read_only: bool) -> Any:
    """MLMD's ConnectionConfig of the lineage store file."""
    from boardd.metadata.proto import metadata_store_pb2 as pb

    config = pb.ConnectionConfig()
    config.sqlite.filename_uri = str(path)
    config.sqlite.connection_mode = (
        pb.SqliteMetadataSourceConfig.READONLY
        if read_only
        else pb.SqliteMetadataSourceConfig.READWRITE_OPENCREATE
    )
    return config


def open_store(path: Path, *, read_only: bool = False) -> Any:
    """A MetadataStore on the lineage store file (created if missing, unless ``read_only``)."""
    from boardd.metadata.metadata_store import MetadataStore

    return MetadataStore(connection_config(path, read_only=read_only))


def close_store(store: Any) -> None:
    """Closes a MetadataStore (safe twice)."""
    close = getattr(store, "close", None)
    if close is not None:
        close()


class _Call:
    __slots__ = ("fn", "future")

    def __init__(self, fn: Callable[[Any], Any], future: concurrent.futures.Future[Any]) -> None:
        self.fn = fn
        self.future = future


class LineageService:
    """The lineage store of one boardd: ``submit``/``write`` run on the writer thread,
    ``read`` on the calling thread with its own read-only store; ``close()`` is safe twice."""

    def __init__(
        self,
        path: Path,
        experiments: Sequence[ExperimentSpec] = (),
        *,
        hub: ChangeHub | None = None,
        idle_seconds: float = DEFAULT_HPARAMS_IDLE_SECONDS,
        refresh_interval: float = REFRESH_INTERVAL_SECONDS,
        min_interval: float = MIN_INTERVAL_SECONDS,
        busy: Callable[[str], bool] = lambda _name: False,
    ) -> None:
        self.path = path
        self._experiments = {spec.name: spec for spec in experiments}
        self._hub = hub
        self._idle = idle_seconds
        self._refresh_interval = refresh_interval
        self._min_interval = min_interval
        #: Whether an experiment is catching up (its refresh waits: it would compete with
        #: the catch-up for the interpreter, and see a store still filling).
        self._busy = busy
        self._queue: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._due: set[str] = set(self._experiments)
        self._due_lock = threading.Lock()
        #: experiment → time.monotonic() before which it is not refreshed again.
        self._not_before: dict[str, float] = {}
        #: experiment → (refreshes failed in a row, the last cause logged).
        self._failures: dict[str, tuple[int, str]] = {}
        self._refreshes = 0
        self._refreshed = threading.Condition()
        self._stop = threading.Event()
        self._closed = False
        self._started = threading.Event()
        self._start_lock = threading.Lock()
        self._launched = False
        self._start_error: BaseException | None = None
        self._writer = threading.Thread(target=self._write_loop, name="boardd-lineage", daemon=True)
        self._follower: threading.Thread | None = None
        self._local = threading.local()
        self._readers: list[Any] = []
        self._readers_lock = threading.Lock()
        #: Experiment name → the descriptor of its recorder's lock, held while this process
        #: records that experiment into the file (see _records); the shared hold on the lock
        #: of older boardd releases, which recorded every experiment under one lock.
        self._recording: dict[str, int] = {}
        self._legacy_fd: int | None = None
        #: The experiments another daemon was found recording (said once each).
        self._told_not_recorder: set[str] = set()

    # -- life cycle ----------------------------------------------------------------------------

    def start(self) -> None:
        """Starts the writer thread, which opens the store (creating it and boardd's types;
        :meth:`wait_open`), and starts following commits. Does not wait: a daemon answers
        before its lineage store is open. Once only (later calls, and calls after
        :meth:`close`, do nothing); the first use (:meth:`wait_open`, :meth:`submit`) starts
        it if nobody has yet, so a daemon may start it late."""
        with self._start_lock:
            if self._launched or self._closed:
                return
            self._launched = True
            self._writer.start()
            if self._hub is not None and self._experiments:
                self._follower = threading.Thread(
                    target=self._follow, name="boardd-lineage-follow", daemon=True
                )
                self._follower.start()

    def close(self) -> None:
        """Stops both threads (calls already queued are answered first) and closes every
        store; safe to call twice."""
        with self._start_lock:  # not while start() is starting the threads
            if self._closed:
                return
            self._closed = True
        self._stop.set()
        self._queue.put(None)
        if self._writer.is_alive():
            self._writer.join()
        if self._follower is not None and self._follower.is_alive():
            self._follower.join()
        with self._readers_lock:
            readers, self._readers = self._readers, []
        for store in readers:
            with contextlib.suppress(Exception):
                close_store(store)
        for fd in [*self._recording.values(), self._legacy_fd]:
            if fd is not None:
                os.close(fd)  # releases the lock
        self._recording.clear()
        self._legacy_fd = None

    def wait_open(self, timeout: float = OPEN_TIMEOUT_SECONDS) -> None:
        """Waits until the writer opened the store; LineageUnavailable says why it could
        not."""
        self.start()
        if not self._started.wait(timeout):
            raise LineageUnavailable(f"the lineage store {self.path} is still opening")
        if self._start_error is not None:
            raise LineageUnavailable(
                f"the lineage store {self.path} cannot be opened: {self._start_error}"
            )

    def status(self) -> dict[str, object]:
        """For /api/v1/health: the file, its state (opening, open, failed, closed), why it
        failed, and how many refresh passes were made."""
        if self._closed:
            state = "closed"
        elif not self._started.is_set():
            state = "opening"
        else:
            state = "failed" if self._start_error is not None else "open"
        return {
            "path": str(self.path),
            "state": state,
            "error": self.error,
            "refreshes": self._refreshes,
        }

    @property
    def error(self) -> str | None:
        """Why the store could not be opened (None: it is open, or opening)."""
        return None if self._start_error is None else str(self._start_error)

    # -- calls ---------------------------------------------------------------------------------

    def submit(self, fn: Callable[[Any], T]) -> concurrent.futures.Future[T]:
        """Runs ``fn(store)`` on the writer thread (one store call is one transaction);
        the future holds its result or exception."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        if self._closed:
            future.set_exception(LineageUnavailable("the lineage store is closed"))
            return future
        self.start()
        self._queue.put(_Call(fn, future))
        return future

    def write(self, fn: Callable[[Any], T]) -> T:
        """:meth:`submit` and wait for the result."""
        return self.submit(fn).result()

    async def write_async(self, fn: Callable[[Any], T]) -> T:
        """:meth:`submit`, awaited on an event loop."""
        return await asyncio.wrap_future(self.submit(fn))

    def reader(self) -> Any:
        """This thread's read-only MetadataStore on the lineage store (opened on first use;
        closed with the service or when the thread ends)."""
        store = getattr(self._local, "store", None)
        if store is None:
            self.wait_open()
            if self._closed:
                raise LineageUnavailable("the lineage store is closed")
            store = open_store(self.path, read_only=True)
            self._local.store = store
            with self._readers_lock:
                self._readers.append(store)
            weakref.finalize(threading.current_thread(), self._forget_reader, store)
        return store

    def read(self, fn: Callable[[Any], T]) -> T:
        """``fn(store)`` with this thread's read-only store."""
        return fn(self.reader())

    def _forget_reader(self, store: Any) -> None:
        with self._readers_lock:
            if store not in self._readers:
                return
            self._readers.remove(store)
        with contextlib.suppress(Exception):
            close_store(store)

    # -- refreshes -----------------------------------------------------------------------------

    def mark_due(self, names: Sequence[str] | None = None) -> None:
        """Asks for a refresh of these experiments (all: None) on the writer thread."""
        with self._due_lock:
            self._due.update(self._experiments if names is None else names)
        self._queue.put(None)

    def refresh_now(self, names: Sequence[str] | None = None) -> None:
        """Refreshes these experiments (all: None) on the writer thread and waits until done."""
        targets = list(self._experiments if names is None else names)
        self.write(lambda _store: self._refresh(targets))

    @property
    def refreshes(self) -> int:
        """How many refresh passes the writer has made (for waiting in tests)."""
        return self._refreshes

    def _write_loop(self) -> None:
        from boardd.lineage.populate import Populator

        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            store = open_store(self.path)
            populator = Populator(store, self._idle, self._stop.is_set)
        except Exception as exc:
            log.error(
                "lineage: %s cannot be opened (%s): /api/v1/metadata answers 503", self.path, exc
            )
            self._start_error = exc
            self._started.set()
            self._refuse_calls()
            return
        self._store = store
        self._populator = populator
        self._started.set()
        next_full = time.monotonic()
        try:
            while True:
                timeout = max(0.0, min(next_full, self._next_due_time()) - time.monotonic())
                try:
                    item = self._queue.get(timeout=timeout)
                except queue.Empty:
                    item = None
                if isinstance(item, _Call):
                    self._run(item, store)
                    continue
                if self._stop.is_set():
                    self._drain(store)
                    return
                if time.monotonic() >= next_full:
                    with self._due_lock:
                        self._due.update(self._experiments)
                    next_full = time.monotonic() + self._refresh_interval
                self._refresh(self._take_due())
        finally:
            close_store(store)

    def _refuse_calls(self) -> None:
        """Without a store: every call fails with the reason, until close()."""
        while True:
            item = self._queue.get()
            if isinstance(item, _Call):
                if item.future.set_running_or_notify_cancel():
                    item.future.set_exception(
                        LineageUnavailable(
                            f"the lineage store {self.path} cannot be opened: {self._start_error}"
                        )
                    )
            elif self._stop.is_set():
                return

    def _run(self, call: _Call, store: Any) -> None:
        if not call.future.set_running_or_notify_cancel():
            return
        try:
            call.future.set_result(call.fn(store))
        except BaseException as exc:
            call.future.set_exception(exc)

    def _drain(self, store: Any) -> None:
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if isinstance(item, _Call):
                self._run(item, store)

    def _next_due_time(self) -> float:
        with self._due_lock:
            due = list(self._due)
        if not due:
            return float("inf")
        return min(self._not_before.get(n, 0.0) for n in due)

    def _take_due(self) -> list[str]:
        now = time.monotonic()
        with self._due_lock:
            ready = [n for n in self._due if now >= self._not_before.get(n, 0.0)]
            waiting = [n for n in ready if self._busy(n)]
            for name in waiting:
                self._not_before[name] = now + BUSY_RECHECK_SECONDS
            ready = [n for n in ready if n not in waiting]
            self._due.difference_update(ready)
        return sorted(ready)

    def _records(self, name: str) -> bool:
        """Whether this process records experiment ``name`` into the lineage store. Several
        daemons may share one file (the default one in the state directory), each recording its
        own experiments beside the others (each call a short transaction; SQLite's busy timeout
        queues the writers). An experiment's records are keyed by its name, so one name is
        recorded by one daemon at a time, the holder of its lock
        (``<file>.recorders/<name>.lock``): two recorders of one name would overwrite each
        other's records and their caches go stale. Another takes over when the holder stops."""
        if name in self._recording:
            return True
        if not self._legacy_shared():
            return False
        directory = Path(f"{self.path}.recorders")
        directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(directory / f"{name}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            if name not in self._told_not_recorder:
                self._told_not_recorder.add(name)
                log.info(
                    "lineage: another boardd records experiment %s into %s (a logdir of that "
                    "name); this one records it once that one stops (two logdirs named alike "
                    "are told apart with NAME=PATH)",
                    name,
                    self.path,
                )
            return False
        self._recording[name] = fd
        if name in self._told_not_recorder:
            log.info("lineage: recording experiment %s into %s from now on", name, self.path)
        return True

    def _legacy_shared(self) -> bool:
        """A shared hold on ``<file>.recorder.lock``, the lock under which older boardd
        releases recorded every experiment at once: while an older daemon holds it, this one
        records nothing (and an older daemon started later records nothing meanwhile)."""
        if self._legacy_fd is not None:
            return True
        fd = os.open(f"{self.path}.recorder.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            if "" not in self._told_not_recorder:
                self._told_not_recorder.add("")
                log.info(
                    "lineage: another boardd (an older release) records its logdirs into %s; "
                    "this one records its own once that one stops",
                    self.path,
                )
            return False
        self._legacy_fd = fd
        return True

    def _refresh(self, names: Sequence[str]) -> None:
        from boardd.lineage.populate import Interrupted
        from boardd.lineage.scan import scan

        # The experiments another daemon records wait: the periodic sweep asks again.
        for name in [n for n in names if self._records(n)]:
            spec = self._experiments.get(name)
            if spec is None:
                continue
            started = time.monotonic()
            failed = 0
            try:
                written = self._populator.refresh(scan(spec))
            except Interrupted:
                return
            except Exception as exc:
                failed = self._refresh_failed(name, exc)
                with self._due_lock:
                    self._due.add(name)
            else:
                if self._failures.pop(name, None) is not None:
                    log.info("lineage: refreshing %s works again", name)
                if written:
                    log.debug("lineage: %s: %d records written", name, written)
            now = time.monotonic()
            spacing = max(self._min_interval, (now - started) / REFRESH_TIME_SHARE)
            if failed:
                spacing = min(RETRY_MAX_SECONDS, spacing * 2 ** min(failed - 1, 16))
            self._not_before[name] = now + spacing
        with self._refreshed:
            self._refreshes += 1
            self._refreshed.notify_all()

    def _refresh_failed(self, name: str, exc: Exception) -> int:
        """Says why a refresh failed, once per cause (a store that cannot be read now, such as
        one being rebuilt, in one line; anything else with its traceback); returns the
        failures in a row."""
        from boardd.data.connections import damage_of
        from boardd.data.errors import DataError

        # A damaged store (its writer is told, and rebuilds it) is said as such, in one line.
        damaged = damage_of(exc)
        if damaged is not None:
            exc = damaged
        count, logged = self._failures.get(name, (0, ""))
        cause = f"{type(exc).__name__}: {exc}"
        self._failures[name] = (count + 1, cause)
        if cause != logged:
            if isinstance(exc, DataError):
                log.warning(
                    "lineage: refreshing %s failed (%s); tried again with back-off", name, exc
                )
            else:
                log.exception("lineage: refreshing %s failed; tried again with back-off", name)
        return count + 1

    # -- following commits ---------------------------------------------------------------------

    def _follow(self) -> None:
        try:
            asyncio.run(self._follow_loop())
        except Exception:
            log.exception("lineage: following commits stopped; refreshing periodically only")

    async def _follow_loop(self) -> None:
        assert self._hub is not None
        subscription = self._hub.subscribe(list(self._experiments))
        try:
            while not self._stop.is_set() and not subscription.closed:
                changed = await subscription.wait(0.25)
                if changed:
                    self.mark_due(sorted(changed))
        finally:
            subscription.close()
