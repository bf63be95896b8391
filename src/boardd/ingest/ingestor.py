"""The ingestor: brings a store up to date with a logdir's event files, from their offsets.

:class:`Ingestor` owns the file life cycle: new files and runs are picked up; a growing file
resumes from its committed offset; a replaced file (new inode, it shrank, its first bytes or
those before its offset changed) is read again from 0 with the rest of its run, as a fresh
ingest would read them (:meth:`StoreWriter.restart_run`); a deleted file keeps its data; a run
whose directory is gone is purged and hidden. Decoded batches are committed in groups (by bytes
and by time) together with the new offsets. It reads through a
:class:`~boardd.ingest.sources.ByteSource` (a local logdir unless told otherwise).

What changed in a file since it was last read is judged in :mod:`boardd.ingest.lifecycle`; a
large pass is decoded in worker processes by :mod:`boardd.ingest.parallel_read`; what cannot be
read is kept by :mod:`boardd.ingest.problems`.
"""

from __future__ import annotations

import errno
import functools
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import apsw

from boardd.ingest.batching import Pending, coalesce
from boardd.ingest.lifecycle import FileWork, StartOver, change_of, identity_recorded
from boardd.ingest.parallel import default_workers, many_files_workers
from boardd.ingest.parallel_read import ParallelRead
from boardd.ingest.pass_result import PassResult
from boardd.ingest.problems import Problem, Problems, describe_error
from boardd.ingest.progress import Progress
from boardd.ingest.sources import (
    ByteSource,
    LocalFileSource,
    SourceFile,
    SourceUnavailableError,
    size_now,
    unavailable,
)
from boardd.reader.decoded import DecodedBatch, TagMetadata
from boardd.reader.errors import ReaderError
from boardd.reader.logdir import ROOT_RUN, DiscoveryProblem
from boardd.reader.modes import CrcMode
from boardd.store.names import escape
from boardd.store.writer import FileProgress, FileRecord, StoreWriter

if TYPE_CHECKING:
    from boardd.reader.events import EventDecoder
    from boardd.reader.source import RandomAccessBytes

__all__ = [
    "DEFAULT_BATCH_BYTES",
    "DEFAULT_COMMIT_BYTES",
    "DEFAULT_COMMIT_SECONDS",
    "DEFAULT_PARALLEL_MIN_BYTES",
    "DEFAULT_PARALLEL_MIN_FILES",
    "SEGMENT_BYTES",
    "Ingestor",
    "PassResult",
    "Problem",
]

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
        #: What this pass and the last could not read.
        self._problems = Problems()
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
        return self._problems.current()

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
        self._problems.start_full_pass()
        cpu = time.thread_time()
        self._create_cpu = 0.0
        if self._found is not None:
            (found, problems), self._found = self._found, None
            cpu -= self._found_cpu
        else:
            found, problems = self.source.runs(), self.source.problems()
        for problem in problems:
            self._problems.add(problem.path, problem.reason)
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
                ParallelRead(self, works, result, progress, total).run(workers)
            else:
                for work in works:
                    if self.stop_requested():
                        break
                    self.read_file(work, result, progress, total)
        except SourceUnavailableError:
            # The source went away mid-pass (an object store's server): what was read is
            # committed with its offsets, and the pass is retried from there.
            self._flush(result)
            raise
        self._flush(result)
        self._problems.end_full_pass()
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
    ) -> list[FileWork]:
        known = self._known
        assert known is not None
        self._purge_missing_runs(found, result)
        self._create_records(found, result)
        works: list[FileWork] = []
        for run, files in found.items():
            try:
                run_id = self._run_id(run)
                works.extend(self._prepare_run(run_id, files, result))
            except (apsw.Error, SourceUnavailableError):
                raise  # the store's own trouble, or the source's: the whole pass is retried
            except Exception as exc:
                self._problems.add(self._run_key(run, files), describe_error(exc))
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
                    self._problems.add(self._run_key(run, found[run]), describe_error(exc))
            for run, file in new_files:
                run_id = known.runs.get(run)
                if run_id is None:
                    continue
                try:
                    record = self.writer.ensure_file(run_id, file.key)
                except apsw.Error:
                    raise
                except Exception as exc:
                    self._problems.add(file.key, describe_error(exc))
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
            self.read_file(work, result, progress, total)

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
                self._problems.add(file.key, describe_error(exc))
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
                self._problems.add(self._run_key(run, files), describe_error(exc))
        return result

    def _prepare_run(
        self, run_id: int, files: Iterable[SourceFile], result: PassResult
    ) -> list[FileWork]:
        files = list(files)
        try:
            return self._prepare_files(run_id, files, self._known_files(run_id), result)
        except StartOver as replaced:
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
    ) -> list[FileWork]:
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
            except (apsw.Error, StartOver, SourceUnavailableError):
                raise
            except Exception as exc:
                self._problems.add(file.key, describe_error(exc))
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
                self._problems.add(key, describe_error(exc))
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
    ) -> FileWork | None:
        """Applies the file's life-cycle changes; returns what is left to read, if anything.

        A replaced file raises :class:`StartOver` when ``start_over`` (its run can be read
        again from its files); otherwise it alone is read again from 0, and the steps it
        rewrites replace the old points through preemption."""
        try:
            ident = file.identity()
        except OSError as exc:
            if exc.errno not in (errno.ENOENT, errno.ENOTDIR):
                self._problems.add(file.key, describe_error(exc))
            return None  # gone since discovery; the next pass marks it deleted
        if record is None:
            holder: list[FileRecord] = []
            self._with_transaction(
                result, lambda: holder.append(self.writer.ensure_file(run_id, file.key))
            )
            record = holder[0]
        change = change_of(file, record, ident)
        if change is None:
            return None
        offset = record.consumed
        reason = change.replaced
        replaced = reason is not None
        if reason is not None:
            if start_over and record.consumed > 0:
                raise StartOver(file.key, reason)
            restart_id = record.id
            self._with_transaction(result, lambda: self.writer.restart_file(restart_id, reason))
            offset = 0
            result.files_changed.append(file.key)
        work = FileWork(run_id, file, record, ident, offset, replaced, change.head)
        if ident.size == offset and record.state == "active":
            if not identity_recorded(record, ident) or replaced or change.new_version:
                self._remember_identity(work, result)
            return None
        return work

    def read_file(
        self, work: FileWork, result: PassResult, progress: Progress | None, total: int
    ) -> None:
        """Reads what is left of a file (``work``), from its offset to its end."""
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
                    offset = self.accept(work, batch, offset, result, data)
                    if self.stop_requested():
                        return
                    if progress is not None:
                        progress(result.bytes_read, total)
        except (OSError, ReaderError) as exc:
            gone = unavailable(exc)
            if gone is not None:
                raise gone from None  # not this file's fault: the pass fails, is retried
            self.unreadable(work, str(exc), result)
            return
        except apsw.Error:
            raise
        except Exception as exc:
            # Whatever it was, it is this file's: the others carry on; this one is read again
            # from its committed offset at the next pass.
            log.exception("%s: reading failed", work.file.key)
            self.unreadable(work, describe_error(exc), result)
            return
        self.finish_file(work, offset, result)

    def finish_file(self, work: FileWork, offset: int, result: PassResult) -> None:
        """A file was read to its end, at ``offset``."""
        self._problems.solved(work.file.key)
        # A file back from 'deleted' or 'unreadable' with nothing new is active again too.
        if offset == work.record.consumed and (
            not identity_recorded(work.record, work.identity)
            or work.replaced
            or work.record.state != "active"
        ):
            self._remember_identity(work, result)

    def tags(self, run_id: int) -> dict[str, TagMetadata]:
        """The tags a run's decoder knows (what a worker decoding the run starts from)."""
        return self._decoder(run_id).tags

    def accept(
        self,
        work: FileWork,
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

    def _remember_identity(self, work: FileWork, result: PassResult) -> None:
        # Nothing complete to read yet, but record the file's identity (inode, size).
        batch = DecodedBatch(end_offset=work.offset)
        self._queue(work.run_id, batch, work.progress(work.offset), 0, result)

    def unreadable(self, work: FileWork, message: str, result: PassResult) -> None:
        """A file cannot be read (``message`` says why): skipped until a pass gets through."""
        self._problems.add(work.file.key, message)
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
                self._problems.add(self._run_key(run, []), describe_error(exc))
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


@dataclass(slots=True)
class _Known:
    """What the store knows of the logdir during a full pass, loaded in two queries: live runs
    (name → id) and their files (run id → path → record). Kept up to date by the pass itself
    (records it creates, runs it deletes); a record it changes otherwise (offsets, states) is
    not read from here again in the same pass."""

    runs: dict[str, int]
    files: dict[int, dict[str, FileRecord]]


def _file_name(file: SourceFile) -> str:
    return file.name
