"""One experiment's ingest thread: catch up, then follow the logdir live; or serve read-only.

The thread owns the store's writer (the one writer of that store). It catches up with whatever
is new since the last run, then waits for change notices from the watcher (debounced by a few
milliseconds, so a burst of writes is one read), reads just the affected files and commits. A
periodic full pass is the safety net, and the only mechanism when polling. If another process
holds the store's lease, the runner stays read-only (the API still answers from the store) and
retries the lease until it gets it.

Beside the runner: what the watcher and SIGHUP tell it (:mod:`boardd.daemon.notices`), the checks
of its store for damage (:mod:`boardd.daemon.store_checks`), the back-off of its failed passes
(:mod:`boardd.daemon.backoff`), and what it reports (:mod:`boardd.daemon.runner_status`).
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from boardd.config import ExperimentSpec, ServeSettings
from boardd.daemon.backoff import TRANSIENT, Backoff
from boardd.daemon.notices import Notices
from boardd.daemon.runner_status import (
    ReadCounts,
    RunnerState,
    RunnerStatus,
    describe_exception,
)
from boardd.daemon.store_checks import StoreChecks
from boardd.store import damage, fingerprint, integrity
from boardd.store.bus import ChangeHub, WriterClaim
from boardd.store.errors import (
    FingerprintMismatchError,
    LeaseHeldError,
    SamplingGrowsError,
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


#: How often a read-only runner tries to take the lease over.
LEASE_RETRY_SECONDS = 2.0
#: How often a runner whose store cannot be written (a read-only file, directory or mount)
#: tries to open it for writing again.
READ_ONLY_RETRY_SECONDS = 30.0
#: How often the lease heartbeat is renewed when there is nothing to commit.
HEARTBEAT_SECONDS = 5.0
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
        #: What the watcher and SIGHUP asked for since the last pass.
        self._notices = Notices(spec.name, Path(spec.logdir), self._wake)
        self.overflow_passes = 0
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
        #: Bytes read since the daemon started and known to read, and the rate.
        self._counts = ReadCounts()
        self.error: str | None = None
        self._backoff = Backoff(spec.name)
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
        self._damaged_runs: list[str] | None = None
        #: Rebuilding a damaged store: readers get 503 until the new one has caught up.
        self._mending = False
        #: While a store with a larger sample is rebuilt beside the served one: its sampling.
        self.resampling: str | None = None
        self._checks = StoreChecks(
            spec.name, spec.db, stop=self._stop, wake=self._wake, mending=lambda: self._mending
        )
        #: Set once the opening read of the whole store is done (see RunnerStatus).
        self.scanned = self._checks.scanned

    # -- control (any thread) -------------------------------------------------------------

    def start(self) -> None:
        """Starts the thread; :attr:`opened` is set once the store is open (or read-only)."""
        self._checks.listen()
        self._thread.start()

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
        self._notices.rescan()

    @property
    def alive(self) -> bool:
        """Whether the thread is running."""
        return self._thread.is_alive()

    def status(self) -> RunnerStatus:
        """A consistent-enough snapshot of this runner (read without locks)."""
        pending = self._notices.first_unseen_change
        watcher = self._watcher
        watch = watcher.mode if watcher is not None else "none"
        retry_at = self._backoff.retry_at
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
            bytes_done=self._counts.done,
            bytes_total=self._counts.total,
            error=self.error,
            retries=self._backoff.retries,
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
            bytes_per_second=self._counts.rate(),
            resampling=self.resampling,
        )

    # -- the thread -----------------------------------------------------------------------

    def _main(self) -> None:
        try:
            if self.settings.rebuild:
                self._rebuild_if_needed()
            else:
                self._resample_if_needed()
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
                # background (StoreChecks), so a restart answers at once.
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
            except SamplingGrowsError as exc:
                # A store of an older schema keeping fewer points than asked: only its writer
                # could read it, and has now migrated it. Rebuilt in the background as any
                # such store (_main's first look could not read it).
                if self._larger_sampling() is not None:
                    self._resample_if_needed()
                    continue
                return self._not_opened(exc)
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
                    self._idle(max(0.0, self._backoff.retry_at_or_now() - time.monotonic()))
                    continue
                return self._not_opened(exc)
            if self._backoff.retry_at is not None:
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
            self._checks.start()
            return True
        return False

    def _not_opened(self, exc: StoreError) -> bool:
        """The store cannot be opened, and trying again would not change it: said, and the
        thread ends (the service serves what it can)."""
        self.error = str(exc)
        self.state = RunnerState.FAILED
        log.error("%s: %s", self.spec.name, exc)
        self.opened.set()
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
            fingerprint.verify(self.spec.db, self.spec.logdir, self.settings.sampling, exact=True)
        except FingerprintMismatchError:
            return True
        return False

    def _larger_sampling(self) -> dict[str, int | None] | None:
        """The sampling to rebuild the store with when it keeps fewer points of some plugin
        than asked (the larger of both); None when it keeps enough (or there is none yet)."""
        try:
            fingerprint.verify(self.spec.db, self.spec.logdir, self.settings.sampling)
        except SamplingGrowsError as exc:
            return exc.larger
        except FingerprintMismatchError:
            return None  # `boardd serve` refused it before starting; the open says it again
        return None

    def _resample_if_needed(self) -> None:
        """A store that keeps fewer points than asked is served as it is while a store with
        the larger sample is built beside it (as ``--rebuild`` does), then swapped in."""
        larger = self._larger_sampling()
        if larger is None:
            return
        log.info(
            "%s: %s keeps fewer points than --samples-per-plugin asks: serving it as it is "
            "while a store keeping %s is rebuilt in the background",
            self.spec.name,
            self.spec.db,
            fingerprint.sampling_text(larger),
        )
        self.resampling = fingerprint.sampling_text(larger)
        try:
            self._rebuild_if_needed(larger)
        finally:
            self.resampling = None

    def _rebuild_if_needed(self, sampling: dict[str, int | None] | None = None) -> None:
        """Rebuilds the store if it was built with other settings (``sampling``: with it, if
        the store keeps fewer points than that); while another process writes it, serves it
        read-only and tries again (that one may have rebuilt it)."""
        while not self._stop.is_set() and (
            self._built_with_other_settings()
            if sampling is None
            else self._larger_sampling() is not None
        ):
            try:
                self._rebuild(sampling)
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

    def _rebuild(self, sampling: dict[str, int | None] | None = None) -> None:
        """``serve --rebuild``: builds a fresh store beside the old one (which the API keeps
        serving, and whose lease this holds so nobody else writes it), then swaps it in; the
        runner then opens it as usual. Stopped before the end, the old store stays as it was."""
        from boardd.ingest.ingestor import Ingestor
        from boardd.ingest.progress import catch_up_reporter

        name = self.spec.name
        session = WriteSession(
            self.spec.db,
            self.spec.logdir,
            sampling=self.settings.sampling if sampling is None else sampling,
            rebuild=True,
        )
        self.state = RunnerState.REBUILDING
        self.opened.set()
        if sampling is None:
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
            self._counts.start_pass(ingestor.pending_bytes())
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
                self._notices.notice,
                poll=self.settings.poll or self.spec.remote,
                on_overflow=self._notices.overflow,
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
        self._checks.check_if_asked()
        # Imported after the wait, not beside the start's first answer.
        from boardd.ingest.progress import catch_up_reporter

        self._make_ingestor()
        assert self._ingestor is not None
        self._start_watcher()
        try:
            self._counts.start_pass(self._ingestor.pending_bytes())
        except Exception as exc:
            # A remote logdir's server cannot be reached: the live loop tries again (a full
            # pass) once the back-off has passed.
            self._failed(exc)
            return
        log.info(
            "%s: catching up on %.1f MB in %s",
            self.spec.name,
            (self._counts.total - self._counts.pass_base) / 1e6,
            self.spec.logdir,
        )
        started = time.monotonic()
        # Progress for people, once the catch-up has lasted a few seconds: a line on a
        # terminal, a log line every few seconds otherwise.
        self._reporter = catch_up_reporter(self.spec.name, sys.stderr, log)
        try:
            self._notices.full_pass_starts()
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
        self._counts.read(max(self._counts.done, self._counts.total))
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
        from boardd.plugins.hparams import data as hparams  # not on the start path

        hparams.preload_provider(self._provider)

    def _progress(self, done: int, total: int) -> None:
        self._counts.pass_progress(done, total)
        if self._reporter is not None:
            self._reporter(done, total)
        self._beat(self.spec.name)

    def _live(self) -> None:
        assert self._ingestor is not None
        watcher = self._start_watcher()
        if self._backoff.retry_at is None:
            self.state = RunnerState.LIVE
            log.info("%s: live (%s)", self.spec.name, watcher.mode)
        else:
            log.info(
                "%s: following the logdir (%s) once it answers; retrying meanwhile",
                self.spec.name,
                watcher.mode,
            )
        threading.Thread(target=self._preload, name="preload", daemon=True).start()
        self._checks.start()
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
            retry_at = self._backoff.retry_at
            due = retry_at if retry_at is not None else last_pass + interval
            judgement = self._notices.judgement_due
            if judgement is not None:
                due = min(due, judgement)
            timeout = min(due - now, HEARTBEAT_SECONDS, self._beat_every)
            self._wake.wait(max(0.0, timeout))
            if self._stop.is_set():
                break
            if self._wake.is_set():
                self._wake.clear()
                # Debounce: a burst of writes (several tags, several files) becomes one read.
                self._stop.wait(self.settings.debounce_seconds)
            watcher.healthy()
            self._checks.check_if_asked()
            self._notices.judge(watcher)
            # A watch armed again (the logdir was deleted and created anew) missed what
            # happened while it was dead: a full pass reads it.
            rearmed = watcher.take_rearmed()
            retrying = self._backoff.retry_at is not None
            if (
                retrying
                and time.monotonic() < self._backoff.retry_at_or_now()
                and not self._notices.rescan_asked()
            ):
                # Backing off: changes wait (the lag grows); SIGHUP cuts the wait short.
                self._beat(self.spec.name)
                continue
            changed, rediscover, rescan, overflowed = self._notices.take()
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
                    since = self._notices.full_pass_starts()
                    result = self._timed_pass(
                        progress=lambda _done, _total: self._beat(self.spec.name)
                    )
                    self._counts.read(self._counts.done + result.bytes_read)
                    last_pass = time.monotonic()
                    if safety:
                        self._notices.suspect(result.files_read, since, last_pass)
                    self._log_remote_requests()
                elif changed:
                    read = self._ingestor.ingest_changed(changed).bytes_read
                    self._counts.read(self._counts.done + read)
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
        self.state = RunnerState.RETRYING
        self._backoff.failed(exc, cause)

    def _recovered(self, what: str = "ingest resumed") -> None:
        """The failure is over: says so once, with how many tries it took, and clears it
        (the caller sets the state that follows)."""
        self._backoff.recovered(what, self.error)
        self.error = None

    def _close(self) -> None:
        self._checks.close()
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
