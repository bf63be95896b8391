"""Watching a logdir for changes: inotify through watchdog, with polling as the fallback.

The watcher only says *which paths changed*; the ingest thread decides what to read. When
inotify cannot be used (NFS, FUSE, some containers, an exhausted watch limit) or its thread
dies, the watcher reports itself unhealthy and the ingest loop polls instead: a periodic full
rescan is the safety net in every mode.

An inotify watch follows an inode, not a path: a logdir deleted (or moved away) and created
again would leave a dead watch behind. The watcher therefore also watches the logdir's parent
for the logdir's own name (created, deleted, moved), and checks the logdir's identity (device,
inode) at every :meth:`LogdirWatcher.healthy`; when it changed the watch is armed again on the
new directory (the caller then makes a full pass), and while the logdir is gone the mode is
``polling``.

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
from watchdog.observers.api import BaseObserver, ObservedWatch

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


class _ParentHandler(FileSystemEventHandler):
    """Events of the logdir's parent directory: only those naming the logdir itself count."""

    def __init__(self, logdir: Path, on_change: Callable[[], None]) -> None:
        self._logdir = os.fspath(logdir)
        self._on_change = on_change

    def on_any_event(self, event: FileSystemEvent) -> None:
        for raw in (event.src_path, getattr(event, "dest_path", "")):
            if raw and os.fsdecode(raw) == self._logdir:
                self._on_change()
                return


#: The parent's events that can concern the logdir (the rest are not even asked of inotify).
_PARENT_EVENTS: list[type[FileSystemEvent]] = [DirCreatedEvent, DirDeletedEvent, DirMovedEvent]

Identity = tuple[int, int]


def _identity(path: Path) -> Identity | None:
    """The directory's (device, inode); None when it is not there (or not a directory)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino) if os.path.isdir(path) else None


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
        self.logdir = Path(os.path.abspath(logdir))
        self._on_change = on_change
        self._poll = poll
        self._observer: BaseObserver | None = None
        self._lock = threading.Lock()
        self._watches = _Watches(on_overflow or (lambda: None))
        self.mode = "stopped"
        self.failure: str | None = None
        #: The watches of the logdir and of its parent, and the logdir they were armed on.
        self._watch: ObservedWatch | None = None
        self._parent_watch: ObservedWatch | None = None
        self._armed: Identity | None = None
        self._rearmed = False

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
                self._arm(observer)
                observer.start()
            except Exception as exc:
                self.failure = f"{type(exc).__name__}: {exc}"
                log.warning("cannot watch %s with inotify (%s): polling instead", self.logdir, exc)
                if observer is not None:
                    self._stop_observer(observer)
                self.mode = "polling"
                return self.mode
            self._arm_parent(observer)
            self._observer = observer
            self.mode = "inotify"
            return self.mode

    def healthy(self) -> bool:
        """Checks the watch (the caller polls while :attr:`mode` is ``polling``): an inotify
        observer thread that died means polling from then on; a logdir deleted or replaced is
        watched again once it is back (:meth:`take_rearmed` then says so). One stat."""
        with self._lock:
            observer = self._observer
            if observer is None:
                return self.mode == "polling"
            if not observer.is_alive():
                self.failure = "the inotify observer thread stopped"
                log.warning("watching %s: %s; polling instead", self.logdir, self.failure)
                self._stop_observer(observer)
                self._observer = None
                self.mode = "polling"
                return True
            if self._watch is not None and _identity(self.logdir) == self._armed:
                return True
            self._disarm(observer)
            try:
                self._arm(observer)
            except Exception as exc:
                # Gone, or not watchable now: polled meanwhile, tried again at the next check.
                if self.mode == "inotify":
                    log.warning(
                        "%s was deleted or replaced: its inotify watch is dead; polling until "
                        "it can be watched again (%s)",
                        self.logdir,
                        exc,
                    )
                self.failure = f"{type(exc).__name__}: {exc}"
                self.mode = "polling"
                self._disarm(observer)
                return True
            log.info("%s is back (or was replaced): watching it again", self.logdir)
            self.failure = None
            self.mode = "inotify"
            self._rearmed = True
            return True

    def take_rearmed(self) -> bool:
        """Whether the watch was armed again since the last call: what changed while it was
        dead was not seen, so the caller makes a full pass."""
        with self._lock:
            rearmed, self._rearmed = self._rearmed, False
            return rearmed

    def _arm(self, observer: BaseObserver) -> None:
        """Watches the logdir (recursively) and its parent (for the logdir's own name)."""
        identity = _identity(self.logdir)
        if identity is None:
            raise FileNotFoundError(errno.ENOENT, "no such directory", str(self.logdir))
        self._watch = observer.schedule(
            _Handler(self._on_change), str(self.logdir), recursive=True, event_filter=EVENTS
        )
        self._armed = identity
        if observer.is_alive():
            self._arm_parent(observer)

    def _arm_parent(self, observer: BaseObserver) -> None:
        """Watches the logdir's parent for the logdir's own name, once. Only on a running
        observer: scheduled before start(), a watch the kernel refuses (the watch limit) would
        fail the observer's start, and with it every watch; here it fails alone."""
        parent = self.logdir.parent
        if self._parent_watch is None and parent != self.logdir:
            try:
                self._parent_watch = observer.schedule(
                    _ParentHandler(self.logdir, self._parent_changed),
                    str(parent),
                    event_filter=_PARENT_EVENTS,
                )
            except Exception as exc:
                # The identity check at every healthy() still finds a replaced logdir.
                log.debug("cannot watch %s (%s)", parent, exc)

    def _disarm(self, observer: BaseObserver) -> None:
        """Drops the logdir's watch (its emitter may have stopped by itself: a deleted root)."""
        watch, self._watch, self._armed = self._watch, None, None
        if watch is not None:
            try:
                observer.unschedule(watch)
            except Exception:
                log.debug("unscheduling %s failed", self.logdir, exc_info=True)

    def _parent_changed(self) -> None:
        # The logdir itself was created, deleted or moved: rediscover (the caller's loop then
        # calls healthy(), which arms the watch again before its full pass).
        self._on_change(self.logdir, True)

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
