"""The checks of a runner's store for damage: read whole once it opens, checked with its
indexes now and then, and checked again when a reader reports damage.

The open of a store checks only its size, so that a restart answers at once; the whole read
follows in a thread of its own, and nothing is written into the store before it is done (see
:attr:`StoreChecks.scanned`). A damaged store is marked at once (readers answer 503 from then
on); the runner's thread learns it from :meth:`StoreChecks.check_if_asked`, which raises
StoreDamagedError, and sets the store aside.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from boardd.store import damage, integrity
from boardd.store.errors import StoreDamagedError

#: The runner's logger, as configured by name (these lines are the runner's).
log = logging.getLogger("boardd.daemon.runner")

#: A reader's report of damage makes the writer check its store at most this often.
SUSPICION_CHECK_SECONDS = 30.0
#: The whole store is checked (SQLite's integrity_check, indexes against their tables too)
#: this long after the runner goes live, then every INTEGRITY_EVERY_SECONDS, in a thread at
#: the lowest CPU priority. The environment variable shortens the first wait (for tests).
INTEGRITY_FIRST_SECONDS = float(os.environ.get("BOARDD_INTEGRITY_CHECK_AFTER", "600"))
INTEGRITY_EVERY_SECONDS = 86400.0


class StoreChecks:
    """The checks of one runner's store. ``stop`` ends them; ``wake`` is set when one found
    damage; ``mending`` says whether the store is being rebuilt (then it is not checked)."""

    def __init__(
        self,
        name: str,
        db: Path,
        *,
        stop: threading.Event,
        wake: threading.Event,
        mending: Callable[[], bool],
    ) -> None:
        self.name = name
        self.db = db
        self._stop = stop
        self._wake = wake
        self._mending = mending
        #: Set once the opening read of the whole store is done (see RunnerStatus).
        self.scanned = threading.Event()
        #: A reader met damage: (asked, it named this store); when the last check ran.
        self._check_asked: tuple[bool, bool] = (False, False)
        self._last_check = -SUSPICION_CHECK_SECONDS
        self._unlisten: Callable[[], None] | None = None
        #: What the background integrity check found (taken by the thread), and its thread.
        self._found_damage: str | None = None
        self._checker: threading.Thread | None = None

    def listen(self) -> None:
        """Hears from now on what readers report of damage."""
        self._unlisten = damage.listen(self._suspected)

    def _suspected(self, found: str, db: str | None) -> None:
        """A reader met damage (in ``db``, if it knows): the store is checked by the thread."""
        ours = db == damage.key(self.db)
        if db is not None and not ours:
            return
        self._check_asked = (True, self._check_asked[1] or ours)
        self._wake.set()

    def start(self) -> None:
        """Starts the background check (once per runner)."""
        if self._checker is None:
            self._checker = threading.Thread(
                target=self._check_in_background, name=f"boardd-{self.name}-check"
            )
            self._checker.start()

    def close(self) -> None:
        """Stops hearing readers and ends the background check (which ``stop`` ends)."""
        if self._unlisten is not None:
            self._unlisten()
        if self._checker is not None:
            self._stop.set()
            self._checker.join()

    def _check_in_background(self) -> None:
        try:
            self._check_now_and_then()
        finally:
            # Whatever ended the thread, the catch-up waiting for the first read goes on.
            self.scanned.set()

    def _check_now_and_then(self) -> None:
        """Reads the whole store as soon as it is open (quick_check: the open itself checked
        only its size), then checks it with its indexes now and then (integrity_check, see
        INTEGRITY_FIRST_SECONDS). On a read-only connection of its own, at the lowest CPU
        priority (a thread's own nice value on Linux): it holds no lock the writer waits for,
        and SQLite runs it without the GIL. What it finds is taken by the runner's thread,
        which sets the store aside."""
        with contextlib.suppress(OSError, AttributeError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        # A new store (scanned already) is first checked with its indexes, later.
        pragma, wait = (
            ("integrity_check", INTEGRITY_FIRST_SECONDS)
            if self.scanned.is_set()
            else ("quick_check", 0.0)
        )
        while not self._stop.wait(wait):
            first = pragma == "quick_check"
            wait = INTEGRITY_FIRST_SECONDS if first else INTEGRITY_EVERY_SECONDS
            check, pragma = pragma, "integrity_check"
            if self._mending() or not self.db.exists():
                self.scanned.set()
                continue
            started = time.monotonic()
            found = integrity.check_file(self.db, check)
            if found is None:
                log.info(
                    "%s: the store checks whole (%s, %.1f s)",
                    self.name,
                    check,
                    time.monotonic() - started,
                )
            elif not self._stop.is_set():
                # Readers answer 503 from here on, not once the runner's thread has taken it:
                # damage inside a page can read as fewer rows, never as an error.
                damage.mark(
                    self.db,
                    f"experiment {self.name}: store {self.db} is damaged ({found}); "
                    "it is being rebuilt from its logdir",
                )
                self._found_damage = found
                self._wake.set()
            # After the finding is in place: the catch-up waits for this, then looks at it.
            self.scanned.set()

    def check_if_asked(self) -> None:
        """Raises StoreDamagedError if the background check found damage, or if a reader met
        some and the store, checked now (at most every SUSPICION_CHECK_SECONDS), is damaged.
        On the runner's thread."""
        found_later = self._found_damage
        if found_later is not None:
            self._found_damage = None
            raise StoreDamagedError(f"store {self.db} is damaged ({found_later})")
        asked, _named = self._check_asked
        if not asked:
            return
        self._check_asked = (False, False)
        now = time.monotonic()
        if now - self._last_check < SUSPICION_CHECK_SECONDS:
            return
        self._last_check = now
        # A connection of its own: the writer's page cache holds the pages it read before,
        # still valid for SQLite (nothing it did changed them), however the file changed since.
        found = integrity.check_file(self.db)
        if found is not None:
            raise StoreDamagedError(f"store {self.db} is damaged ({found})")
        log.warning("%s: a read met damage, but the store checks whole", self.name)
