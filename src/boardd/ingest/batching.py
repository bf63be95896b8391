"""Decoded batches waiting for commit, and how they are merged into one write per file."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from boardd.reader.decoded import DecodedBatch, merge_batches
from boardd.store.writer import FileProgress


@dataclass(slots=True)
class Pending:
    """One decoded batch of a file, and the file's state once it is committed."""

    run_id: int
    batch: DecodedBatch
    progress: FileProgress


def coalesce(pending: list[Pending]) -> Iterator[tuple[int, DecodedBatch, FileProgress]]:
    """The batches of each file as one, files in the order they first appear: one sampling
    pass per series and commit, however decoders interleaved their files. A run's files never
    interleave (one is read after the other), so each series still gets its points in order."""
    groups: dict[int, list[Pending]] = {}
    for item in pending:
        groups.setdefault(item.progress.file_id, []).append(item)
    for group in groups.values():
        yield group[0].run_id, merge_batches([g.batch for g in group]), group[-1].progress
