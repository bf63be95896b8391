"""Ingest: reads a logdir's event files from their stored offsets into the store.

:class:`Ingestor` owns the file life cycle: new files and runs are picked up; a growing file
resumes from its committed offset; a replaced file (new inode, or it shrank) is read again from
0; a deleted file keeps its data; a run whose directory is gone is purged and hidden. Decoded
batches are committed in groups (by bytes and by time) together with the new offsets.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from boardd.reader.events import EventDecoder
from boardd.reader.logdir import Discovery, discover
from boardd.reader.pipeline import EventFileReader
from boardd.reader.tfrecord import CrcMode
from boardd.reader.types import DecodedBatch
from boardd.store.writer import FileProgress, FileRecord, StoreWriter

#: Defaults chosen with bench/bench_ingest.py: larger groups gain little past these.
DEFAULT_COMMIT_BYTES = 64 * 2**20
DEFAULT_COMMIT_SECONDS = 0.5
DEFAULT_BATCH_BYTES = 16 * 2**20

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
    ) -> None:
        self.writer = writer
        self.logdir = Path(logdir)
        self.crc_mode = crc_mode
        self.commit_bytes = commit_bytes
        self.commit_seconds = commit_seconds
        self.batch_bytes = batch_bytes
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
        """One pass: discover, apply life-cycle changes, read everything new, commit."""
        result = PassResult()
        found = discover(self.logdir)
        total = self.pending_bytes(found) if progress is not None else 0
        self._purge_missing_runs(found, result)
        for run, paths in found.runs.items():
            self.ingest_files(run, paths, result, progress=progress, total=total)
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
        known = self.writer.files(run_id)
        present = set()
        for path in paths:
            present.add(str(path))
            self._ingest_file(run_id, path, known.get(str(path)), result, progress, total)
        for path_text, record in known.items():
            if (
                path_text not in present
                and record.state != "deleted"
                and not Path(path_text).exists()
            ):
                self._with_transaction(
                    result, functools.partial(self.writer.set_file_state, record.id, "deleted")
                )

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
            decoder = EventDecoder()
            decoder.tags.update(self.writer.run_tags(run_id))
            self._decoders[run_id] = decoder
        return decoder

    def _ingest_file(
        self,
        run_id: int,
        path: Path,
        record: FileRecord | None,
        result: PassResult,
        progress: Progress | None,
        total: int,
    ) -> None:
        try:
            st = path.stat()
        except OSError:
            return  # gone since discovery; the next pass marks it deleted
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
        if replaced or st.st_size < record.consumed:
            reason = "file replaced (new inode)" if replaced else "file shrank: read again"
            restart_id = record.id
            self._with_transaction(result, lambda: self.writer.restart_file(restart_id, reason))
            offset = 0
            result.files_changed.append(str(path))
        if st.st_size == offset and record.state == "active":
            return
        file_id = record.id
        try:
            reader = EventFileReader(
                path,
                offset,
                decoder=self._decoder(run_id),
                crc_mode=self.crc_mode,
                max_batch_bytes=self.batch_bytes,
            )
        except OSError as exc:
            message = str(exc)
            self._with_transaction(
                result, lambda: self.writer.set_file_state(file_id, "unreadable", message)
            )
            return
        with reader:
            for batch in reader:
                done = batch.end_offset - offset
                offset = batch.end_offset
                result.bytes_read += done
                result.records += batch.records
                self.writer.counts.bytes_read += done
                self._queue(
                    run_id,
                    batch,
                    FileProgress(record.id, offset, st.st_size, st.st_mtime, st.st_dev, st.st_ino),
                    done,
                    result,
                )
                if progress is not None:
                    progress(result.bytes_read, total)
        if offset == record.consumed and (record.inode is None or replaced):
            # Nothing complete to read yet, but remember the file's identity.
            self._queue(
                run_id,
                DecodedBatch(end_offset=offset),
                FileProgress(record.id, offset, st.st_size, st.st_mtime, st.st_dev, st.st_ino),
                0,
                result,
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
                for item in pending:
                    self.writer.apply(item.run_id, item.batch, item.progress)
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
        if not self.logdir.is_dir():
            return  # an unmounted or vanished logdir must not erase the store
        for run, run_id in self.writer.runs(self.experiment_id).items():
            if run in found.runs:
                continue
            directory = self.logdir if run == "." else self.logdir / run
            if directory.is_dir():
                continue  # files deleted, directory kept: the data stays
            self._with_transaction(result, functools.partial(self.writer.delete_run, run_id))
            self._decoders.pop(run_id, None)
            result.runs_deleted.append(run)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
