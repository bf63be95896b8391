"""A pass's files decoded in worker processes, and committed in this one.

One task is in flight per run: that keeps a run's files and segments in order, and lets the
run's tag metadata (established by its first values) pass from one task to the next. Workers
take the runs with the most left to read; this process decodes too whenever it has nothing to
commit, the run with the least. A worker that dies leaves the rest to this process, from
exactly where the committed-or-queued batches stopped.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import logging
from typing import TYPE_CHECKING, Protocol

from boardd.ingest.lifecycle import FileWork
from boardd.ingest.parallel import ReadyRuns, can_fork
from boardd.ingest.pass_result import PassResult
from boardd.ingest.progress import Progress
from boardd.reader.decoded import DecodedBatch, TagMetadata
from boardd.reader.modes import CrcMode

if TYPE_CHECKING:
    from boardd.ingest.segment import Segment
    from boardd.ingest.worker_pool import WorkerPool

#: The ingestor's logger, as configured by name (these lines are the ingestor's).
log = logging.getLogger("boardd.ingest.ingestor")

#: While workers run, this process decodes in smaller batches: it also holds what they send.
#: (bench_ingest (a): the tree's PSS drops, time within noise.)
HERE_BATCH_BYTES = 4 * 2**20
#: Small files are sent to a worker several to a task, up to this many bytes and files.
GROUP_BYTES = 2**20
GROUP_FILES = 256


class PassReader(Protocol):
    """What a parallel read uses of the ingestor whose pass it reads
    (:class:`boardd.ingest.ingestor.Ingestor`)."""

    @property
    def fork(self) -> bool: ...

    @property
    def crc_mode(self) -> CrcMode: ...

    @property
    def segment_bytes(self) -> int: ...

    @property
    def batch_bytes(self) -> int: ...

    def stop_requested(self) -> bool: ...

    def tags(self, run_id: int) -> dict[str, TagMetadata]: ...

    def read_file(
        self, work: FileWork, result: PassResult, progress: Progress | None, total: int
    ) -> None: ...

    def accept(
        self, work: FileWork, batch: DecodedBatch, offset: int, result: PassResult
    ) -> int: ...

    def finish_file(self, work: FileWork, offset: int, result: PassResult) -> None: ...

    def unreadable(self, work: FileWork, message: str, result: PassResult) -> None: ...


class ParallelRead:
    """Reads ``works`` (the files of several runs) for ``reader``'s pass into ``result``."""

    def __init__(
        self,
        reader: PassReader,
        works: list[FileWork],
        result: PassResult,
        progress: Progress | None,
        total: int,
    ) -> None:
        self.reader = reader
        self.result = result
        self.progress = progress
        self.total = total
        self.queues: dict[int, collections.deque[FileWork]] = {}
        for work in works:
            self.queues.setdefault(work.run_id, collections.deque()).append(work)
        #: Where each run's first file is read on from.
        self.offsets = {work.run_id: work.offset for work in (q[0] for q in self.queues.values())}
        self.ready = ReadyRuns(self._bytes_left)
        for run_id in self.queues:
            self.ready.put(run_id)

    def _bytes_left(self, run_id: int) -> int:
        # The first file is read on from where the run stopped, the others from their
        # offsets.
        queue = self.queues[run_id]
        left = queue[0].identity.size - self.offsets[run_id]
        return left + sum(w.left() for w in itertools.islice(queue, 1, None))

    def run(self, workers: int) -> None:
        """Reads everything with ``workers`` processes, this one included."""
        from boardd.ingest.worker_pool import WorkerError, WorkerPool

        reader = self.reader
        # This process decodes too, whenever it has nothing to commit.
        pool = WorkerPool(min(workers - 1, len(self.queues)), fork=reader.fork and can_fork())
        try:
            self._drive(pool)
        except WorkerError as exc:
            # A worker died (killed, out of memory): finish the rest in this process, from
            # exactly where the committed-or-queued batches stopped.
            log.warning("%s; decoding the rest in this process", exc)
            for run_id, queue in self.queues.items():
                for i, work in enumerate(queue):
                    if reader.stop_requested():
                        return
                    start = self.offsets[run_id] if i == 0 else work.offset
                    resumed = dataclasses.replace(work, offset=start)
                    reader.read_file(resumed, self.result, self.progress, self.total)
        finally:
            pool.close()

    def _drive(self, pool: WorkerPool) -> None:
        queues, offsets, ready, result = self.queues, self.offsets, self.ready, self.result
        while True:
            if self.reader.stop_requested():
                ready.clear()  # take no new work; finish (and commit) what is in flight
            while ready and (worker := pool.vacant()) is not None:
                # Small files go several to a task (a run each, so a run still has one task
                # in flight): a task per 2 KB file costs more to send and take than to decode.
                run_ids = [ready.take_largest()]
                size = self._bytes_left(run_ids[0])
                while (
                    ready
                    and len(run_ids) < GROUP_FILES
                    and size + (more := self._bytes_left(ready.peek_largest())) <= GROUP_BYTES
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
                self._take_answer(run_id, segment)
                if self.progress is not None:
                    self.progress(result.bytes_read, self.total)
            # Dropped now: the next segment decoded here must not find these in memory.
            del answer, segments, segment

    def _task(self, run_id: int, work: FileWork, offset: int) -> tuple[object, ...]:
        """The arguments of :func:`~boardd.ingest.segment.decode_segment` for a worker."""
        reader = self.reader
        return (
            work.file,
            offset,
            dict(reader.tags(run_id)),
            reader.crc_mode,
            reader.segment_bytes,
            reader.batch_bytes,
        )

    def _take_answer(self, run_id: int, segment: Segment) -> None:
        reader, queues, offsets, result = self.reader, self.queues, self.offsets, self.result
        work = queues[run_id][0]
        offset = offsets[run_id]
        tags = reader.tags(run_id)
        for batch in segment.batches:
            tags.update(batch.new_tags)
            offset = reader.accept(work, batch, offset, result)
        offsets[run_id] = offset
        if segment.error is not None:
            reader.unreadable(work, segment.error, result)
        elif not segment.at_end:
            self.ready.put(run_id)
            return
        else:
            reader.finish_file(work, offset, result)
        queues[run_id].popleft()
        if queues[run_id]:
            offsets[run_id] = queues[run_id][0].offset
            self.ready.put(run_id)

    def _decode_here(self, work: FileWork, offset: int) -> Segment:
        from boardd.ingest.segment import decode_segment

        reader = self.reader
        tags = dict(reader.tags(work.run_id))
        return decode_segment(
            work.file,
            offset,
            tags,
            reader.crc_mode,
            reader.segment_bytes,
            min(reader.batch_bytes, HERE_BATCH_BYTES),
        )
