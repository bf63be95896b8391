"""The ingestor: brings a store up to date with a logdir's event files, from their offsets.

:class:`Ingestor` owns the file life cycle: new files and runs are picked up; a growing file
resumes from its committed offset; a replaced file (new inode, it shrank, its first bytes or
those before its offset changed) is read again from 0 with the rest of its run, as a fresh
ingest would read them (:meth:`StoreWriter.restart_run`); a deleted file keeps its data; a run
whose directory is gone is purged and hidden. Decoded batches are committed in groups (by bytes
and by time) together with the new offsets. It reads through a
:class:`~boardd.ingest.sources.ByteSource` (a local logdir unless told otherwise).
"""

from __future__ import annotations

import collections
import dataclasses
import errno
import functools
import itertools
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import apsw

from boardd.ingest.batching import Pending, coalesce
from boardd.ingest.parallel import ReadyRuns, can_fork, default_workers, many_files_workers
from boardd.ingest.progress import Progress
from boardd.ingest.sources import (
    ByteSource,
    FileIdentity,
    LocalFileSource,
    SourceFile,
    SourceUnavailableError,
    read_head,
    read_tail,
    same_start,
    size_now,
    unavailable,
)
from boardd.reader.errors import ReaderError
from boardd.reader.logdir import ROOT_RUN, DiscoveryProblem
from boardd.reader.modes import CrcMode
from boardd.reader.types import DecodedBatch
from boardd.store.names import escape
from boardd.store.writer import FileProgress, FileRecord, StoreWriter

if TYPE_CHECKING:
    from boardd.ingest.segment import Segment
    from boardd.ingest.worker_pool import WorkerPool
    from boardd.reader.events import EventDecoder
    from boardd.reader.source import RandomAccessBytes

# The decoding side (protobuf, the framing and decode pipeline, worker processes) is imported
# when there is something to read: a restart with nothing new never loads it.

log = logging.getLogger(__name__)

#: Defaults chosen with bench/bench_commit.py: CPU is flat across commit sizes; smaller ones
#: cost less memory and WAL and commit more often (8 MiB reads beat smaller ones and tie
#: larger ones).
DEFAULT_COMMIT_BYTES = 16 * 2**20
DEFAULT_COMMIT_SECONDS = 0.5
DEFAULT_BATCH_BYTES = 8 * 2**20

#: A catch-up of at least this many bytes over several runs is decoded in worker processes.
DEFAULT_PARALLEL_MIN_BYTES = 64 * 2**20
#: A pass over at least this many files with something to read (of several runs) is decoded
#: in worker processes too, however few bytes: per file, decoding costs about what committing
#: does (bench/bench_scale.py: 10,000 runs × 1 small file).
DEFAULT_PARALLEL_MIN_FILES = 1000
#: How much of a file one worker task decodes before handing the batches back.
SEGMENT_BYTES = 8 * 2**20
#: While workers run, this process decodes in smaller batches: it also holds what they send.
#: (bench_ingest (a): the tree's PSS drops, time within noise.)
HERE_BATCH_BYTES = 4 * 2**20
#: Small files are sent to a worker several to a task, up to this many bytes and files.
GROUP_BYTES = 2**20
GROUP_FILES = 256


@dataclass(frozen=True, slots=True)
class Problem:
    """A run or file that could not be examined or read: skipped (its data kept), tried again
    at every pass until it works."""

    #: The path, as the store shows names (escaped when not valid UTF-8).
    path: str
    reason: str
    #: When it was first seen (seconds since the epoch).
    since: float


class _StartOver(Exception):
    """A file of a run was replaced: the run is read again from its files as they are now."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"{key}: {reason}")
        self.key = key
        self.reason = reason


@dataclass(slots=True)
class PassResult:
    """What one pass over the logdir did."""

    bytes_read: int = 0
    records: int = 0
    commits: int = 0
    files_changed: list[str] = field(default_factory=list)
    #: The files whose read offset the pass moved forward (new whole records were read).
    files_read: set[str] = field(default_factory=set)
    runs_deleted: list[str] = field(default_factory=list)
    #: CPU seconds (this thread's) spent finding what to read: the walk and the life-cycle
    #: checks, not creating records nor reading: about what a pass with nothing new costs.
    scan_cpu_seconds: float = 0.0


@dataclass(slots=True)
class _FileWork:
    """A file with something left to read, after its life-cycle checks."""

    run_id: int
    file: SourceFile
    record: FileRecord
    identity: FileIdentity
    offset: int
    replaced: bool
    head: bytes | None = None

    def progress(self, consumed: int, data: RandomAccessBytes | None = None) -> FileProgress:
        """The file's state to commit once everything up to ``consumed`` is written (with the
        bytes before it as they are now: read through ``data``, the file as the reader has it
        open, if given)."""
        ident = self.identity
        return FileProgress(
            self.record.id,
            consumed,
            ident.size,
            ident.mtime,
            ident.device,
            ident.inode,
            head=self.head,
            tail=read_tail(self.file, consumed, data),
            version=ident.version,
        )

    def left(self) -> int:
        """Bytes to read from :attr:`offset` to the end the file had when it was examined."""
        return max(0, self.identity.size - self.offset)


class Ingestor:
    """Brings one experiment's store up to date with its logdir; one thread owns it.

    ``logdir`` is a local directory's path, or any :class:`ByteSource`.
    """

    def __init__(
        self,
        writer: StoreWriter,
        logdir: str | os.PathLike[str] | ByteSource,
        *,
        experiment: str = "default",
        crc_mode: CrcMode = CrcMode.ALWAYS,
        commit_bytes: int = DEFAULT_COMMIT_BYTES,
        commit_seconds: float = DEFAULT_COMMIT_SECONDS,
        batch_bytes: int = DEFAULT_BATCH_BYTES,
        workers: int | None = None,
        parallel_min_bytes: int = DEFAULT_PARALLEL_MIN_BYTES,
        parallel_min_files: int = DEFAULT_PARALLEL_MIN_FILES,
        segment_bytes: int = SEGMENT_BYTES,
        fork: bool = True,
    ) -> None:
        self.writer = writer
        self.source: ByteSource = (
            LocalFileSource(logdir) if isinstance(logdir, (str, os.PathLike)) else logdir
        )
        self.crc_mode = crc_mode
        self.commit_bytes = commit_bytes
        self.commit_seconds = commit_seconds
        self.batch_bytes = batch_bytes
        self.workers = default_workers() if workers is None else workers
        #: Decoders for a pass over many small files: worth a spawned worker from 2 CPUs up.
        self.many_files_workers = many_files_workers() if workers is None else workers
        self.parallel_min_bytes = parallel_min_bytes
        self.parallel_min_files = parallel_min_files
        self.segment_bytes = segment_bytes
        #: Whether decode workers may be forked (when :func:`can_fork`), not spawned.
        self.fork = fork
        #: Set it (from any thread) to make a pass stop taking work: what was read is committed.
        self.stop_event = threading.Event()
        with writer.transaction():
            self.experiment_id = writer.ensure_experiment(experiment, self.source.location)
        self._decoders: dict[int, EventDecoder] = {}
        self._pending: list[Pending] = []
        self._pending_bytes = 0
        self._pending_since = 0.0
        #: What this pass and the last could not read, by key (a file's key, a directory).
        self._problems: dict[str, Problem] = {}
        #: The keys reported during the current full pass (the others have recovered).
        self._reported: set[str] | None = None
        #: During a full pass: what the store knows, loaded once (see :class:`_Known`).
        self._known: _Known | None = None
        #: The runs (and problems) :meth:`pending_bytes` found, for the next pass to take.
        self._found: tuple[dict[str, list[SourceFile]], list[DiscoveryProblem]] | None = None
        #: CPU seconds :meth:`pending_bytes` spent walking the logdir (for scan_cpu_seconds).
        self._found_cpu = 0.0
        #: CPU seconds the current pass spent creating records (not part of its scan).
        self._create_cpu = 0.0

    @property
    def problems(self) -> list[Problem]:
        """The runs and files skipped because they could not be read (at the last look)."""
        return sorted(self._problems.values(), key=lambda p: p.path)

    def pending_bytes(self) -> int:
        """Bytes in the logdir not yet consumed (what a pass would read).

        The next :meth:`run_pass` takes the runs this found instead of walking the logdir again
        (a catch-up sizes itself, then reads: one walk of 10,000 runs, not two)."""
        total = 0
        known = self._load_known()
        cpu = time.thread_time()
        found = self.source.runs()
        self._found = found, self.source.problems()
        self._found_cpu = time.thread_time() - cpu
        for run, files in found.items():
            run_id = known.runs.get(run)
            records = known.files.get(run_id, {}) if run_id is not None else {}
            for file in files:
                record = records.get(file.key)
                total += max(0, size_now(file) - (record.consumed if record else 0))
        return total

    def run_pass(self, progress: Progress | None = None) -> PassResult:
        """One pass: discover, apply life-cycle changes, read everything new, commit.

        A large catch-up (``parallel_min_bytes`` or more, over several runs) is decoded in
        worker processes, one run per worker at a time; commits stay in this process.
        """
        result = PassResult()
        self._reported = set()
        cpu = time.thread_time()
        self._create_cpu = 0.0
        if self._found is not None:
            (found, problems), self._found = self._found, None
            cpu -= self._found_cpu
        else:
            found, problems = self.source.runs(), self.source.problems()
        for problem in problems:
            self._problem(problem.path, problem.reason)
        # What the store knows, loaded once: the pass costs a query per run it changes, not
        # one per run the logdir has (quadratic at thousands of runs).
        self._known = self._load_known()
        try:
            works = self._prepare_pass(found, result)
        finally:
            self._known = None
        result.scan_cpu_seconds = max(0.0, time.thread_time() - cpu - self._create_cpu)
        total = sum(w.left() for w in works)
        runs = {w.run_id for w in works}
        workers = self._workers_for(total, len(works), len(runs))
        try:
            if workers > 1:
                self._read_parallel(works, result, progress, total, workers)
            else:
                for work in works:
                    if self.stop_requested():
                        break
                    self._read_file(work, result, progress, total)
        except SourceUnavailableError:
            # The source went away mid-pass (an object store's server): what was read is
            # committed with its offsets, and the pass is retried from there.
            self._flush(result)
            raise
        self._flush(result)
        self._end_full_pass()
        return result

    def _workers_for(self, total: int, files: int, runs: int) -> int:
        """How many processes decode this pass (1: this one alone)."""
        if runs < 2:
            return 1
        if total >= self.parallel_min_bytes and self.workers > 1:
            return self.workers
        if files >= self.parallel_min_files:
            return self.many_files_workers
        return 1

    def _prepare_pass(
        self, found: dict[str, list[SourceFile]], result: PassResult
    ) -> list[_FileWork]:
        known = self._known
        assert known is not None
        self._purge_missing_runs(found, result)
        self._create_records(found, result)
        works: list[_FileWork] = []
        for run, files in found.items():
            try:
                run_id = self._run_id(run)
                works.extend(self._prepare_run(run_id, files, result))
            except (apsw.Error, SourceUnavailableError):
                raise  # the store's own trouble, or the source's: the whole pass is retried
            except Exception as exc:
                self._problem(self._run_key(run, files), _describe(exc))
        return works

    def _load_known(self) -> _Known:
        return _Known(
            self.writer.runs(self.experiment_id), self.writer.experiment_files(self.experiment_id)
        )

    def _create_records(self, found: dict[str, list[SourceFile]], result: PassResult) -> None:
        """Creates the records of every run and file the store does not know yet, in one
        commit (a cold start over 10,000 runs is not 20,000 commits)."""
        known = self._known
        assert known is not None
        new_runs = [run for run in found if run not in known.runs]
        new_files = [
            (run, file)
            for run, files in found.items()
            for file in files
            if file.key not in known.files.get(known.runs.get(run, -1), {})
        ]
        if not new_runs and not new_files:
            return
        cpu = time.thread_time()

        def create() -> None:
            for run in new_runs:
                try:
                    known.runs[run] = self.writer.ensure_run(self.experiment_id, run)
                except apsw.Error:
                    raise
                except Exception as exc:
                    self._problem(self._run_key(run, found[run]), _describe(exc))
            for run, file in new_files:
                run_id = known.runs.get(run)
                if run_id is None:
                    continue
                try:
                    record = self.writer.ensure_file(run_id, file.key)
                except apsw.Error:
                    raise
                except Exception as exc:
                    self._problem(file.key, _describe(exc))
                    continue
                known.files.setdefault(run_id, {})[file.key] = record

        self._with_transaction(result, create)
        self._create_cpu += time.thread_time() - cpu

    def ingest_files(
        self,
        run: str,
        files: Iterable[SourceFile | str | os.PathLike[str]],
        result: PassResult,
        *,
        progress: Progress | None = None,
        total: int = 0,
    ) -> None:
        """Reads what is new in these files of ``run`` (all of the run's files, or some), in
        the order given; a file is a :class:`SourceFile` or its key (a local path)."""
        run_id = self._run_id(run)
        chosen = [
            self.source.file(os.fspath(f)) if isinstance(f, (str, os.PathLike)) else f
            for f in files
        ]
        for work in self._prepare_run(run_id, chosen, result):
            self._read_file(work, result, progress, total)

    def ingest_changed(self, keys: Iterable[str | os.PathLike[str]]) -> PassResult:
        """Reads what is new in these changed files (a watcher's notices), run by run.

        A file of a run the store does not know yet brings in all of that run's files, in name
        order, from the first one. A file outside the logdir (reached through a symlink) is
        skipped; so is one that no longer exists (the next full pass records it as deleted;
        its data stays).
        """
        result = PassResult()
        by_run: dict[str, list[SourceFile]] = {}
        for key in keys:
            file = self.source.file(os.fspath(key))
            run = self.source.run_of(file.key)
            try:
                if run is None or not file.exists():
                    continue
            except OSError as exc:
                self._problem(file.key, _describe(exc))
                continue
            by_run.setdefault(run, []).append(file)
        for run, files in by_run.items():
            try:
                if self.writer.run_id(self.experiment_id, run) is None:
                    files = self.source.run_files(run)
                files.sort(key=_file_name)
                self.ingest_files(run, files, result)
            except apsw.Error:
                raise
            except Exception as exc:
                self._problem(self._run_key(run, files), _describe(exc))
        return result

    def _prepare_run(
        self, run_id: int, files: Iterable[SourceFile], result: PassResult
    ) -> list[_FileWork]:
        files = list(files)
        try:
            return self._prepare_files(run_id, files, self._known_files(run_id), result)
        except _StartOver as replaced:
            # What the old version of the file put in the run's series cannot be told apart
            # from what its other files put there: the run is read again from all its files,
            # as a fresh ingest would read them (its sampling starts over too).
            run = self.source.run_of(replaced.key)
            log.info(
                "%s: %s; run %s is read again from its files",
                escape(replaced.key),
                replaced.reason,
                escape(run if run is not None else "?"),
            )
            self._with_transaction(
                result, functools.partial(self.writer.restart_run, run_id, replaced.reason)
            )
            self._decoders.pop(run_id, None)
            result.files_changed.append(replaced.key)
            if run is not None:
                files = self.source.run_files(run)
            # The run's files were reset in the store: what the pass loaded of them is stale.
            known = self.writer.files(run_id)
            if self._known is not None:
                self._known.files[run_id] = known
            return self._prepare_files(run_id, files, known, result)

    def _known_files(self, run_id: int) -> dict[str, FileRecord]:
        """The store's records of a run's files: from what the pass loaded once, if it did."""
        if self._known is not None:
            return self._known.files.setdefault(run_id, {})
        return self.writer.files(run_id)

    def _prepare_files(
        self,
        run_id: int,
        files: list[SourceFile],
        known: dict[str, FileRecord],
        result: PassResult,
    ) -> list[_FileWork]:
        present = set()
        works = []
        for file in files:
            present.add(file.key)
            # A run can be read again from its files unless another of them holds data that
            # cannot be read again (a deleted or unreadable file's).
            others_readable = all(
                r.consumed == 0 or r.state == "active" for k, r in known.items() if k != file.key
            )
            try:
                work = self._prepare(
                    run_id, file, known.get(file.key), result, start_over=others_readable
                )
            except (apsw.Error, _StartOver, SourceUnavailableError):
                raise
            except Exception as exc:
                self._problem(file.key, _describe(exc))
                continue
            if work is not None:
                works.append(work)
        for key, record in known.items():
            if key in present or record.state == "deleted":
                continue
            try:
                gone = not self.source.file(key).exists()
            except OSError as exc:
                # Unreadable is not deleted: the record stays as it is.
                self._problem(key, _describe(exc))
                continue
            if gone:
                self._with_transaction(
                    result, functools.partial(self.writer.set_file_state, record.id, "deleted")
                )
        return works

    def stop_requested(self) -> bool:
        """Whether :attr:`stop_event` is set."""
        return self.stop_event.is_set()

    def flush(self) -> int:
        """Commits whatever is pending now; returns the number of commits made (0 or 1)."""
        result = PassResult()
        self._flush(result)
        return result.commits

    def close(self) -> None:
        """Commits whatever is pending."""
        self._flush(PassResult())

    # -- internals ------------------------------------------------------------------------

    def _run_id(self, run: str) -> int:
        known = self._known
        run_id = known.runs.get(run) if known is not None else None
        if run_id is None:
            run_id = self.writer.run_id(self.experiment_id, run)
        if run_id is not None:
            return run_id
        holder: list[int] = []
        self._with_transaction(
            PassResult(),
            lambda: holder.append(self.writer.ensure_run(self.experiment_id, run)),
        )
        if known is not None:
            known.runs[run] = holder[0]
        return holder[0]

    def _decoder(self, run_id: int) -> EventDecoder:
        decoder = self._decoders.get(run_id)
        if decoder is None:
            from boardd.reader.events import EventDecoder

            decoder = EventDecoder()
            decoder.tags.update(self.writer.run_tags(run_id))
            self._decoders[run_id] = decoder
        return decoder

    def _prepare(
        self,
        run_id: int,
        file: SourceFile,
        record: FileRecord | None,
        result: PassResult,
        *,
        start_over: bool = False,
    ) -> _FileWork | None:
        """Applies the file's life-cycle changes; returns what is left to read, if anything.

        A replaced file raises :class:`_StartOver` when ``start_over`` (its run can be read
        again from its files); otherwise it alone is read again from 0, and the steps it
        rewrites replace the old points through preemption."""
        try:
            ident = file.identity()
        except OSError as exc:
            if exc.errno not in (errno.ENOENT, errno.ENOTDIR):
                self._problem(file.key, _describe(exc))
            return None  # gone since discovery; the next pass marks it deleted
        if record is None:
            holder: list[FileRecord] = []
            self._with_transaction(
                result, lambda: holder.append(self.writer.ensure_file(run_id, file.key))
            )
            record = holder[0]
        offset = record.consumed
        # A file whose version (an object's ETag, a local file's mtime) changed since it was
        # read: looked at even if its size did not change (replaced by one of the same size,
        # rewritten in place, or re-uploaded or touched as it was).
        new_version = (
            ident.version is not None
            and record.version is not None
            and ident.version != record.version
        )
        if (
            ident.inode is None
            and record.state == "active"
            and record.head is not None
            and record.consumed < ident.size == record.size
            and not new_version
        ):
            # An object (a source without inodes) the size it had when it was last read to
            # its end: what is left after the offset is a torn record that stays torn. Not
            # fetched again (each look costs requests) until the object changes.
            return None
        # A source without inodes (an object store) tells a replacement by its first bytes.
        replaced = record.inode is not None and (record.inode, record.device) != (
            ident.inode,
            ident.device,
        )
        head = read_head(file) if ident.size != record.consumed or replaced or new_version else None
        rewritten = (
            not replaced
            and head is not None
            and record.head is not None
            and not same_start(head, record.head)
        )
        # Grown, or rewritten in place keeping its first bytes? The bytes before the offset
        # (the end of the last record read, whose CRC covers that record) tell.
        overwritten = (
            not replaced
            and not rewritten
            and record.tail is not None
            and (ident.size > record.consumed or (new_version and ident.size == record.consumed))
            and read_tail(file, record.consumed) not in (None, record.tail)
        )
        if replaced or rewritten or overwritten or ident.size < record.consumed:
            if replaced:
                reason = "file replaced (new inode)"
            elif rewritten:
                reason = "file replaced (its first bytes changed)"
            elif overwritten:
                reason = "file rewritten (its bytes before the read offset changed)"
            else:
                reason = "file shrank: read again"
            if start_over and record.consumed > 0:
                raise _StartOver(file.key, reason)
            replaced = True
            restart_id = record.id
            self._with_transaction(result, lambda: self.writer.restart_file(restart_id, reason))
            offset = 0
            result.files_changed.append(file.key)
        work = _FileWork(run_id, file, record, ident, offset, replaced, head)
        if ident.size == offset and record.state == "active":
            if not _identity_recorded(record, ident) or replaced or new_version:
                self._remember_identity(work, result)
            return None
        return work

    def _read_file(
        self, work: _FileWork, result: PassResult, progress: Progress | None, total: int
    ) -> None:
        from boardd.reader.pipeline import EventFileReader

        offset = work.offset
        try:
            data = work.file.open()
            with EventFileReader(
                data,
                offset,
                decoder=self._decoder(work.run_id),
                crc_mode=self.crc_mode,
                max_batch_bytes=self.batch_bytes,
            ) as reader:
                for batch in reader:
                    offset = self._accept(work, batch, offset, result, data)
                    if self.stop_requested():
                        return
                    if progress is not None:
                        progress(result.bytes_read, total)
        except (OSError, ReaderError) as exc:
            gone = unavailable(exc)
            if gone is not None:
                raise gone from None  # not this file's fault: the pass fails, is retried
            self._unreadable(work, str(exc), result)
            return
        except apsw.Error:
            raise
        except Exception as exc:
            # Whatever it was, it is this file's: the others carry on; this one is read again
            # from its committed offset at the next pass.
            log.exception("%s: reading failed", work.file.key)
            self._unreadable(work, _describe(exc), result)
            return
        self._finish_file(work, offset, result)

    def _finish_file(self, work: _FileWork, offset: int, result: PassResult) -> None:
        self._solved(work.file.key)
        # A file back from 'deleted' or 'unreadable' with nothing new is active again too.
        if offset == work.record.consumed and (
            not _identity_recorded(work.record, work.identity)
            or work.replaced
            or work.record.state != "active"
        ):
            self._remember_identity(work, result)

    def _read_parallel(
        self,
        works: list[_FileWork],
        result: PassResult,
        progress: Progress | None,
        total: int,
        workers: int,
    ) -> None:
        # One task in flight per run keeps a run's files and segments in order, and lets the
        # run's tag metadata (established by its first values) pass from one task to the next.
        queues: dict[int, collections.deque[_FileWork]] = {}
        for work in works:
            queues.setdefault(work.run_id, collections.deque()).append(work)
        offsets = {work.run_id: work.offset for work in (q[0] for q in queues.values())}

        def bytes_left(run_id: int) -> int:
            # The first file is read on from where the run stopped, the others from their
            # offsets.
            queue = queues[run_id]
            left = queue[0].identity.size - offsets[run_id]
            return left + sum(w.left() for w in itertools.islice(queue, 1, None))

        ready = ReadyRuns(bytes_left)
        for run_id in queues:
            ready.put(run_id)
        from boardd.ingest.worker_pool import WorkerError, WorkerPool

        # This process decodes too, whenever it has nothing to commit.
        pool = WorkerPool(min(workers - 1, len(queues)), fork=self.fork and can_fork())
        try:
            self._drive_pool(pool, queues, offsets, ready, bytes_left, result, progress, total)
        except WorkerError as exc:
            # A worker died (killed, out of memory): finish the rest in this process, from
            # exactly where the committed-or-queued batches stopped.
            log.warning("%s; decoding the rest in this process", exc)
            for run_id, queue in queues.items():
                for i, work in enumerate(queue):
                    if self.stop_requested():
                        return
                    start = offsets[run_id] if i == 0 else work.offset
                    resumed = dataclasses.replace(work, offset=start)
                    self._read_file(resumed, result, progress, total)
        finally:
            pool.close()

    def _drive_pool(
        self,
        pool: WorkerPool,
        queues: dict[int, collections.deque[_FileWork]],
        offsets: dict[int, int],
        ready: ReadyRuns,
        bytes_left: Callable[[int], int],
        result: PassResult,
        progress: Progress | None,
        total: int,
    ) -> None:
        while True:
            if self.stop_requested():
                ready.clear()  # take no new work; finish (and commit) what is in flight
            while ready and (worker := pool.vacant()) is not None:
                # Small files go several to a task (a run each, so a run still has one task
                # in flight): a task per 2 KB file costs more to send and take than to decode.
                run_ids = [ready.take_largest()]
                size = bytes_left(run_ids[0])
                while (
                    ready
                    and len(run_ids) < GROUP_FILES
                    and size + (more := bytes_left(ready.peek_largest())) <= GROUP_BYTES
                ):
                    run_ids.append(ready.take_largest())
                    size += more
                tasks = [
                    self._task(run_id, queues[run_id][0], offsets[run_id]) for run_id in run_ids
                ]
                if len(tasks) == 1:
                    pool.submit(worker, tasks[0], run_ids)
                else:
                    pool.submit(worker, tasks, run_ids)
            answer = pool.poll()
            if answer is None and ready:
                # Nothing to commit: decode a segment here too, rather than wait; the least
                # work there is, to be back soon for what the workers send.
                run_id = ready.take_smallest()
                answer = [run_id], self._decode_here(queues[run_id][0], offsets[run_id])
            elif answer is None:
                if not pool.pending:
                    return
                answer = pool.wait()
            taken, segments = answer
            for run_id, segment in zip(
                taken, segments if isinstance(segments, list) else [segments], strict=True
            ):
                self._take_answer(run_id, segment, queues, offsets, ready, result)
                if progress is not None:
                    progress(result.bytes_read, total)
            # Dropped now: the next segment decoded here must not find these in memory.
            del answer, segments, segment

    def _task(self, run_id: int, work: _FileWork, offset: int) -> tuple[object, ...]:
        """The arguments of :func:`~boardd.ingest.segment.decode_segment` for a worker."""
        return (
            work.file,
            offset,
            dict(self._decoder(run_id).tags),
            self.crc_mode,
            self.segment_bytes,
            self.batch_bytes,
        )

    def _take_answer(
        self,
        run_id: int,
        segment: Segment,
        queues: dict[int, collections.deque[_FileWork]],
        offsets: dict[int, int],
        ready: ReadyRuns,
        result: PassResult,
    ) -> None:
        work = queues[run_id][0]
        offset = offsets[run_id]
        tags = self._decoder(run_id).tags
        for batch in segment.batches:
            tags.update(batch.new_tags)
            offset = self._accept(work, batch, offset, result)
        offsets[run_id] = offset
        if segment.error is not None:
            self._unreadable(work, segment.error, result)
        elif not segment.at_end:
            ready.put(run_id)
            return
        else:
            self._finish_file(work, offset, result)
        queues[run_id].popleft()
        if queues[run_id]:
            offsets[run_id] = queues[run_id][0].offset
            ready.put(run_id)

    def _decode_here(self, work: _FileWork, offset: int) -> Segment:
        from boardd.ingest.segment import decode_segment

        tags = dict(self._decoder(work.run_id).tags)
        return decode_segment(
            work.file,
            offset,
            tags,
            self.crc_mode,
            self.segment_bytes,
            min(self.batch_bytes, HERE_BATCH_BYTES),
        )

    def _accept(
        self,
        work: _FileWork,
        batch: DecodedBatch,
        offset: int,
        result: PassResult,
        data: RandomAccessBytes | None = None,
    ) -> int:
        """Queues one decoded batch of a file for commit; returns the file's new offset.
        ``data``: the file as its reader has it open (its tail is read through it)."""
        done = batch.end_offset - offset
        result.bytes_read += done
        if done:
            result.files_read.add(work.file.key)
        result.records += batch.records
        self.writer.counts.bytes_read += done
        self._queue(work.run_id, batch, work.progress(batch.end_offset, data), done, result)
        return batch.end_offset

    def _remember_identity(self, work: _FileWork, result: PassResult) -> None:
        # Nothing complete to read yet, but record the file's identity (inode, size).
        batch = DecodedBatch(end_offset=work.offset)
        self._queue(work.run_id, batch, work.progress(work.offset), 0, result)

    def _unreadable(self, work: _FileWork, message: str, result: PassResult) -> None:
        self._problem(work.file.key, message)
        file_id = work.record.id
        self._with_transaction(
            result, lambda: self.writer.set_file_state(file_id, "unreadable", message)
        )

    def _queue(
        self,
        run_id: int,
        batch: DecodedBatch,
        progress: FileProgress,
        size: int,
        result: PassResult,
    ) -> None:
        if not self._pending:
            self._pending_since = time.monotonic()
        self._pending.append(Pending(run_id, batch, progress))
        self._pending_bytes += size
        if (
            self._pending_bytes >= self.commit_bytes
            or time.monotonic() - self._pending_since >= self.commit_seconds
        ):
            self._flush(result)

    def _flush(self, result: PassResult) -> None:
        if not self._pending:
            return
        pending, self._pending, self._pending_bytes = self._pending, [], 0
        try:
            with self.writer.transaction():
                for run_id, batch, progress in coalesce(pending):
                    self.writer.apply(run_id, batch, progress)
        except BaseException:
            # Decoders ran ahead of what is now committed: rebuild them from the store.
            self._decoders.clear()
            raise
        result.commits += 1

    def _with_transaction(self, result: PassResult, action: Callable[[], object]) -> None:
        self._flush(result)
        with self.writer.transaction():
            action()
        result.commits += 1

    def _purge_missing_runs(self, found: dict[str, list[SourceFile]], result: PassResult) -> None:
        if not found or not self.source.available():
            # A vanished logdir, or one without a single event file (an unmounted mount point
            # is an empty directory), must not erase the store.
            return
        runs = self._known.runs if self._known is not None else self.writer.runs(self.experiment_id)
        for run, run_id in list(runs.items()):
            if run in found:
                continue
            try:
                present = self.source.run_present(run)
            except OSError as exc:
                # Cannot tell (a directory above it cannot be searched): keep it as it is.
                self._problem(self._run_key(run, []), _describe(exc))
                continue
            if present:
                # Files deleted, directory kept: the data stays, the files are marked deleted.
                self.ingest_files(run, (), result)
                continue
            self._with_transaction(result, functools.partial(self.writer.delete_run, run_id))
            self._decoders.pop(run_id, None)
            if self._known is not None:
                self._known.runs.pop(run, None)
                self._known.files.pop(run_id, None)
            result.runs_deleted.append(run)

    # -- problems -------------------------------------------------------------------------

    def _run_key(self, run: str, files: list[SourceFile]) -> str:
        """What names a run in a problem: its directory (a local source), else its name."""
        if files:
            return os.path.dirname(files[0].key)
        if isinstance(self.source, LocalFileSource):
            logdir = self.source.logdir
            return os.fspath(logdir if run == ROOT_RUN else logdir / run)
        return run

    def _problem(self, key: str, reason: str) -> None:
        """Records that ``key`` could not be read; logged once (again only if the reason
        changes), shown by :attr:`problems` until a pass gets through it."""
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

    def _solved(self, key: str) -> None:
        if self._problems.pop(key, None) is not None:
            log.info("%s is readable again", escape(key))

    def _end_full_pass(self) -> None:
        """Forgets the problems a full pass no longer met."""
        reported, self._reported = self._reported, None
        if reported is None:
            return
        for key in [k for k in self._problems if k not in reported]:
            self._solved(key)


@dataclass(slots=True)
class _Known:
    """What the store knows of the logdir during a full pass, loaded in two queries: live runs
    (name → id) and their files (run id → path → record). Kept up to date by the pass itself
    (records it creates, runs it deletes); a record it changes otherwise (offsets, states) is
    not read from here again in the same pass."""

    runs: dict[str, int]
    files: dict[int, dict[str, FileRecord]]


def _describe(exc: BaseException) -> str:
    """An error as health and the log show it: its type, and its message if it has one."""
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror  # the path is told apart already
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _file_name(file: SourceFile) -> str:
    return file.name


def _identity_recorded(record: FileRecord, identity: FileIdentity) -> bool:
    """Whether the store holds the file's identity: its inode, or for a source without inodes
    (an object store) its first bytes, and its version if it has one; else it is recorded
    even when nothing is new."""
    version_known = identity.version is None or record.version is not None
    if identity.inode is None:
        return record.head is not None and version_known
    return record.inode is not None and version_known
