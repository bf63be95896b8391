"""Watching a logdir for changes: inotify through watchdog, with polling as the fallback.

The watcher only says *which paths changed*; the ingest thread decides what to read. When
inotify cannot be used (NFS, FUSE, some containers, an exhausted watch limit) or its thread
dies, the watcher reports itself unhealthy and the ingest loop polls instead: a periodic full
rescan is the safety net in every mode.

Scale (issue 12 §3): the kernel queues only the events asked for, and boardd's own reading
(opening and scanning files and directories) is not among them, so a pass over 10,000 runs
does not flood the queue. When the queue overflows anyway (events were lost), the watcher
says so once per overflow (``on_overflow``): the ingest loop answers with one full pass.
Directories that get no watch (the ``fs.inotify.max_user_watches`` limit) are counted in
:attr:`LogdirWatcher.unwatched`: the ingest loop then passes over the logdir at the polling
interval, so they are polled, and health says how many there are and why.
"""

from __future__ import annotations

import errno
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver

try:  # Linux: inotify, with the hooks this module needs (watchdog 7.1+)
    from watchdog.observers.inotify import InotifyEmitter, InotifyObserver, InotifyWatchGroup
except ImportError:  # pragma: no cover - another platform: watchdog's own observer, as is
    InotifyObserver = None  # type: ignore[assignment,misc]

from boardd.reader.logdir import is_event_file

log = logging.getLogger(__name__)

#: Called from the watcher's thread with a changed event file, or with a directory whose
#: subtree changed (created, deleted or moved) and must be rediscovered.
OnChange = Callable[[Path, bool], None]
#: Called from the watcher's thread when the kernel's event queue overflowed (events lost).
OnOverflow = Callable[[], None]

#: The events asked of the kernel: what changes an event file or the set of runs. Not opens,
#: reads or closes-without-write: those are what boardd's own passes do, thousands per pass.
EVENTS: list[type[FileSystemEvent]] = [
    FileModifiedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    DirCreatedEvent,
    FileDeletedEvent,
    DirDeletedEvent,
    FileMovedEvent,
    DirMovedEvent,
]

#: Where Linux says how many watches a user may have.
MAX_USER_WATCHES = Path("/proc/sys/fs/inotify/max_user_watches")


@dataclass
class _Watches:
    """What one observer's watch groups report: overflows, and directories left unwatched."""

    on_overflow: OnOverflow
    lock: threading.Lock = field(default_factory=threading.Lock)
    #: Directories that got no watch, with the errno (ENOSPC: the watch limit).
    unwatched: dict[bytes, int] = field(default_factory=dict)
    overflows: int = 0

    def failed(self, path: bytes, error: int) -> None:
        with self.lock:
            self.unwatched[path] = error

    def watched(self, path: bytes) -> None:
        if self.unwatched:
            with self.lock:
                self.unwatched.pop(path, None)

    def rewatching(self) -> None:
        # After an overflow watchdog rebuilds every watch: which fail is counted afresh.
        with self.lock:
            self.unwatched.clear()

    def overflowed(self) -> None:
        with self.lock:
            self.overflows += 1
        self.on_overflow()


if InotifyObserver is not None:

    @dataclass
    class _WatchGroup(InotifyWatchGroup):
        """watchdog's recursive watch, telling us what it otherwise only logs or swallows: a
        queue overflow, and a directory it could not watch (it skips those silently)."""

        report: _Watches | None = None

        def _add_callback(self, path: bytes) -> None:
            try:
                wd = self._inotify_fd.add_callback(path, self.event_mask, self._callback, self._id)
            except OSError as exc:
                if path == self.path:
                    raise
                # Gone or unreadable since the walk found it: nothing to watch; else (ENOSPC:
                # the watch limit) it is polled.
                if self.report is not None and exc.errno not in (errno.ENOENT, errno.ENOTDIR):
                    self.report.failed(path, exc.errno or 0)
                return
            self._active_callbacks_by_path[path] = wd
            self._active_callbacks_by_watch[wd] = path
            if self.report is not None:
                self.report.watched(path)

        def on_queue_overflow(self) -> None:
            if self.report is not None:
                self.report.rewatching()
            super().on_queue_overflow()
            if self.report is not None and self.is_active:
                self.report.overflowed()

    class _Emitter(InotifyEmitter):
        report: _Watches | None = None

        def on_thread_start(self) -> None:
            self._inotify = _WatchGroup(
                self._inotify_fd,
                os.fsencode(self.watch.path),
                is_recursive=self.watch.is_recursive,
                event_mask=self.get_event_mask_from_filter(),
                follow_symlink=self.watch.follow_symlink,
                report=self.report,
            )

    class _Observer(InotifyObserver):
        """An inotify observer whose watches report to ``report``."""

        def __init__(self, report: _Watches) -> None:
            super().__init__()
            emitter = type("_ReportingEmitter", (_Emitter,), {"report": report})
            self._emitter_class = emitter


def max_user_watches() -> int | None:
    """The system's ``fs.inotify.max_user_watches`` (None where there is no such thing)."""
    try:
        return int(MAX_USER_WATCHES.read_text())
    except (OSError, ValueError):
        return None


class _Handler(FileSystemEventHandler):
    def __init__(self, on_change: OnChange) -> None:
        self._on_change = on_change

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in ("opened", "closed_no_write"):
            return
        if isinstance(event, DirCreatedEvent | DirDeletedEvent | DirMovedEvent):
            self._on_change(Path(os.fsdecode(event.src_path)), True)
            return
        for raw in (event.src_path, getattr(event, "dest_path", "")):
            if not raw:
                continue
            path = Path(os.fsdecode(raw))
            if is_event_file(path.name):
                self._on_change(path, event.event_type in ("deleted", "moved"))


class LogdirWatcher:
    """Watches one logdir recursively. ``start()`` returns ``"inotify"`` or ``"polling"``.

    In polling mode nothing runs here: the ingest loop's periodic pass does the work.
    """

    def __init__(
        self,
        logdir: Path,
        on_change: OnChange,
        *,
        poll: bool = False,
        on_overflow: OnOverflow | None = None,
    ) -> None:
        self.logdir = logdir
        self._on_change = on_change
        self._poll = poll
        self._observer: BaseObserver | None = None
        self._lock = threading.Lock()
        self._watches = _Watches(on_overflow or (lambda: None))
        self.mode = "stopped"
        self.failure: str | None = None

    @property
    def overflows(self) -> int:
        """How many times the kernel's queue overflowed (each answered by one full pass)."""
        return self._watches.overflows

    @property
    def unwatched(self) -> int:
        """Directories of the logdir inotify could not watch: they are polled."""
        return len(self._watches.unwatched)

    def unwatched_reason(self) -> str | None:
        """Why some directories are polled, for health and the log; None when all are watched."""
        with self._watches.lock:
            errors = set(self._watches.unwatched.values())
            count = len(self._watches.unwatched)
        if not count:
            return None
        if errno.ENOSPC in errors:
            limit = max_user_watches()
            cause = "the inotify watch limit" + (
                f" (fs.inotify.max_user_watches = {limit})" if limit is not None else ""
            )
        else:
            cause = ", ".join(sorted(os.strerror(e) for e in errors))
        return f"{count} director{'y' if count == 1 else 'ies'} not watched ({cause}): polled"

    def start(self) -> str:
        """Starts inotify watching, or falls back to polling (logged, never raised)."""
        with self._lock:
            if self._poll:
                self.mode = "polling"
                return self.mode
            observer: BaseObserver | None = None
            try:
                # watchdog's inotify observer opens its inotify instance in its constructor,
                # so an exhausted instance limit (EMFILE) is raised here, not by start().
                observer = _Observer(self._watches) if InotifyObserver is not None else Observer()
                observer.daemon = True
                observer.schedule(
                    _Handler(self._on_change),
                    str(self.logdir),
                    recursive=True,
                    event_filter=EVENTS,
                )
                observer.start()
            except Exception as exc:
                self.failure = f"{type(exc).__name__}: {exc}"
                log.warning("cannot watch %s with inotify (%s): polling instead", self.logdir, exc)
                if observer is not None:
                    self._stop_observer(observer)
                self.mode = "polling"
                return self.mode
            self._observer = observer
            self.mode = "inotify"
            return self.mode

    def healthy(self) -> bool:
        """False once an inotify observer thread has died; the caller then polls."""
        with self._lock:
            if self.mode != "inotify" or self._observer is None:
                return self.mode == "polling"
            if self._observer.is_alive():
                return True
            self.failure = "the inotify observer thread stopped"
            log.warning("watching %s: %s; polling instead", self.logdir, self.failure)
            self._stop_observer(self._observer)
            self._observer = None
            self.mode = "polling"
            return True

    def stop(self) -> None:
        """Stops the observer thread; safe to call twice."""
        with self._lock:
            if self._observer is not None:
                self._stop_observer(self._observer)
                self._observer = None
            self.mode = "stopped"

    @staticmethod
    def _stop_observer(observer: BaseObserver) -> None:
        try:
            observer.stop()
            if observer.is_alive():
                observer.join(timeout=5)
        except Exception:
            log.debug("observer stop failed", exc_info=True)
