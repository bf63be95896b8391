"""What an experiment's runner reports: its state, the snapshot /api/v1/health and systemd's
STATUS= are made of, and the byte counters behind that snapshot's progress and rate."""

from __future__ import annotations

import enum
import time
from collections import deque
from dataclasses import dataclass, field

#: The ingest rate in /api/v1/health is the bytes read over this many seconds.
RATE_WINDOW_SECONDS = 10.0


class RunnerState(enum.Enum):
    """Where a runner is in its life."""

    STARTING = "starting"
    #: ``serve --rebuild``: a fresh store is built beside the old one, which is served meanwhile.
    REBUILDING = "rebuilding"
    CATCHING_UP = "catching_up"
    LIVE = "live"
    #: A pass failed (its cause in ``error``); it is tried again with back-off.
    RETRYING = "retrying"
    READ_ONLY = "read_only"
    #: The store was found damaged: set aside and rebuilt from the logdir; nothing of it is
    #: served until the new store has caught up (what was found and where the file went: in
    #: ``damage`` and ``error``).
    DAMAGED = "damaged"
    STOPPED = "stopped"
    FAILED = "failed"


@dataclass(slots=True)
class RunnerStatus:
    """A snapshot for /api/v1/health and systemd's STATUS=."""

    name: str
    logdir: str
    db: str
    state: str
    watch_mode: str
    generation: int
    last_commit: float | None
    lag_seconds: float | None
    #: Bytes of event files this runner has read since the daemon started (catch-up, then
    #: live), and those plus the bytes it knows are still to read: both keep growing live.
    bytes_done: int
    bytes_total: int
    error: str | None
    #: Failed passes in a row (0 when the last one worked).
    retries: int = 0
    #: Seconds to the next try while retrying; None otherwise.
    retry_in_seconds: float | None = None
    #: Runs and files skipped because they cannot be read: [{path, reason, since}].
    unreadable: list[dict[str, object]] = field(default_factory=list)
    #: Times the inotify queue overflowed (events lost), and the full passes that answered
    #: them (several overflows before the pass starts are answered by one).
    watch_overflows: int = 0
    overflow_passes: int = 0
    #: Directories inotify could not watch (the watch limit): polled; and why.
    unwatched_directories: int = 0
    #: Why anything is polled rather than heard (the watch limit, a filesystem whose inotify
    #: misses other writers, changes a rescan found unannounced); None when nothing is.
    watch_problem: str | None = None
    #: Changes that safety rescans found and no inotify event had announced.
    watch_misses: int = 0
    #: Seconds between safety rescans now: ``--rescan-interval``, longer for a logdir whose
    #: pass costs more than 1 % of it (see :data:`boardd.daemon.runner.RESCAN_CPU_SHARE`).
    rescan_interval_seconds: float = 0.0
    #: A remote logdir's bill so far: listings, GETs, bytes fetched (None: a local logdir).
    remote_requests: dict[str, int] | None = None
    #: The last damaged store: {found, set_aside (its path), since, lost_runs (runs it had
    #: that the logdir no longer has, None until the rebuild is done or if unknown)}.
    damage: dict[str, object] | None = None
    #: Whether the store has been read whole since it opened (its open checks only its size;
    #: the read follows at once, in the background: until then damage within a page is not
    #: known, unless a read meets it).
    store_checked: bool = False
    #: Bytes read per second over the last RATE_WINDOW_SECONDS.
    bytes_per_second: float = 0.0
    #: While a store keeping more points (``--samples-per-plugin`` asked more than the store
    #: keeps) is rebuilt beside the served one: the sampling it keeps; None otherwise.
    resampling: str | None = None


class ReadCounts:
    """The bytes of event files a runner has read since the daemon started, those it knows are
    still to read, and the rate of the last RATE_WINDOW_SECONDS. Written on the runner's
    thread; read without locks for its status."""

    def __init__(self) -> None:
        self.done = 0
        self.total = 0
        #: ``done`` when the current pass began (its progress counts from there).
        self.pass_base = 0
        #: (time.monotonic(), bytes) of the reads of the last RATE_WINDOW_SECONDS.
        self._reads: deque[tuple[float, int]] = deque()
        self._born = time.monotonic()

    def start_pass(self, pending: int) -> None:
        """A pass begins with ``pending`` bytes to read: its progress counts from here."""
        self.pass_base = self.done
        self.total = self.done + pending

    def pass_progress(self, done: int, total: int) -> None:
        """The current pass has read ``done`` of its ``total`` bytes."""
        self.read(self.pass_base + done, self.pass_base + total)

    def read(self, done: int, total: int | None = None) -> None:
        """The counters at ``done`` bytes read (and ``total`` known) since the daemon started;
        the bytes newly read count into the rate."""
        now = time.monotonic()
        if done > self.done:
            self._reads.append((now, done - self.done))
        while self._reads and now - self._reads[0][0] > RATE_WINDOW_SECONDS:
            self._reads.popleft()
        self.done = done
        self.total = max(done, self.total if total is None else total)

    def rate(self) -> float:
        """Bytes read per second over the last RATE_WINDOW_SECONDS (the runner's life, when
        shorter, but at least a second)."""
        now = time.monotonic()
        recent = [n for t, n in list(self._reads) if now - t <= RATE_WINDOW_SECONDS]
        window = max(1.0, min(RATE_WINDOW_SECONDS, now - self._born))
        return round(sum(recent) / window, 1)


def describe_exception(exc: BaseException) -> str:
    """``Type: message``, once: some libraries' messages (APSW's older releases) already begin
    with their type's name."""
    name, text = type(exc).__name__, str(exc)
    return text if text.startswith(f"{name}:") else f"{name}: {text}"


def describe(status: RunnerStatus) -> str:
    """A one-line STATUS= text for systemd."""
    busy = {
        RunnerState.CATCHING_UP.value: "catching up",
        RunnerState.REBUILDING.value: "rebuilding",
    }
    if status.state in busy and status.bytes_total:
        pct = 100.0 * status.bytes_done / status.bytes_total
        doing = busy[status.state]
        return f"{status.name}: {doing} {pct:.0f}% of {status.bytes_total / 1e6:.0f} MB"
    if status.state == RunnerState.RETRYING.value:
        wait = "" if status.retry_in_seconds is None else f" in {status.retry_in_seconds:.0f} s"
        return f"{status.name}: retrying{wait}: {status.error}"
    if status.state == RunnerState.LIVE.value:
        # Lag: how long the oldest change not yet committed has waited (none: up to date).
        lag = "up to date" if status.lag_seconds is None else f"lag {status.lag_seconds:.1f} s"
        return f"{status.name}: live ({status.watch_mode}), {lag}, generation {status.generation}"
    return f"{status.name}: {status.state.replace('_', ' ')}"
