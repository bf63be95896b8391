"""Ingest: reads a logdir's event files from their stored offsets into the store.

:class:`Ingestor` owns the file life cycle: new files and runs are picked up; a growing file
resumes from its committed offset; a replaced file (new inode, or it shrank) is read again from
0; a deleted file keeps its data; a run whose directory is gone is purged and hidden. Decoded
batches are committed in groups (by bytes and by time) together with the new offsets.
"""

from __future__ import annotations

import bisect
import collections
import dataclasses
import functools
import itertools
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from boardd.reader.errors import ReaderError
from boardd.reader.logdir import Discovery, discover
from boardd.reader.modes import CrcMode
from boardd.store.writer import FileProgress, FileRecord, StoreWriter

if TYPE_CHECKING:
    from boardd.reader.events import EventDecoder
    from boardd.reader.segment import Segment
    from boardd.reader.types import DecodedBatch
    from boardd.reader.worker import WorkerPool

# The decoding side (protobuf, the framing and decode pipeline, worker processes) is imported
# when there is something to read: a restart with nothing new never loads it.

log = logging.getLogger(__name__)

#: Defaults chosen with bench/bench_commit.py: CPU is flat across commit sizes; smaller ones
#: cost less memory and WAL and commit more often (8 MiB reads beat 4 MiB, tie 16 MiB).
DEFAULT_COMMIT_BYTES = 16 * 2**20
DEFAULT_COMMIT_SECONDS = 0.5
DEFAULT_BATCH_BYTES = 8 * 2**20

#: A catch-up of at least this many bytes over several runs is decoded in worker processes.
DEFAULT_PARALLEL_MIN_BYTES = 64 * 2**20
#: How much of a file one worker task decodes before handing the batches back.
SEGMENT_BYTES = 8 * 2**20
#: While workers run, this process decodes in smaller batches: it also holds what they send.
#: (bench_ingest (a): the tree's PSS drops from ~145 to ~125 MiB, time within noise.)
HERE_BATCH_BYTES = 4 * 2**20


def can_fork() -> bool:
    """Whether decode workers may be forked from this process: only while it runs a single
    thread (a fork copies no other thread, so a lock one of them held stays held forever)."""
    return hasattr(os, "fork") and threading.active_count() == 1


def default_workers(*, fork: bool | None = None) -> int:
    """Processes that decode a large catch-up, this one included (1: no worker).

    This process commits what the workers decode and decodes too whenever it has nothing to
    commit. Forked workers (``fork``, by default whether this process may fork: see
    :func:`can_fork`) start in a millisecond and share this process's memory pages, so they pay
    from two CPUs up: one decoder per CPU, at most 4 (bench/bench_ingest.py). Spawned workers
    import boardd anew (~0.2 s of CPU and ~80 MiB each), so they are used only from three CPUs
    up: half the CPUs, at most 4.
    """
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        cpus = os.cpu_count() or 1
    if fork is None:
        fork = can_fork()
    if fork:
        return 1 if cpus <= 1 else min(cpus, 4)
    return 1 if cpus <= 2 else min(cpus // 2, 4)


#: Called with (bytes done, bytes to do) as ingest goes.
Progress = Callable[[int, int], None]


@dataclass(slots=True)
class PassResult:
    """What one pass over the logdir did."""

    bytes_read: int = 0
    records: int = 0
    commits: int = 0
    files_changed: list[str] = field(default_factory=list)
    runs_deleted: list[str] = field(default_factory=list)


@dataclass(slots=True)
class _FileWork:
    """A file with something left to read, after its life-cycle checks."""

    run_id: int
    path: Path
    record: FileRecord
    stat: os.stat_result
    offset: int
    replaced: bool
    head: bytes | None = None

    def progress(self, consumed: int) -> FileProgress:
        """The file's state to commit once everything up to ``consumed`` is written."""
        st = self.stat
        return FileProgress(
            self.record.id,
            consumed,
            st.st_size,
            st.st_mtime,
            st.st_dev,
            st.st_ino,
            head=self.head,
        )


@dataclass(slots=True)
class _Pending:
    run_id: int
    batch: DecodedBatch
    progress: FileProgress


class Ingestor:
    """Brings one experiment's store up to date with its logdir; one thread owns it."""

    def __init__(
        self,
        writer: StoreWriter,
        logdir: str | os.PathLike[str],
        *,
        experiment: str = "default",
        crc_mode: CrcMode = CrcMode.ALWAYS,
        commit_bytes: int = DEFAULT_COMMIT_BYTES,
        commit_seconds: float = DEFAULT_COMMIT_SECONDS,
        batch_bytes: int = DEFAULT_BATCH_BYTES,
        workers: int | None = None,
        parallel_min_bytes: int = DEFAULT_PARALLEL_MIN_BYTES,
        segment_bytes: int = SEGMENT_BYTES,
        fork: bool = True,
    ) -> None:
        self.writer = writer
        self.logdir = Path(logdir)
        self.crc_mode = crc_mode
        self.commit_bytes = commit_bytes
        self.commit_seconds = commit_seconds
        self.batch_bytes = batch_bytes
        self.workers = default_workers() if workers is None else workers
        self.parallel_min_bytes = parallel_min_bytes
        self.segment_bytes = segment_bytes
        #: Whether decode workers may be forked (when :func:`can_fork`), not spawned.
        self.fork = fork
        #: Set it (from any thread) to make a pass stop taking work: what was read is committed.
        self.stop_event = threading.Event()
        with writer.transaction():
            self.experiment_id = writer.ensure_experiment(experiment, str(self.logdir.resolve()))
        self._decoders: dict[int, EventDecoder] = {}
        self._pending: list[_Pending] = []
        self._pending_bytes = 0
        self._pending_since = 0.0

    def pending_bytes(self, discovery: Discovery | None = None) -> int:
        """Bytes in the logdir not yet consumed (what a pass would read)."""
        found = discovery or discover(self.logdir)
        total = 0
        for run, paths in found.runs.items():
            known = self._known_files(run)
            for path in paths:
                size = _size(path)
                record = known.get(str(path))
                total += max(0, size - (record.consumed if record else 0))
        return total

    def run_pass(self, progress: Progress | None = None) -> PassResult:
        """One pass: discover, apply life-cycle changes, read everything new, commit.

        A large catch-up (``parallel_min_bytes`` or more, over several runs) is decoded in
        worker processes, one run per worker at a time; commits stay in this process.
        """
        result = PassResult()
        found = discover(self.logdir)
        self._purge_missing_runs(found, result)
        works: list[_FileWork] = []
        for run, paths in found.runs.items():
            run_id = self._run_id(run)
            works.extend(self._prepare_run(run_id, paths, result))
        total = sum(max(0, w.stat.st_size - w.offset) for w in works)
        runs = {w.run_id for w in works}
        if self.workers > 1 and total >= self.parallel_min_bytes and len(runs) > 1:
            self._read_parallel(works, result, progress, total)
        else:
            for work in works:
                if self.stop_requested():
                    break
                self._read_file(work, result, progress, total)
        self._flush(result)
        return result

    def ingest_files(
        self,
        run: str,
        paths: Iterable[Path],
        result: PassResult,
        *,
        progress: Progress | None = None,
        total: int = 0,
    ) -> None:
        """Reads what is new in these files of ``run`` (all of the run's files, or some)."""
        run_id = self._run_id(run)
        for work in self._prepare_run(run_id, paths, result):
            self._read_file(work, result, progress, total)

    def _prepare_run(
        self, run_id: int, paths: Iterable[Path], result: PassResult
    ) -> list[_FileWork]:
        known = self.writer.files(run_id)
        present = set()
        works = []
        for path in paths:
            present.add(str(path))
            work = self._prepare(run_id, path, known.get(str(path)), result)
            if work is not None:
                works.append(work)
        for path_text, record in known.items():
            if (
                path_text not in present
                and record.state != "deleted"
                and not Path(path_text).exists()
            ):
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

    def _known_files(self, run: str) -> dict[str, FileRecord]:
        run_id = self.writer.runs(self.experiment_id).get(run)
        return self.writer.files(run_id) if run_id is not None else {}

    def _run_id(self, run: str) -> int:
        runs = self.writer.runs(self.experiment_id)
        if run in runs:
            return runs[run]
        holder: list[int] = []
        self._with_transaction(
            PassResult(),
            lambda: holder.append(self.writer.ensure_run(self.experiment_id, run)),
        )
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
        self, run_id: int, path: Path, record: FileRecord | None, result: PassResult
    ) -> _FileWork | None:
        """Applies the file's life-cycle changes; returns what is left to read, if anything."""
        try:
            st = path.stat()
        except OSError:
            return None  # gone since discovery; the next pass marks it deleted
        if record is None:
            holder: list[FileRecord] = []
            self._with_transaction(
                result, lambda: holder.append(self.writer.ensure_file(run_id, str(path)))
            )
            record = holder[0]
        offset = record.consumed
        replaced = record.inode is not None and (record.inode, record.device) != (
            st.st_ino,
            st.st_dev,
        )
        head = _read_head(path) if st.st_size != record.consumed or replaced else None
        rewritten = (
            not replaced
            and head is not None
            and record.head is not None
            and not _same_start(head, record.head)
        )
        if replaced or rewritten or st.st_size < record.consumed:
            if replaced:
                reason = "file replaced (new inode)"
            elif rewritten:
                reason = "file replaced (its first bytes changed)"
            else:
                reason = "file shrank: read again"
            replaced = True
            restart_id = record.id
            self._with_transaction(result, lambda: self.writer.restart_file(restart_id, reason))
            offset = 0
            result.files_changed.append(str(path))
        work = _FileWork(run_id, path, record, st, offset, replaced, head)
        if st.st_size == offset and record.state == "active":
            if record.inode is None or replaced:
                self._remember_identity(work, result)
            return None
        return work

    def _read_file(
        self, work: _FileWork, result: PassResult, progress: Progress | None, total: int
    ) -> None:
        from boardd.reader.pipeline import EventFileReader

        offset = work.offset
        try:
            with EventFileReader(
                work.path,
                offset,
                decoder=self._decoder(work.run_id),
                crc_mode=self.crc_mode,
                max_batch_bytes=self.batch_bytes,
            ) as reader:
                for batch in reader:
                    offset = self._accept(work, batch, offset, result)
                    if self.stop_requested():
                        return
                    if progress is not None:
                        progress(result.bytes_read, total)
        except (OSError, ReaderError) as exc:
            self._unreadable(work, str(exc), result)
            return
        self._finish_file(work, offset, result)

    def _finish_file(self, work: _FileWork, offset: int, result: PassResult) -> None:
        # A file back from 'deleted' or 'unreadable' with nothing new is active again too.
        if offset == work.record.consumed and (
            work.record.inode is None or work.replaced or work.record.state != "active"
        ):
            self._remember_identity(work, result)

    def _read_parallel(
        self,
        works: list[_FileWork],
        result: PassResult,
        progress: Progress | None,
        total: int,
    ) -> None:
        # One task in flight per run keeps a run's files and segments in order, and lets the
        # run's tag metadata (established by its first values) pass from one task to the next.
        queues: dict[int, collections.deque[_FileWork]] = {}
        for work in works:
            queues.setdefault(work.run_id, collections.deque()).append(work)
        offsets = {work.run_id: work.offset for work in (q[0] for q in queues.values())}
        ready = _Ready(queues, offsets)
        for run_id in queues:
            ready.put(run_id)
        from boardd.reader.worker import WorkerError, WorkerPool

        # This process decodes too, whenever it has nothing to commit.
        pool = WorkerPool(min(self.workers - 1, len(queues)), fork=self.fork and can_fork())
        try:
            self._drive_pool(pool, queues, offsets, ready, result, progress, total)
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
        ready: _Ready,
        result: PassResult,
        progress: Progress | None,
        total: int,
    ) -> None:
        while True:
            if self.stop_requested():
                ready.clear()  # take no new work; finish (and commit) what is in flight
            while ready and (worker := pool.vacant()) is not None:
                run_id = ready.take_largest()
                work = queues[run_id][0]
                task = (
                    str(work.path),
                    offsets[run_id],
                    dict(self._decoder(run_id).tags),
                    self.crc_mode,
                    self.segment_bytes,
                    self.batch_bytes,
                )
                pool.submit(worker, task, run_id)
            answer = pool.poll()
            if answer is None and ready:
                # Nothing to commit: decode a segment here too, rather than wait; the least
                # work there is, to be back soon for what the workers send.
                run_id = ready.take_smallest()
                answer = run_id, self._decode_here(queues[run_id][0], offsets[run_id])
            elif answer is None:
                if not pool.pending:
                    return
                answer = pool.wait()
            run_id, segment = answer
            self._take_answer(run_id, segment, queues, offsets, ready, result)
            # Dropped now: the next segment decoded here must not find this one in memory.
            del answer, segment
            if progress is not None:
                progress(result.bytes_read, total)

    def _take_answer(
        self,
        run_id: int,
        segment: Segment,
        queues: dict[int, collections.deque[_FileWork]],
        offsets: dict[int, int],
        ready: _Ready,
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
        from boardd.reader.segment import decode_segment

        tags = dict(self._decoder(work.run_id).tags)
        return decode_segment(
            str(work.path),
            offset,
            tags,
            self.crc_mode,
            self.segment_bytes,
            min(self.batch_bytes, HERE_BATCH_BYTES),
        )

    def _accept(self, work: _FileWork, batch: DecodedBatch, offset: int, result: PassResult) -> int:
        """Queues one decoded batch of a file for commit; returns the file's new offset."""
        done = batch.end_offset - offset
        result.bytes_read += done
        result.records += batch.records
        self.writer.counts.bytes_read += done
        self._queue(work.run_id, batch, work.progress(batch.end_offset), done, result)
        return batch.end_offset

    def _remember_identity(self, work: _FileWork, result: PassResult) -> None:
        # Nothing complete to read yet, but record the file's identity (inode, size).
        from boardd.reader.types import DecodedBatch

        batch = DecodedBatch(end_offset=work.offset)
        self._queue(work.run_id, batch, work.progress(work.offset), 0, result)

    def _unreadable(self, work: _FileWork, message: str, result: PassResult) -> None:
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
        self._pending.append(_Pending(run_id, batch, progress))
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
                for run_id, batch, progress in _coalesce(pending):
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

    def _purge_missing_runs(self, found: Discovery, result: PassResult) -> None:
        if not self.logdir.is_dir() or not found.runs:
            # A vanished logdir, or one without a single event file (an unmounted mount point
            # is an empty directory), must not erase the store.
            return
        for run, run_id in self.writer.runs(self.experiment_id).items():
            if run in found.runs:
                continue
            directory = self.logdir if run == "." else self.logdir / run
            if directory.is_dir():
                # Files deleted, directory kept: the data stays, the files are marked deleted.
                self.ingest_files(run, (), result)
                continue
            self._with_transaction(result, functools.partial(self.writer.delete_run, run_id))
            self._decoders.pop(run_id, None)
            result.runs_deleted.append(run)


class _Ready:
    """Runs with work to hand out, by bytes left to read: workers take the largest first (the
    longest tasks start early, so none is left alone at the end), this process the smallest."""

    def __init__(
        self, queues: dict[int, collections.deque[_FileWork]], offsets: dict[int, int]
    ) -> None:
        self._queues = queues
        self._offsets = offsets
        self._order: list[tuple[int, int]] = []  # (bytes left, run id), ascending

    def __bool__(self) -> bool:
        return bool(self._order)

    def put(self, run_id: int) -> None:
        queue = self._queues[run_id]
        # The first file is read on from where the run stopped, the others from their offsets.
        left = queue[0].stat.st_size - self._offsets[run_id]
        left += sum(w.stat.st_size - w.offset for w in itertools.islice(queue, 1, None))
        bisect.insort(self._order, (left, run_id))

    def take_largest(self) -> int:
        return self._order.pop()[1]

    def take_smallest(self) -> int:
        return self._order.pop(0)[1]

    def clear(self) -> None:
        self._order.clear()


def _coalesce(pending: list[_Pending]) -> Iterator[tuple[int, DecodedBatch, FileProgress]]:
    """The batches of each file as one, files in the order they first appear: one sampling
    pass per series and commit, however decoders interleaved their files. A run's files never
    interleave (one is read after the other), so each series still gets its points in order."""
    from boardd.reader.types import merge_batches

    groups: dict[int, list[_Pending]] = {}
    for item in pending:
        groups.setdefault(item.progress.file_id, []).append(item)
    for group in groups.values():
        yield group[0].run_id, merge_batches([g.batch for g in group]), group[-1].progress


#: How many leading bytes identify a file's content (its first record, usually).
HEAD_BYTES = 64


def _read_head(path: Path) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read(HEAD_BYTES)
    except OSError:
        return None


def _same_start(a: bytes, b: bytes) -> bool:
    """Whether two heads agree on the bytes both have (a file may have grown past one)."""
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
