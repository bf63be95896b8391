"""A runner's failed passes: tried again after a delay that doubles at each failure in a row,
each cause said once, and the recovery said with how many tries it took."""

from __future__ import annotations

import logging
import time

import apsw

#: The runner's logger, as configured by name (these lines are the runner's).
log = logging.getLogger("boardd.daemon.runner")

#: Failures that pass by themselves (space freed, a device back, a lock released): logged
#: without a traceback. Any other failure is retried too, with its traceback logged once.
TRANSIENT: tuple[type[BaseException], ...] = (
    apsw.FullError,
    apsw.IOError,
    apsw.BusyError,
    apsw.LockedError,
    apsw.CantOpenError,
    OSError,
)

#: After a pass fails (a full disk, an I/O error, a lock held too long, anything), it is tried
#: again after this long, doubled at each failure in a row up to RETRY_MAX_SECONDS; SIGHUP
#: tries at once.
RETRY_FIRST_SECONDS = 1.0
RETRY_MAX_SECONDS = 60.0


class Backoff:
    """The failures in a row of one runner (``name``) and when the next try is due."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.retries = 0
        #: time.monotonic() of the next try while retrying; None otherwise.
        self.retry_at: float | None = None
        self._logged_cause: str | None = None

    def retry_at_or_now(self) -> float:
        """When the next try is due: now, unless retrying."""
        at = self.retry_at
        return time.monotonic() if at is None else at

    def failed(self, exc: Exception, cause: str) -> None:
        """A pass failed with ``exc`` (``cause``: its description): schedules the next try,
        and says why unless the previous failure had the same cause. Called where ``exc`` is
        handled, so that its traceback is the one logged."""
        self.retries += 1
        delay = min(RETRY_MAX_SECONDS, RETRY_FIRST_SECONDS * 2 ** min(self.retries - 1, 16))
        self.retry_at = time.monotonic() + delay
        if cause == self._logged_cause:
            return
        self._logged_cause = cause
        if isinstance(exc, TRANSIENT) or isinstance(exc.__cause__, TRANSIENT):
            log.warning(
                "%s: ingest paused (%s); nothing is lost: trying again in %.0f s, "
                "backing off up to %.0f s (SIGHUP: now)",
                self.name,
                cause,
                delay,
                RETRY_MAX_SECONDS,
            )
        else:
            log.exception(
                "%s: ingest failed; trying again in %.0f s, backing off up to %.0f s",
                self.name,
                delay,
                RETRY_MAX_SECONDS,
            )

    def recovered(self, what: str, error: str | None) -> None:
        """The failure (``error``) is over: says so once, with how many tries it took, and
        starts counting anew."""
        log.info(
            "%s: %s after %d failed tr%s (%s)",
            self.name,
            what,
            self.retries,
            "y" if self.retries == 1 else "ies",
            error,
        )
        self.retry_at = None
        self._logged_cause = None
        self.retries = 0
