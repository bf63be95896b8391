"""Which stores of this process are known damaged, and who wants to hear of damage.

Readers (the API's read connections) meet SQLite's corruption errors on their own threads, and
only the store's writer (the daemon's runner) can set the file aside and rebuild it. This is
where they meet: a reader that meets damage *suspects* (each listener checks its own store, as
a read does not say which file it came from when several were read); the writer *marks* its
store damaged once it knows, and readers then answer 503 for it, never data, until the writer
*clears* it (the rebuilt store is caught up).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from pathlib import Path

log = logging.getLogger(__name__)

_lock = threading.Lock()
_damaged: dict[str, str] = {}
_listeners: list[Callable[[str, str | None], None]] = []
_suspected: set[str] = set()


def key(db: str | os.PathLike[str]) -> str:
    """How this module names a store (its absolute path)."""
    return os.path.abspath(db)


def damaged(db: str | os.PathLike[str]) -> str | None:
    """Why ``db`` must not be read now (damaged, being rebuilt), or None."""
    if not _damaged:
        return None
    return _damaged.get(key(db))


def mark(db: str | os.PathLike[str], reason: str) -> None:
    """The writer knows ``db`` is damaged: readers answer ``reason`` (503) until cleared."""
    with _lock:
        _damaged[key(db)] = reason


def clear(db: str | os.PathLike[str]) -> None:
    """``db`` is whole again (rebuilt)."""
    with _lock:
        _damaged.pop(key(db), None)
        _suspected.discard(key(db))


def listen(callback: Callable[[str, str | None], None]) -> Callable[[], None]:
    """Calls ``callback(what was found, the store's absolute path or None)`` at each
    suspicion; returns the unsubscribe."""
    with _lock:
        _listeners.append(callback)

    def stop() -> None:
        with _lock:
            if callback in _listeners:
                _listeners.remove(callback)

    return stop


def suspect(found: str, db: str | os.PathLike[str] | Path | None = None) -> None:
    """A read met SQLite's corruption error (``found``), on ``db`` if known: the writers check
    their stores. Logged once per store (and once for reads of an unknown store)."""
    name = key(db) if db is not None else ""
    with _lock:
        first = name not in _suspected
        _suspected.add(name)
        listeners = list(_listeners)
    if first:
        where = f"store {db}" if db is not None else "a store"
        log.error("a read of %s met damage (%s): checking it", where, found)
    for callback in listeners:
        try:
            callback(found, name or None)
        except Exception:
            log.exception("a damage listener failed")
