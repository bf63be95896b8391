"""The runs and files a pass could not examine or read: skipped (their data kept), said once,
tried again at every pass, and forgotten once a pass gets through them."""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass

from boardd.store.names import escape

#: The ingestor's logger, as configured by name (these lines are the ingestor's).
log = logging.getLogger("boardd.ingest.ingestor")


@dataclass(frozen=True, slots=True)
class Problem:
    """A run or file that could not be examined or read: skipped (its data kept), tried again
    at every pass until it works."""

    #: The path, as the store shows names (escaped when not valid UTF-8).
    path: str
    reason: str
    #: When it was first seen (seconds since the epoch).
    since: float


class Problems:
    """What this pass and the last could not read, by key (a file's key, a directory)."""

    def __init__(self) -> None:
        self._problems: dict[str, Problem] = {}
        #: The keys reported during the current full pass (the others have recovered).
        self._reported: set[str] | None = None

    def current(self) -> list[Problem]:
        """The runs and files skipped because they could not be read (at the last look)."""
        return sorted(self._problems.values(), key=lambda p: p.path)

    def add(self, key: str, reason: str) -> None:
        """Records that ``key`` could not be read; logged once (again only if the reason
        changes), listed by :meth:`current` until a pass gets through it."""
        if any(key.startswith(k + os.sep) for k in self._problems if k != key):
            return  # below a directory that cannot be read: that one says it
        if self._reported is not None:
            self._reported.add(key)
        known = self._problems.get(key)
        if known is not None and known.reason == reason:
            return
        path = escape(key)
        self._problems[key] = Problem(path, escape(reason), time.time())
        log.warning("cannot read %s (%s): skipped; tried again at every pass", path, reason)

    def solved(self, key: str) -> None:
        """``key`` was read: no longer a problem."""
        if self._problems.pop(key, None) is not None:
            log.info("%s is readable again", escape(key))

    def start_full_pass(self) -> None:
        """A full pass begins: what it does not meet again has recovered."""
        self._reported = set()

    def end_full_pass(self) -> None:
        """Forgets the problems a full pass no longer met."""
        reported, self._reported = self._reported, None
        if reported is None:
            return
        for key in [k for k in self._problems if k not in reported]:
            self.solved(key)


def describe_error(exc: BaseException) -> str:
    """An error as health and the log show it: its type, and its message if it has one."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror  # the path is told apart already
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
