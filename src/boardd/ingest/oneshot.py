"""One whole ingest of a logdir into its store: open the store, read everything new, close."""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from boardd.ingest.ingestor import (
    DEFAULT_BATCH_BYTES,
    DEFAULT_COMMIT_BYTES,
    DEFAULT_PARALLEL_MIN_BYTES,
    Ingestor,
)
from boardd.ingest.progress import Progress
from boardd.ingest.sources import ByteSource
from boardd.reader.modes import CrcMode
from boardd.store.location import default_store_path
from boardd.store.queries import StoreSummary, summary
from boardd.store.session import WriteSession


@dataclass(frozen=True, slots=True)
class IngestResult:
    """What :func:`ingest_logdir` did, and what the store holds after it."""

    db: Path
    bytes_read: int
    records: int
    commits: int
    summary: StoreSummary
    seconds: float
    #: Files read again from their start (replaced, rewritten, shrunk), by key.
    files_changed: tuple[str, ...] = ()
    #: Runs whose directory is gone: hidden, their data purged.
    runs_deleted: tuple[str, ...] = ()


def ingest_logdir(
    logdir: str | os.PathLike[str],
    db: str | os.PathLike[str] | None = None,
    *,
    experiment: str = "default",
    sampling: Mapping[str, int | None] | None = None,
    rebuild: bool = False,
    crc_mode: CrcMode = CrcMode.ALWAYS,
    workers: int | None = None,
    commit_bytes: int | None = None,
    batch_bytes: int | None = None,
    parallel_min_bytes: int | None = None,
    progress: Progress | None = None,
    source: ByteSource | None = None,
) -> IngestResult:
    """Brings the store ``db`` (by default the logdir's own) up to date with ``logdir``.

    Opens the store as its one writer (``rebuild``: a fresh store built beside and swapped in
    at the end), runs one :class:`Ingestor` pass with these settings, commits and closes. The
    store's errors (:class:`~boardd.store.errors.LeaseHeldError`,
    :class:`~boardd.store.errors.FingerprintMismatchError`, other
    :class:`~boardd.store.errors.StoreError` s) and ``KeyboardInterrupt`` propagate; what was
    committed before them is kept. ``source`` reads the logdir's bytes through another
    :class:`ByteSource` than the local directory (the store still records ``logdir``).
    ``None`` settings take the ingestor's defaults; ``batch_bytes`` is at most
    ``commit_bytes``.
    """
    started = time.monotonic()
    path = Path(db) if db is not None else default_store_path(Path(logdir))
    commit = commit_bytes or DEFAULT_COMMIT_BYTES
    with WriteSession(path, logdir, sampling=sampling, rebuild=rebuild) as session:
        ingestor = Ingestor(
            session.writer,
            source if source is not None else logdir,
            experiment=experiment,
            crc_mode=crc_mode,
            commit_bytes=commit,
            batch_bytes=batch_bytes or min(DEFAULT_BATCH_BYTES, commit),
            workers=workers,
            parallel_min_bytes=(
                DEFAULT_PARALLEL_MIN_BYTES if parallel_min_bytes is None else parallel_min_bytes
            ),
        )
        result = ingestor.run_pass(progress=progress)
        ingestor.close()
        counts = summary(session.connection)
    return IngestResult(
        db=session.path,
        bytes_read=result.bytes_read,
        records=result.records,
        commits=result.commits,
        summary=counts,
        seconds=time.monotonic() - started,
        files_changed=tuple(result.files_changed),
        runs_deleted=tuple(result.runs_deleted),
    )
