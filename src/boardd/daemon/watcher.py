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
"""

from __future__ import annotations

import errno
import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver, ObservedWatch

from boardd.reader.logdir import is_event_file

log = logging.getLogger(__name__)

#: Called from the watcher's thread with a changed event file, or with a directory whose
#: subtree changed (created, deleted or moved) and must be rediscovered.
OnChange = Callable[[Path, bool], None]


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

    def __init__(self, logdir: Path, on_change: OnChange, *, poll: bool = False) -> None:
        self.logdir = Path(os.path.abspath(logdir))
        self._on_change = on_change
        self._poll = poll
        self._observer: BaseObserver | None = None
        self._lock = threading.Lock()
        self.mode = "stopped"
        self.failure: str | None = None
        #: The watches of the logdir and of its parent, and the logdir they were armed on.
        self._watch: ObservedWatch | None = None
        self._parent_watch: ObservedWatch | None = None
        self._armed: Identity | None = None
        self._rearmed = False

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
                observer = Observer()
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
        self._watch = observer.schedule(_Handler(self._on_change), str(self.logdir), recursive=True)
        self._armed = identity
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
