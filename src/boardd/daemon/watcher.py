"""Watching a logdir for changes: inotify through watchdog, with polling as the fallback.

The watcher only says *which paths changed*; the ingest thread decides what to read. When
inotify cannot be used (NFS, FUSE, some containers, an exhausted watch limit) or its thread
dies, the watcher reports itself unhealthy and the ingest loop polls instead: a periodic full
rescan is the safety net in every mode.
"""

from __future__ import annotations

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
from watchdog.observers.api import BaseObserver

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


class LogdirWatcher:
    """Watches one logdir recursively. ``start()`` returns ``"inotify"`` or ``"polling"``.

    In polling mode nothing runs here: the ingest loop's periodic pass does the work.
    """

    def __init__(self, logdir: Path, on_change: OnChange, *, poll: bool = False) -> None:
        self.logdir = logdir
        self._on_change = on_change
        self._poll = poll
        self._observer: BaseObserver | None = None
        self._lock = threading.Lock()
        self.mode = "stopped"
        self.failure: str | None = None

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
                observer.schedule(_Handler(self._on_change), str(self.logdir), recursive=True)
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
