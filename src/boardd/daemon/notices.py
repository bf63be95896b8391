"""What a runner has been told since its last pass, and whether its watcher heard it all.

The watcher (any thread) reports changed files, structural changes (rediscover the runs) and
overflows of the kernel's queue; SIGHUP asks for a full pass. The runner's thread takes them
all at once before a pass. What was heard, and when, also stays a while: a safety rescan (a
full pass due to the interval alone, while every directory is watched) should find nothing
that no event announced, and a file it read unannounced is a miss the watcher is told of.
"""

from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from boardd.daemon.watcher import LogdirWatcher

#: The runner's logger, as configured by name (these lines are the runner's).
log = logging.getLogger("boardd.daemon.runner")

#: A safety rescan's files are judged (did an event announce each?) this long after it: the
#: event of a write made just before the rescan may still be on its way to the runner.
MISS_GRACE_SECONDS = 1.0


class Taken(NamedTuple):
    """What a pass is asked to read: the files heard changed, and whether runs are to be
    rediscovered, a full pass was asked for (SIGHUP), or the kernel dropped events."""

    changed: set[Path]
    rediscover: bool
    rescan: bool
    overflowed: bool


class Notices:
    """The notices of one runner's logdir; ``wake`` is set at each one."""

    def __init__(self, name: str, logdir: Path, wake: threading.Event) -> None:
        self.name = name
        self.logdir = logdir
        self._wake = wake
        self._lock = threading.Lock()
        self._changed: set[Path] = set()
        self._rediscover = False
        self._rescan_now = False
        self._overflowed = False
        #: time.time() of the oldest notice not yet taken (the lag in the runner's status).
        self.first_unseen_change: float | None = None
        #: What the watcher reported, and when (time.monotonic()): the safety rescan checks
        #: that each file it found changed was announced (see judge).
        self._heard: dict[Path, float] = {}
        #: When the last full pass started (what its successor's changes were heard since).
        self._last_full_start = 0.0
        #: A safety rescan's changed files waiting for judgement: (due, heard since, files).
        self._suspects: tuple[float, float, set[str]] | None = None

    # -- notices (any thread) ---------------------------------------------------------------

    def rescan(self) -> None:
        """Asks for a full pass over the logdir now (SIGHUP)."""
        with self._lock:
            self._rescan_now = True
        self._wake.set()

    def overflow(self) -> None:
        """Called by the watcher: the kernel dropped events. One full pass answers it (and
        any other overflow before that pass starts); the pass itself causes no events."""
        with self._lock:
            if self._overflowed:
                return
            self._overflowed = True
            if self.first_unseen_change is None:
                self.first_unseen_change = time.time()
        log.warning("%s: the inotify queue overflowed (events were lost): one full pass", self.name)
        self._wake.set()

    def notice(self, path: Path, structural: bool) -> None:
        """Called by the watcher: ``path`` changed (``structural``: rediscover runs)."""
        with self._lock:
            self._heard[path] = time.monotonic()
            if structural:
                self._rediscover = True
            else:
                self._changed.add(path)
            if self.first_unseen_change is None:
                self.first_unseen_change = time.time()
        self._wake.set()

    # -- the runner's thread ----------------------------------------------------------------

    def rescan_asked(self) -> bool:
        """Whether a full pass was asked for and not yet taken."""
        with self._lock:
            return self._rescan_now

    def take(self) -> Taken:
        """Everything noticed since the last take; the lag starts anew."""
        with self._lock:
            changed, self._changed = self._changed, set()
            rediscover, self._rediscover = self._rediscover, False
            rescan, self._rescan_now = self._rescan_now, False
            overflowed, self._overflowed = self._overflowed, False
            self.first_unseen_change = None
        return Taken(changed, rediscover, rescan, overflowed)

    def full_pass_starts(self) -> float:
        """Notes a full pass's start; returns the previous one's (what a change the pass
        finds must have been heard since). Forgets what was heard before that."""
        now = time.monotonic()
        since, self._last_full_start = self._last_full_start, now
        # A rescan still waiting for its judgement needs what was heard since its own start.
        keep = since if self._suspects is None else min(since, self._suspects[1])
        with self._lock:
            self._heard = {p: t for p, t in self._heard.items() if t >= keep}
        return since

    @property
    def judgement_due(self) -> float | None:
        """When the pending safety rescan is judged (time.monotonic()); None: none pending."""
        suspects = self._suspects
        return None if suspects is None else suspects[0]

    def suspect(self, files: set[str], since: float, done: float) -> None:
        """A safety rescan that started after the full pass of ``since`` and ended at
        ``done`` read ``files``: they are judged once its grace has passed. One judgement at
        a time: a later rescan finds a deaf watcher too."""
        if files and self._suspects is None:
            self._suspects = (done + MISS_GRACE_SECONDS, since, files)

    def judge(self, watcher: LogdirWatcher) -> None:
        """Once its grace has passed, checks that every file a safety rescan found changed was
        announced by the watcher (the file, or a directory above it): one that was not is a
        miss, and the watcher polls from then on."""
        suspects = self._suspects
        if suspects is None or time.monotonic() < suspects[0]:
            return
        self._suspects = None
        _due, since, files = suspects
        with self._lock:
            heard = {p for p, t in self._heard.items() if t >= since}
        root = self.logdir
        for key in sorted(files):
            path = Path(key)
            if path in heard:
                continue
            if any(parent in heard for parent in path.parents if parent.is_relative_to(root)):
                continue
            log.warning(
                "%s: the safety rescan read %s, changed with no inotify event", self.name, key
            )
            watcher.missed(key)
            return
