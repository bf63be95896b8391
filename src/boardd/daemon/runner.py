"""One experiment's ingest thread: catch up, then follow the logdir live; or serve read-only.

The thread owns the store's writer (the one writer of that store). It catches up with whatever
is new since the last run, then waits for change notices from the watcher (debounced by a few
milliseconds, so a burst of writes is one read), reads just the affected files and commits. A
periodic full pass is the safety net, and the only mechanism when polling. If another process
holds the store's lease, the runner stays read-only (the API still answers from the store) and
retries the lease until it gets it.
"""

from __future__ import annotations

import contextlib
import enum
import logging
import os
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import apsw

from boardd.config import ExperimentSpec, ServeSettings
from boardd.store import damage, fingerprint, integrity
from boardd.store.bus import ChangeHub, WriterClaim
from boardd.store.errors import (
    FingerprintMismatchError,
    LeaseHeldError,
    StoreDamagedError,
    StoreError,
    StoreReadOnlyError,
)
from boardd.store.lease import LeaseLostError
from boardd.store.session import WriteSession

if TYPE_CHECKING:
    # Imported by the thread when it needs them: `boardd serve` binds its port and answers
    # its first request without loading the ingest machinery (the reader, watchdog, the pool).
    from boardd.daemon.watcher import LogdirWatcher
    from boardd.data.sqlite_provider import SqliteProvider
    from boardd.ingest.ingestor import Ingestor, PassResult
    from boardd.ingest.progress import Progress, ProgressLine, ProgressLog
    from boardd.ingest.remote import RequestCounts
    from boardd.ingest.sources import ByteSource

log = logging.getLogger(__name__)


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

#: How often a read-only runner tries to take the lease over.
LEASE_RETRY_SECONDS = 2.0
#: How often a runner whose store cannot be written (a read-only file, directory or mount)
#: tries to open it for writing again.
READ_ONLY_RETRY_SECONDS = 30.0
#: A reader's report of damage makes the writer check its store at most this often.
SUSPICION_CHECK_SECONDS = 30.0
#: The whole store is checked (SQLite's integrity_check, indexes against their tables too)
#: this long after the runner goes live, then every INTEGRITY_EVERY_SECONDS, in a thread at
#: the lowest CPU priority. The environment variable shortens the first wait (for tests).
INTEGRITY_FIRST_SECONDS = float(os.environ.get("BOARDD_INTEGRITY_CHECK_AFTER", "600"))
INTEGRITY_EVERY_SECONDS = 86400.0
#: How often the lease heartbeat is renewed when there is nothing to commit.
HEARTBEAT_SECONDS = 5.0
#: The ingest rate in /api/v1/health is the bytes read over this many seconds.
RATE_WINDOW_SECONDS = 10.0
#: After a pass fails (a full disk, an I/O error, a lock held too long, anything), it is tried
#: again after this long, doubled at each failure in a row up to RETRY_MAX_SECONDS; SIGHUP
#: tries at once.
RETRY_FIRST_SECONDS = 1.0
RETRY_MAX_SECONDS = 60.0
#: The safety rescan (a full pass while inotify watches) takes at most this share of one CPU:
#: a logdir whose pass with nothing new costs more than 1 % of ``--rescan-interval`` is
#: rescanned less often (a logdir of many thousands of runs: bench/bench_scale.py's idle
#: CPU counts its passes), up to RESCAN_STRETCH_MAX times the interval. The interval in
#: force is in health.
RESCAN_CPU_SHARE = 0.01
RESCAN_STRETCH_MAX = 10.0
#: A restart's catch-up starts once the daemon has answered its first request, or this long
#: after the store opened if none came (see ExperimentRunner._await_first_answer).
CATCH_UP_AFTER_SECONDS = 0.5
#: A remote logdir's requests are logged at most this often (when they changed).
REMOTE_LOG_SECONDS = 60.0
#: A safety rescan's files are judged (did an event announce each?) this long after it: the
#: event of a write made just before the rescan may still be on its way to the runner.
MISS_GRACE_SECONDS = 1.0


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
    #: pass costs more than 1 % of it (see :data:`RESCAN_CPU_SHARE`).
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


class ExperimentRunner:
    """Runs one experiment's writer in a thread of its own; ``stop()`` is safe to call twice."""

    def __init__(
        self,
        spec: ExperimentSpec,
        settings: ServeSettings,
        *,
        beat: Callable[[str], None] | None = None,
        beat_interval: float | None = None,
        bus: ChangeHub | None = None,
        warm: threading.Event | None = None,
        answered: threading.Event | None = None,
        provider: SqliteProvider | None = None,
    ) -> None:
        self.spec = spec
        # The served store's data provider, warmed up once caught up (None: not served here).
        self._provider = provider
        # The hparams preload waits for it once caught up (the daemon sets it after its first
        # answer: the preload does not compete with that); None: no wait.
        self._warm = warm
        # A restart's catch-up waits for it (see _await_first_answer); None: no wait.
        self._answered = answered
        self.settings = settings
        self._beat = beat or (lambda _name: None)
        # An idle loop must still beat this often (systemd's watchdog: half of WatchdogSec).
        self._beat_every = beat_interval if beat_interval else HEARTBEAT_SECONDS
        # While writing, the runner claims its store on the bus, which announces its commits.
        self._bus = bus
        self._claim: WriterClaim | None = None
        self._stop = threading.Event()
        self._release = threading.Event()
        self._wake = threading.Event()
        self._changes_lock = threading.Lock()
        self._changed: set[Path] = set()
        self._rediscover = False
        self._rescan_now = False
        self._overflowed = False
        self.overflow_passes = 0
        #: What the watcher reported, and when (time.monotonic()): the safety rescan checks
        #: that each file it found changed was announced (see _judge_rescan).
        self._heard: dict[Path, float] = {}
        #: When the last full pass started (what its successor's changes were heard since).
        self._last_full_start = 0.0
        #: A safety rescan's changed files waiting for judgement: (due, heard since, files).
        self._suspects: tuple[float, float, set[str]] | None = None
        self._thread = threading.Thread(target=self._main, name=f"boardd-{spec.name}", daemon=True)
        self._session: WriteSession | None = None
        self._ingestor: Ingestor | None = None
        self._watcher: LogdirWatcher | None = None
        self._reporter: ProgressLine | ProgressLog | None = None
        self.opened = threading.Event()
        self.state = RunnerState.STARTING
        self.generation = 0
        self._restarted = False
        self.last_commit: float | None = None
        self.first_unseen_change: float | None = None
        self.bytes_done = 0
        self.bytes_total = 0
        #: bytes_done when the current pass began (its progress counts from there).
        self._pass_base = 0
        #: (time.monotonic(), bytes) of the reads of the last RATE_WINDOW_SECONDS.
        self._reads: deque[tuple[float, int]] = deque()
        self._born = time.monotonic()
        self.error: str | None = None
        self.retries = 0
        #: time.monotonic() of the next try while retrying.
        self._retry_at: float | None = None
        self._logged_cause: str | None = None
        #: CPU seconds of the last full pass that read nothing (None: none yet).
        self._idle_pass_cpu: float | None = None
        #: The safety rescan's interval in force (see :data:`RESCAN_CPU_SHARE`).
        self.rescan_interval = settings.rescan_interval
        #: A remote logdir's requests, kept across store sessions (None: a local logdir).
        self.remote_counts: RequestCounts | None = None
        if spec.remote:
            from boardd.ingest.remote import RequestCounts

            self.remote_counts = RequestCounts()
        self._remote_logged: tuple[float, dict[str, int]] | None = None
        #: See RunnerStatus.damage; the runs the damaged store knew (None: unreadable).
        self.damage: dict[str, object] | None = None
        #: Set once the opening read of the whole store is done (see RunnerStatus).
        self.scanned = threading.Event()
        self._damaged_runs: list[str] | None = None
        #: Rebuilding a damaged store: readers get 503 until the new one has caught up.
        self._mending = False
        #: A reader met damage: (asked, it named this store); when the last check ran.
        self._check_asked: tuple[bool, bool] = (False, False)
        self._last_check = -SUSPICION_CHECK_SECONDS
        self._unlisten: Callable[[], None] | None = None
        #: What the background integrity check found (taken by the thread), and its thread.
        self._found_damage: str | None = None
        self._checker: threading.Thread | None = None

    # -- control (any thread) -------------------------------------------------------------

    def start(self) -> None:
        """Starts the thread; :attr:`opened` is set once the store is open (or read-only)."""
        self._unlisten = damage.listen(self._suspected)
        self._thread.start()

    def _suspected(self, found: str, db: str | None) -> None:
        """A reader met damage (in ``db``, if it knows): the store is checked by the thread."""
        ours = db == damage.key(self.spec.db)
        if db is not None and not ours:
            return
        self._check_asked = (True, self._check_asked[1] or ours)
        self._wake.set()

    def request_stop(self) -> None:
        """Makes the thread stop taking work, without waiting (safe in a signal handler)."""
        self._stop.set()
        if self._ingestor is not None:
            self._ingestor.stop_event.set()
        self._wake.set()

    def stop(self, timeout: float = 15.0) -> None:
        """Stops taking work, commits the current batch, releases the lease, checkpoints.

        Call it once the HTTP server has closed its read connections: the writer closes last,
        so SQLite can fold the WAL into the main file and remove it.
        """
        self.request_stop()
        self._release.set()
        if self._thread.is_alive():
            self._thread.join(timeout)

    def rescan(self) -> None:
        """Asks for a full pass over the logdir now (SIGHUP)."""
        with self._changes_lock:
            self._rescan_now = True
        self._wake.set()

    def overflow(self) -> None:
        """Called by the watcher: the kernel dropped events. One full pass answers it (and
        any other overflow before that pass starts); the pass itself causes no events."""
        with self._changes_lock:
            if self._overflowed:
                return
            self._overflowed = True
            if self.first_unseen_change is None:
                self.first_unseen_change = time.time()
        log.warning(
            "%s: the inotify queue overflowed (events were lost): one full pass", self.spec.name
        )
        self._wake.set()

    def notice(self, path: Path, structural: bool) -> None:
        """Called by the watcher: ``path`` changed (``structural``: rediscover runs)."""
        with self._changes_lock:
            self._heard[path] = time.monotonic()
            if structural:
                self._rediscover = True
            else:
                self._changed.add(path)
            if self.first_unseen_change is None:
                self.first_unseen_change = time.time()
        self._wake.set()

    @property
    def alive(self) -> bool:
        """Whether the thread is running."""
        return self._thread.is_alive()

    def status(self) -> RunnerStatus:
        """A consistent-enough snapshot of this runner (read without locks)."""
        pending = self.first_unseen_change
        watcher = self._watcher
        watch = watcher.mode if watcher is not None else "none"
        retry_at = self._retry_at
        ingestor = self._ingestor
        problems = ingestor.problems if ingestor is not None else []
        return RunnerStatus(
            name=self.spec.name,
            logdir=str(self.spec.logdir),
            db=str(self.spec.db),
            state=self.state.value,
            watch_mode=watch,
            generation=self.generation,
            last_commit=self.last_commit,
            lag_seconds=None if pending is None else max(0.0, time.time() - pending),
            bytes_done=self.bytes_done,
            bytes_total=self.bytes_total,
            error=self.error,
            retries=self.retries,
            retry_in_seconds=(
                None if retry_at is None else round(max(0.0, retry_at - time.monotonic()), 3)
            ),
            unreadable=[{"path": p.path, "reason": p.reason, "since": p.since} for p in problems],
            watch_overflows=watcher.overflows if watcher is not None else 0,
            overflow_passes=self.overflow_passes,
            unwatched_directories=watcher.unwatched if watcher is not None else 0,
            watch_problem=watcher.problem() if watcher is not None else None,
            watch_misses=watcher.misses if watcher is not None else 0,
            rescan_interval_seconds=round(self.rescan_interval, 3),
            remote_requests=(
                self.remote_counts.as_dict() if self.remote_counts is not None else None
            ),
            damage=None if self.damage is None else dict(self.damage),
            store_checked=self.scanned.is_set(),
            bytes_per_second=self._rate(),
        )

    def _rate(self) -> float:
        """Bytes read per second over the last RATE_WINDOW_SECONDS (the runner's life, when
        shorter, but at least a second)."""
        now = time.monotonic()
        recent = [n for t, n in list(self._reads) if now - t <= RATE_WINDOW_SECONDS]
        window = max(1.0, min(RATE_WINDOW_SECONDS, now - self._born))
        return round(sum(recent) / window, 1)

    def _read(self, done: int, total: int | None = None) -> None:
        """The counters at ``done`` bytes read (and ``total`` known) since the daemon started;
        the bytes newly read count into the rate. On the runner's thread."""
        now = time.monotonic()
        if done > self.bytes_done:
            self._reads.append((now, done - self.bytes_done))
        while self._reads and now - self._reads[0][0] > RATE_WINDOW_SECONDS:
            self._reads.popleft()
        self.bytes_done = done
        self.bytes_total = max(done, self.bytes_total if total is None else total)

    # -- the thread -----------------------------------------------------------------------

    def _main(self) -> None:
        try:
            if self.settings.rebuild:
                self._rebuild_if_needed()
            while not self._stop.is_set():
                if not self._open():
                    return
                try:
                    self._catch_up()
                    if not self._stop.is_set():
                        self._live()
                    return
                except LeaseLostError as exc:
                    # Another boardd took the store over (ours had stalled past the expiry):
                    # serve read-only, and take it back once that one stops.
                    self.error = str(exc)
                    log.error("%s: %s", self.spec.name, exc)
                    self.state = RunnerState.READ_ONLY
                    self._drop_session()
                    self._idle(LEASE_RETRY_SECONDS)
                except StoreDamagedError as exc:
                    # Met while reading or writing: set aside, and the next open starts anew.
                    self._abandon_session()
                    self._set_aside(exc)
        except Exception as exc:
            self.error = describe_exception(exc)
            self.state = RunnerState.FAILED
            log.exception("%s: ingest stopped", self.spec.name)
        finally:
            # Set before _close(), which waits for stop(): whatever ended the thread, the
            # service waiting for the store to open must go on and serve (or say) it.
            self.opened.set()
            self._close()

    def _open(self) -> bool:
        """Opens the store as its writer; while another process holds it, stays read-only."""
        while not self._stop.is_set():
            # A store made now has nothing to read whole: its catch-up need not wait.
            if not self.spec.db.exists():
                self.scanned.set()
            try:
                # Only the store's size is checked here; it is read whole right after, in the
                # background (_check_in_background), so a restart answers at once.
                self._session = WriteSession(
                    self.spec.db, self.spec.logdir, sampling=self.settings.sampling, scan=False
                )
            except LeaseHeldError as exc:
                if self.state is not RunnerState.READ_ONLY:
                    log.warning("%s: %s Serving read-only meanwhile.", self.spec.name, exc)
                    self.error = str(exc)
                    self.state = RunnerState.READ_ONLY
                    self.opened.set()
                self._idle(LEASE_RETRY_SECONDS)
                continue
            except StoreDamagedError as exc:
                self._set_aside(exc)
                continue
            except StoreReadOnlyError as exc:
                # Nothing can be ingested, but the store may well be complete: served as it
                # is (once checked whole), and opened for writing again from time to time.
                if self.state not in (RunnerState.READ_ONLY, RunnerState.DAMAGED):
                    self._read_only(exc)
                self._idle(READ_ONLY_RETRY_SECONDS)
                continue
            except StoreError as exc:
                if isinstance(exc.__cause__, TRANSIENT):
                    # A full disk, an I/O error, a lock, a directory in the way: served as
                    # far as it can be (nothing yet), and tried again with back-off.
                    self._failed(exc)
                    self.opened.set()
                    self._idle(max(0.0, self._retry_at_or_now() - time.monotonic()))
                    continue
                self.error = str(exc)
                self.state = RunnerState.FAILED
                log.error("%s: %s", self.spec.name, exc)
                self.opened.set()
                return False
            if self._retry_at is not None:
                self._recovered("the store opened")
            if self.state is RunnerState.READ_ONLY:
                log.info("%s: took the store's lease over: now writing", self.spec.name)
            if not self._mending:
                self.error = None
            writer = self._session.writer
            self.generation = writer.generation
            # A restart: the store has commits to answer from before the catch-up.
            self._restarted = writer.generation > 0
            writer.on_commit(self._committed)
            if self._bus is not None:
                self._claim = self._bus.claim(self.spec.name, writer)
            self.state = RunnerState.DAMAGED if self._mending else RunnerState.CATCHING_UP
            self.opened.set()
            self._start_checker()
            return True
        return False

    def _read_only(self, exc: StoreReadOnlyError) -> None:
        """The store cannot be written: served as it is if it checks whole; if damaged, it
        cannot be set aside either, and nothing of it is served."""
        name, db = self.spec.name, self.spec.db
        found = integrity.check_file(db)
        if found is not None:
            self.error = f"store {db} is damaged ({found}) and cannot be set aside: {exc}"
            damage.mark(db, f"experiment {name}: {self.error}")
            self.damage = {"found": found, "set_aside": None, "since": time.time()}
            self.state = RunnerState.DAMAGED
            log.error("%s: %s", name, self.error)
        else:
            log.warning(
                "%s: %s. Serving what it holds; the logdir is not followed until it can be "
                "written.",
                name,
                exc,
            )
            self.error = str(exc)
            self.state = RunnerState.READ_ONLY
        self.opened.set()

    def _set_aside(self, exc: StoreDamagedError) -> None:
        """The store is damaged: readers answer 503 for it from now on; the file (with its
        log) is set aside, kept for inspection, and the next open makes a new store that the
        catch-up fills from the logdir (where the data is)."""
        name, db = self.spec.name, self.spec.db
        found = str(exc)
        damage.mark(db, f"experiment {name}: {found}; it is being rebuilt from its logdir")
        self._mending = True
        self.state = RunnerState.DAMAGED
        self._damaged_runs = integrity.known_runs(db)
        try:
            aside = integrity.set_aside(db)
        except OSError as move_error:
            # Its directory cannot be written (or the file vanished): said, and tried again.
            self.error = f"{found}; it cannot be set aside ({move_error})"
            if self.damage is None or self.damage.get("set_aside") is not None:
                log.error("%s: %s; trying again", name, self.error)
            self.damage = {"found": found, "set_aside": None, "since": time.time()}
            self.opened.set()
            self._idle(LEASE_RETRY_SECONDS)
            return
        self.error = f"{found}; set aside as {aside}; rebuilding it from the logdir"
        self.damage = {
            "found": found,
            "set_aside": str(aside),
            "since": time.time(),
            "lost_runs": None,
        }
        log.error("%s: %s", name, self.error)
        self.opened.set()

    def _mended(self) -> None:
        """The new store has caught up with the logdir: it is served, and what the damaged
        one had that the logdir no longer holds is said."""
        if not self._mending or self._session is None:
            return
        self._mending = False
        current = {str(n) for (n,) in self._session.connection.execute("SELECT name FROM runs")}
        lost = None if self._damaged_runs is None else sorted(set(self._damaged_runs) - current)
        if self.damage is not None:
            self.damage["lost_runs"] = lost
        damage.clear(self.spec.db)
        self.error = None
        if lost:
            log.error(
                "%s: store rebuilt from the logdir; the damaged store had %d run(s) the logdir "
                "no longer holds, lost: %s",
                self.spec.name,
                len(lost),
                ", ".join(lost),
            )
        else:
            known = "" if lost is not None else " (the damaged store's runs could not be read)"
            log.info("%s: store rebuilt from the logdir%s", self.spec.name, known)

    def _start_checker(self) -> None:
        """Starts the background check (once per runner)."""
        if self._checker is None:
            self._checker = threading.Thread(
                target=self._check_in_background, name=f"boardd-{self.spec.name}-check"
            )
            self._checker.start()

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
            if self._mending or not self.spec.db.exists():
                self.scanned.set()
                continue
            started = time.monotonic()
            found = integrity.check_file(self.spec.db, check)
            if found is None:
                log.info(
                    "%s: the store checks whole (%s, %.1f s)",
                    self.spec.name,
                    check,
                    time.monotonic() - started,
                )
            elif not self._stop.is_set():
                # Readers answer 503 from here on, not once the runner's thread has taken it:
                # damage inside a page can read as fewer rows, never as an error.
                damage.mark(
                    self.spec.db,
                    f"experiment {self.spec.name}: store {self.spec.db} is damaged ({found}); "
                    "it is being rebuilt from its logdir",
                )
                self._found_damage = found
                self._wake.set()
            # After the finding is in place: the catch-up waits for this, then looks at it.
            self.scanned.set()

    def _check_if_asked(self) -> None:
        """A reader met damage: checks this store, at most every SUSPICION_CHECK_SECONDS;
        raises StoreDamagedError if it is damaged."""
        found_later = self._found_damage
        if found_later is not None:
            self._found_damage = None
            raise StoreDamagedError(f"store {self.spec.db} is damaged ({found_later})")
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
        found = integrity.check_file(self.spec.db)
        if found is not None:
            raise StoreDamagedError(f"store {self.spec.db} is damaged ({found})")
        log.warning("%s: a read met damage, but the store checks whole", self.spec.name)

    def _source(self) -> ByteSource | Path:
        """What the ingestor reads: the local directory, or the remote logdir through fsspec
        (decoded in this process, workers=1: its requests are counted here, and a catch-up
        is bound by the network, not by decoding)."""
        logdir = self.spec.logdir
        if isinstance(logdir, Path):
            return logdir
        from boardd.ingest.remote import RemoteSource

        return RemoteSource(
            logdir,
            self.settings.storage_options,
            block_size=self.settings.remote_block_size,
            counts=self.remote_counts,
        )

    def _log_remote_requests(self, force: bool = False) -> None:
        """The remote logdir's bill, in the log at most every REMOTE_LOG_SECONDS (and only when
        it changed): a user sees the requests coming."""
        counts = self.remote_counts
        if counts is None:
            return
        now = time.monotonic()
        current = counts.as_dict()
        last = self._remote_logged
        if last is not None and (
            last[1] == current or (now - last[0] < REMOTE_LOG_SECONDS and not force)
        ):
            return
        self._remote_logged = (now, current)
        log.info("%s: %s so far: %s", self.spec.name, self.spec.logdir, counts.describe())

    def _built_with_other_settings(self) -> bool:
        try:
            fingerprint.verify(self.spec.db, self.spec.logdir, self.settings.sampling)
        except FingerprintMismatchError:
            return True
        return False

    def _rebuild_if_needed(self) -> None:
        """Rebuilds the store if it was built with other settings; while another process
        writes it, serves it read-only and tries again (that one may have rebuilt it)."""
        while not self._stop.is_set() and self._built_with_other_settings():
            try:
                self._rebuild()
                return
            except LeaseHeldError as exc:
                if self.state is not RunnerState.READ_ONLY:
                    log.warning(
                        "%s: %s Serving it read-only; rebuilding once it stops.",
                        self.spec.name,
                        exc,
                    )
                    self.error = str(exc)
                    self.state = RunnerState.READ_ONLY
                    self.opened.set()
                self._idle(LEASE_RETRY_SECONDS)

    def _rebuild(self) -> None:
        """``serve --rebuild``: builds a fresh store beside the old one (which the API keeps
        serving, and whose lease this holds so nobody else writes it), then swaps it in; the
        runner then opens it as usual. Stopped before the end, the old store stays as it was."""
        from boardd.ingest.ingestor import Ingestor
        from boardd.ingest.progress import catch_up_reporter

        name = self.spec.name
        session = WriteSession(
            self.spec.db, self.spec.logdir, sampling=self.settings.sampling, rebuild=True
        )
        self.state = RunnerState.REBUILDING
        self.opened.set()
        log.info(
            "%s: %s was built with other settings: rebuilding it beside the old one (%s), "
            "which is served until the new one is complete",
            name,
            self.spec.db,
            session.path,
        )
        started = time.monotonic()
        ingestor = Ingestor(
            session.writer,
            self._source(),
            experiment=name,
            crc_mode=self.settings.crc_mode,
            workers=1 if self.spec.remote else None,
        )
        self._ingestor = ingestor
        complete = False
        try:
            if self._stop.is_set():
                ingestor.stop_event.set()
            self._pass_base = self.bytes_done
            self.bytes_total = self.bytes_done + ingestor.pending_bytes()
            self._reporter = catch_up_reporter(name, sys.stderr, log)
            try:
                ingestor.run_pass(progress=self._progress)
            finally:
                self._reporter.clear()
                self._reporter = None
            ingestor.close()
            complete = not ingestor.stop_requested()
        finally:
            self._ingestor = None
            if complete:
                # No longer "rebuilding" from here on: the swap is about to happen.
                self.state = RunnerState.STARTING
            session.close(success=complete)
        if complete:
            log.info(
                "%s: rebuilt in %.1f s; serving the new store", name, time.monotonic() - started
            )
        else:
            log.info("%s: rebuild stopped; the old store is kept as it was", name)

    def _drop_session(self) -> None:
        """Lets go of a store whose lease was lost (nothing more can be committed to it)."""
        self._unclaim()
        if self._watcher is not None:
            self._watcher.stop()
            self._watcher = None
        self._ingestor = None
        if self._session is not None:
            try:
                self._session.close()
            except Exception:
                log.exception("%s: closing the store failed", self.spec.name)
            self._session = None

    def _abandon_session(self) -> None:
        """Lets go of a damaged store: nothing more is committed, released or checkpointed
        into it (its log stays with it, for whoever inspects it)."""
        self._unclaim()
        if self._watcher is not None:
            self._watcher.stop()
            self._watcher = None
        # Its pending batch is dropped, not committed: the new store reads it all again.
        self._ingestor = None
        session, self._session = self._session, None
        if session is not None:
            with contextlib.suppress(Exception):
                session.abandon()

    def _idle(self, seconds: float) -> None:
        """Waits ``seconds`` (or until stopped), beating all along."""
        deadline = time.monotonic() + seconds
        while True:
            self._beat(self.spec.name)
            left = deadline - time.monotonic()
            if left <= 0 or self._stop.wait(min(left, self._beat_every)):
                return

    def _committed(self, generation: int) -> None:
        self.generation = generation
        self.last_commit = time.time()

    def _unclaim(self) -> None:
        if self._claim is not None:
            self._claim.release()
            self._claim = None

    def _start_watcher(self) -> LogdirWatcher:
        """Arms the watcher (once per session). It is armed before the catch-up's pass, so
        that what changes meanwhile (a file truncated or rewritten after the pass read it) is
        noticed and read right after, not at the next rescan."""
        if self._watcher is None:
            from boardd.daemon.watcher import LogdirWatcher

            # A remote logdir is polled: a pass with nothing new costs one listing.
            self._watcher = LogdirWatcher(
                Path(self.spec.logdir),
                self.notice,
                poll=self.settings.poll or self.spec.remote,
                on_overflow=self.overflow,
            )
            self._watcher.start()
        return self._watcher

    def _make_ingestor(self) -> None:
        """The open session's ingestor; made as the catch-up starts (a restart's first answer
        does not wait for the ingest's modules to load)."""
        from boardd.ingest.ingestor import Ingestor

        assert self._session is not None
        self._ingestor = Ingestor(
            self._session.writer,
            self._source(),
            experiment=self.spec.name,
            crc_mode=self.settings.crc_mode,
            workers=1 if self.spec.remote else None,
        )
        if self._stop.is_set():
            self._ingestor.stop_event.set()

    def _catch_up(self) -> None:
        self._await_first_answer()
        # Nothing is written into a store not yet read whole (the catch-up would purge runs
        # the logdir lost, which a damaged store's rebuild must still be able to name).
        while not self.scanned.wait(0.05) and not self._stop.is_set():
            self._beat(self.spec.name)
        self._check_if_asked()
        # Imported after the wait, not beside the start's first answer.
        from boardd.ingest.progress import catch_up_reporter

        self._make_ingestor()
        assert self._ingestor is not None
        self._start_watcher()
        try:
            self._pass_base = self.bytes_done
            self.bytes_total = self.bytes_done + self._ingestor.pending_bytes()
        except Exception as exc:
            # A remote logdir's server cannot be reached: the live loop tries again (a full
            # pass) once the back-off has passed.
            self._failed(exc)
            return
        log.info(
            "%s: catching up on %.1f MB in %s",
            self.spec.name,
            (self.bytes_total - self._pass_base) / 1e6,
            self.spec.logdir,
        )
        started = time.monotonic()
        # Progress for people, once the catch-up has lasted a few seconds: a line on a
        # terminal, a log line every few seconds otherwise.
        self._reporter = catch_up_reporter(self.spec.name, sys.stderr, log)
        try:
            self._full_pass_starts()
            result = self._timed_pass(progress=self._progress)
        except LeaseLostError:
            raise
        except Exception as exc:
            # The live loop tries again (a full pass) once the back-off has passed.
            self._failed(exc)
            return
        finally:
            self._reporter.clear()
            self._reporter = None
        if self._ingestor.stop_requested():
            log.info(
                "%s: catch-up stopped after %.1f MB; the rest is read at the next start",
                self.spec.name,
                result.bytes_read / 1e6,
            )
            return
        self._read(max(self.bytes_done, self.bytes_total))
        log.info("%s: caught up in %.2f s", self.spec.name, time.monotonic() - started)
        self._mended()
        self._log_remote_requests(force=True)
        if getattr(self._ingestor.source, "listed_nothing", False):
            # Not an error (a job may not have started writing), but a typo looks the same.
            log.warning(
                "%s: nothing under %s (no object at all): check the bucket and the prefix; "
                "following it meanwhile",
                self.spec.name,
                self.spec.logdir,
            )

    def _await_first_answer(self) -> None:
        """On a restart (the store has data), the catch-up starts once the daemon has sent its
        first answer, or CATCH_UP_AFTER_SECONDS after the store opened: the store answers at
        once, and the catch-up (the logdir's walk, the ingest's imports) does not compete with
        that answer for the interpreter (bench/bench_tensorboard.py's start). A new store
        catches up at once: until it has, there is nothing to answer."""
        if self._answered is None or not self._restarted:
            return
        deadline = time.monotonic() + CATCH_UP_AFTER_SECONDS
        while not self._answered.is_set() and not self._stop.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self._answered.wait(min(left, 0.05))  # a stop ends the wait too

    def _preload(self) -> None:
        if self._warm is not None:
            self._warm.wait()
            if self._stop.is_set():
                return
        if self._provider is None:
            return
        # The scalar series first (the dashboard's first view reads them), then hparams.
        self._provider.preload_columns(self._stop)
        if self._stop.is_set():
            return
        self._provider.preload_hparams()

    def _progress(self, done: int, total: int) -> None:
        self._read(self._pass_base + done, self._pass_base + total)
        if self._reporter is not None:
            self._reporter(done, total)
        self._beat(self.spec.name)

    def _live(self) -> None:
        assert self._ingestor is not None
        watcher = self._start_watcher()
        if self._retry_at is None:
            self.state = RunnerState.LIVE
            log.info("%s: live (%s)", self.spec.name, watcher.mode)
        else:
            log.info(
                "%s: following the logdir (%s) once it answers; retrying meanwhile",
                self.spec.name,
                watcher.mode,
            )
        threading.Thread(target=self._preload, name="preload", daemon=True).start()
        self._start_checker()
        unwatched = watcher.unwatched_reason()
        if unwatched is not None:
            log.warning(
                "%s: %s every %g s (docs/troubleshooting.md: raising fs.inotify.max_user_watches)",
                self.spec.name,
                unwatched,
                self.settings.poll_interval,
            )
        last_pass = last_heartbeat = time.monotonic()
        while not self._stop.is_set():
            # Directories that cannot be watched are polled: the whole logdir, at the polling
            # interval (a pass with nothing new only looks at sizes).
            interval = (
                self.settings.remote_poll_interval
                if self.spec.remote
                else self.settings.poll_interval
                if watcher.mode == "polling" or watcher.unwatched
                else self.rescan_interval
            )
            now = time.monotonic()
            due = self._retry_at if self._retry_at is not None else last_pass + interval
            if self._suspects is not None:
                due = min(due, self._suspects[0])
            timeout = min(due - now, HEARTBEAT_SECONDS, self._beat_every)
            self._wake.wait(max(0.0, timeout))
            if self._stop.is_set():
                break
            if self._wake.is_set():
                self._wake.clear()
                # Debounce: a burst of writes (several tags, several files) becomes one read.
                self._stop.wait(self.settings.debounce_seconds)
            watcher.healthy()
            self._check_if_asked()
            self._judge_rescan(watcher)
            # A watch armed again (the logdir was deleted and created anew) missed what
            # happened while it was dead: a full pass reads it.
            rearmed = watcher.take_rearmed()
            retrying = self._retry_at is not None
            if retrying and time.monotonic() < self._retry_at_or_now() and not self._rescan_asked():
                # Backing off: changes wait (the lag grows); SIGHUP cuts the wait short.
                self._beat(self.spec.name)
                continue
            changed, rediscover, rescan, overflowed = self._take_changes()
            now = time.monotonic()
            if overflowed:
                self.overflow_passes += 1
            # A try after a failure is a full pass: the changes taken then were not read.
            asked = retrying or rediscover or rescan or rearmed or overflowed
            full = asked or now - last_pass >= interval
            # A pass due to the interval alone, while every directory is watched: whatever
            # it finds changed, an event should have announced.
            safety = full and not asked and watcher.mode == "inotify" and not watcher.unwatched
            try:
                if full:
                    since = self._full_pass_starts()
                    result = self._timed_pass(
                        progress=lambda _done, _total: self._beat(self.spec.name)
                    )
                    self._read(self.bytes_done + result.bytes_read)
                    last_pass = time.monotonic()
                    if safety and result.files_read and self._suspects is None:
                        # One judgement at a time: a later rescan finds a deaf watcher too.
                        self._suspects = (last_pass + MISS_GRACE_SECONDS, since, result.files_read)
                    self._log_remote_requests()
                elif changed:
                    read = self._ingestor.ingest_changed(changed).bytes_read
                    self._read(self.bytes_done + read)
                committed = self._ingestor.flush() if not full else 0
                if (
                    not full
                    and not changed
                    and not committed
                    and now - last_heartbeat >= HEARTBEAT_SECONDS
                ):
                    self._ingestor.writer.renew_lease()
            except LeaseLostError:
                raise
            except Exception as exc:
                self._failed(exc)
                self._beat(self.spec.name)
                continue
            if retrying:
                self._recovered()
                self._mended()
                self.state = RunnerState.LIVE
            if full or changed or committed:
                last_heartbeat = now
            self._beat(self.spec.name)
        watcher.stop()

    def _full_pass_starts(self) -> float:
        """Notes a full pass's start; returns the previous one's (what a change the pass
        finds must have been heard since). Forgets what was heard before that."""
        now = time.monotonic()
        since, self._last_full_start = self._last_full_start, now
        # A rescan still waiting for its judgement needs what was heard since its own start.
        keep = since if self._suspects is None else min(since, self._suspects[1])
        with self._changes_lock:
            self._heard = {p: t for p, t in self._heard.items() if t >= keep}
        return since

    def _judge_rescan(self, watcher: LogdirWatcher) -> None:
        """Once its grace has passed, checks that every file a safety rescan found changed was
        announced by the watcher (the file, or a directory above it): one that was not is a
        miss, and the watcher polls from then on."""
        suspects = self._suspects
        if suspects is None or time.monotonic() < suspects[0]:
            return
        self._suspects = None
        _due, since, files = suspects
        with self._changes_lock:
            heard = {p for p, t in self._heard.items() if t >= since}
        root = Path(self.spec.logdir)
        for key in sorted(files):
            path = Path(key)
            if path in heard:
                continue
            if any(parent in heard for parent in path.parents if parent.is_relative_to(root)):
                continue
            log.warning(
                "%s: the safety rescan read %s, changed with no inotify event", self.spec.name, key
            )
            watcher.missed(key)
            return

    def _timed_pass(self, progress: Progress) -> PassResult:
        """A full pass; sets the safety rescan's interval by what a pass with nothing new
        costs: this one's CPU if it read nothing, else the part it spent finding what to read
        (so that the first rescan after a catch-up is spaced already)."""
        assert self._ingestor is not None
        cpu = time.thread_time()
        result = self._ingestor.run_pass(progress=progress)
        if not self._ingestor.stop_requested():
            if result.bytes_read == 0:
                self._idle_pass_cpu = time.thread_time() - cpu
            else:
                self._idle_pass_cpu = result.scan_cpu_seconds
            configured = self.settings.rescan_interval
            self.rescan_interval = min(
                max(configured, self._idle_pass_cpu / RESCAN_CPU_SHARE),
                configured * RESCAN_STRETCH_MAX,
            )
        return result

    def _retry_at_or_now(self) -> float:
        at = self._retry_at
        return time.monotonic() if at is None else at

    def _rescan_asked(self) -> bool:
        with self._changes_lock:
            return self._rescan_now

    def _failed(self, exc: Exception) -> None:
        """A pass failed: says why (once per cause), and schedules the next try. Damage is
        no failure to retry: it raises StoreDamagedError (the store is set aside)."""
        if isinstance(exc, StoreDamagedError):
            raise exc
        if integrity.is_damage(exc):
            raise StoreDamagedError(
                f"store {self.spec.db} is damaged ({describe_exception(exc)})"
            ) from exc
        cause = describe_exception(exc)
        self.error = cause
        self.retries += 1
        delay = min(RETRY_MAX_SECONDS, RETRY_FIRST_SECONDS * 2 ** min(self.retries - 1, 16))
        self._retry_at = time.monotonic() + delay
        self.state = RunnerState.RETRYING
        if cause != self._logged_cause:
            self._logged_cause = cause
            if isinstance(exc, TRANSIENT) or isinstance(exc.__cause__, TRANSIENT):
                log.warning(
                    "%s: ingest paused (%s); nothing is lost: trying again in %.0f s, "
                    "backing off up to %.0f s (SIGHUP: now)",
                    self.spec.name,
                    cause,
                    delay,
                    RETRY_MAX_SECONDS,
                )
            else:
                log.exception(
                    "%s: ingest failed; trying again in %.0f s, backing off up to %.0f s",
                    self.spec.name,
                    delay,
                    RETRY_MAX_SECONDS,
                )

    def _recovered(self, what: str = "ingest resumed") -> None:
        """The failure is over: says so once, with how many tries it took, and clears it
        (the caller sets the state that follows)."""
        log.info(
            "%s: %s after %d failed tr%s (%s)",
            self.spec.name,
            what,
            self.retries,
            "y" if self.retries == 1 else "ies",
            self.error,
        )
        self._retry_at = None
        self._logged_cause = None
        self.retries = 0
        self.error = None

    def _take_changes(self) -> tuple[set[Path], bool, bool, bool]:
        with self._changes_lock:
            changed, self._changed = self._changed, set()
            rediscover, self._rediscover = self._rediscover, False
            rescan, self._rescan_now = self._rescan_now, False
            overflowed, self._overflowed = self._overflowed, False
            self.first_unseen_change = None
        return changed, rediscover, rescan, overflowed

    def _close(self) -> None:
        if self._unlisten is not None:
            self._unlisten()
        if self._checker is not None:
            self._stop.set()
            self._checker.join()
        if self._watcher is not None:
            self._watcher.stop()
        if self._ingestor is not None:
            try:
                self._ingestor.close()
            except Exception:
                log.exception("%s: final commit failed", self.spec.name)
        # Everything read is committed: nothing more is written to the store.
        self._unclaim()
        # Keep the lease and the connection until stop().
        self._release.wait()
        if self._session is not None:
            try:
                self._session.close()
            except Exception:
                log.exception("%s: closing the store failed", self.spec.name)
        if self.state is not RunnerState.FAILED:
            self.state = RunnerState.STOPPED


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
