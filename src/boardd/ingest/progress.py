"""Progress of an ingest for people: a line on a terminal, or a log line every few seconds."""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Callable
from typing import TextIO

#: Called with (bytes done, bytes to do) as ingest goes.
Progress = Callable[[int, int], None]

#: A catch-up reports its progress once it has lasted this long, then this often in a log.
CATCH_UP_REPORT_SECONDS = 5.0
#: Undocumented, for tests: another report interval for a whole ``boardd serve``.
_INTERVAL_VARIABLE = "BOARDD_PROGRESS_SECONDS"


def describe(done: int, total: int, elapsed: float) -> str:
    """``12.3 / 55.0 MB  22.4%  10.1 MB/s  ETA 4.2 s``: done of total, rate, time left."""
    elapsed = max(elapsed, 1e-9)
    rate = done / elapsed
    eta = (total - done) / rate if rate > 0 else 0.0
    pct = 100.0 * done / total if total else 100.0
    return (
        f"{done / 1e6:.1f} / {total / 1e6:.1f} MB  {pct:.1f}%  {rate / 1e6:.1f} MB/s  "
        f"ETA {eta:.1f} s"
    )


class ProgressLine:
    """A one-line progress display on a terminal: bytes done of total, MB/s, ETA.

    Redrawn at most every 0.2 s, from ``delay`` seconds on (a short job shows nothing);
    :meth:`clear` erases it before other output. ``clock`` gives the time in seconds
    (:func:`time.monotonic` unless a test drives its own).
    """

    def __init__(
        self,
        stream: TextIO,
        *,
        prefix: str = "",
        delay: float = 0.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._stream = stream
        self._prefix = prefix
        self._clock = clock
        self._start = clock()
        self._delay = delay
        self._last = -math.inf
        self._shown = False

    def __call__(self, done: int, total: int) -> None:
        now = self._clock()
        if now - self._last < 0.2 or now - self._start < self._delay:
            return
        self._last = now
        elapsed = max(now - self._start, 1e-9)
        rate = done / elapsed
        eta = (total - done) / rate if rate > 0 else 0.0
        pct = 100.0 * done / total if total else 100.0
        self._stream.write(
            f"\r{self._prefix}{done / 1e6:8.1f} / {total / 1e6:.1f} MB  {pct:5.1f}%  "
            f"{rate / 1e6:6.1f} MB/s  ETA {eta:5.1f} s "
        )
        self._stream.flush()
        self._shown = True

    def clear(self) -> None:
        """Erases the progress line."""
        if self._shown:
            self._stream.write("\r\033[K")
            self._stream.flush()
            self._shown = False


class ProgressLog:
    """Progress as a log line every ``interval`` seconds; nothing for a job that ends sooner.
    ``clock`` gives the time in seconds (:func:`time.monotonic` unless a test drives its own)."""

    def __init__(
        self,
        logger: logging.Logger,
        prefix: str,
        interval: float,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._log = logger
        self._prefix = prefix
        self._interval = interval
        self._clock = clock
        self._start = self._next = clock()
        self._next += interval

    def __call__(self, done: int, total: int) -> None:
        now = self._clock()
        if now < self._next:
            return
        self._next = now + self._interval
        self._log.info("%s%s", self._prefix, describe(done, total, now - self._start))

    def clear(self) -> None:
        """Nothing to erase in a log."""


def report_interval() -> float:
    """:data:`CATCH_UP_REPORT_SECONDS`, unless the (test-only) environment says otherwise."""
    text = os.environ.get(_INTERVAL_VARIABLE)
    try:
        value = float(text) if text else CATCH_UP_REPORT_SECONDS
    except ValueError:
        return CATCH_UP_REPORT_SECONDS
    return value if value > 0 else CATCH_UP_REPORT_SECONDS


def catch_up_reporter(
    name: str, stream: TextIO, logger: logging.Logger
) -> ProgressLine | ProgressLog:
    """How a daemon's catch-up shows progress: a line on ``stream`` if it is a terminal,
    else log lines; either only once the catch-up has lasted :func:`report_interval`."""
    interval = report_interval()
    if stream.isatty():
        return ProgressLine(stream, prefix=f"{name}: catching up ", delay=interval)
    return ProgressLog(logger, f"{name}: catching up: ", interval)
