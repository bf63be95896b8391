"""``boardd inspect``: what a logdir or an event file holds, read straight from the files."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from boardd.reader.decoded import DataClass, DataLoss, DecodedBatch, TagMetadata
from boardd.reader.events import EventDecoder
from boardd.reader.logdir import ROOT_RUN, DiscoveryProblem, discover, is_event_file
from boardd.reader.pipeline import EventFileReader
from boardd.reader.tfrecord import CrcMode, RecordFileError


class InspectError(Exception):
    """The path to inspect cannot be read at all."""


@dataclass(slots=True)
class FileReport:
    """One event file: its size, how many records it holds, and what could not be read."""

    path: str
    bytes: int
    records: int = 0
    data_loss: list[DataLoss] = field(default_factory=list)
    partial_tail: bool = False


@dataclass(slots=True)
class TagReport:
    """One tag of a run: its plugin and data class, and the values read."""

    plugin: str
    data_class: DataClass
    count: int = 0
    min_step: int | None = None
    max_step: int | None = None

    def add_steps(self, count: int, lo: int, hi: int) -> None:
        """Accounts for ``count`` more values with steps between ``lo`` and ``hi``."""
        self.count += count
        self.min_step = lo if self.min_step is None else min(self.min_step, lo)
        self.max_step = hi if self.max_step is None else max(self.max_step, hi)


@dataclass(slots=True)
class RunReport:
    """One run: its files in name order and its tags."""

    files: list[FileReport] = field(default_factory=list)
    tags: dict[str, TagReport] = field(default_factory=dict)


@dataclass(slots=True)
class InspectReport:
    """Everything ``boardd inspect`` found, run by run."""

    runs: dict[str, RunReport] = field(default_factory=dict)
    problems: list[DiscoveryProblem] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        """The documented JSON shape of ``boardd inspect --json``."""
        return {
            "runs": {
                name: {
                    "files": [
                        {
                            "path": f.path,
                            "bytes": f.bytes,
                            "records": f.records,
                            "data_loss": [
                                {"offset": d.offset, "length": d.length, "reason": d.reason}
                                for d in f.data_loss
                            ],
                            "partial_tail": f.partial_tail,
                        }
                        for f in run.files
                    ],
                    "tags": {
                        tag: {
                            "plugin": t.plugin,
                            "data_class": t.data_class.label,
                            "count": t.count,
                            "min_step": t.min_step,
                            "max_step": t.max_step,
                        }
                        for tag, t in sorted(run.tags.items())
                    },
                }
                for name, run in self.runs.items()
            },
            "problems": [{"path": p.path, "reason": p.reason} for p in self.problems],
        }


#: Called after each batch with (bytes done, bytes in total).
Progress = Callable[[int, int], None]


def inspect_path(
    path: str | os.PathLike[str],
    *,
    crc_mode: CrcMode = CrcMode.ALWAYS,
    progress: Progress | None = None,
) -> InspectReport:
    """Reads every event file under ``path`` (a logdir, or one event file) and reports on it."""
    root = Path(path)
    if not root.exists():
        raise InspectError(f"{root}: does not exist")
    report = InspectReport()
    if root.is_file():
        if not is_event_file(root.name):
            raise InspectError(f"{root}: not an event file (its name has no 'tfevents')")
        if not os.access(root, os.R_OK):
            raise InspectError(f"{root}: file is not readable by this user")
        runs = {ROOT_RUN: [root]}
    else:
        found = discover(root)
        runs, report.problems = found.runs, found.problems
        if not os.access(root, os.R_OK | os.X_OK):
            raise InspectError(f"{root}: directory is not readable by this user")
    sizes = {p: _size(p) for files in runs.values() for p in files}
    total = sum(sizes.values())
    done = 0
    for run, files in runs.items():
        run_report = report.runs.setdefault(run, RunReport())
        decoder = EventDecoder()
        for file in files:
            file_report = FileReport(str(file), sizes[file])
            run_report.files.append(file_report)
            try:
                reader = EventFileReader(file, decoder=decoder, crc_mode=crc_mode)
                with reader:
                    for batch in reader:
                        _account(batch, decoder.tags, run_report, file_report)
                        if progress is not None:
                            progress(done + batch.end_offset, total)
                    file_report.partial_tail = reader.at_partial_record()
            except (OSError, RecordFileError) as exc:
                # One file that cannot be read (permissions, I/O) is reported, the rest read.
                reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
                file_report.data_loss.append(DataLoss(0, sizes[file], f"unreadable: {reason}"))
            done += sizes[file]
    return report


def _account(
    batch: DecodedBatch,
    tags: dict[str, TagMetadata],
    run: RunReport,
    file: FileReport,
) -> None:
    file.records += batch.records
    file.data_loss.extend(batch.data_loss)
    for tag, columns in batch.scalars.items():
        if len(columns):
            steps = columns.steps
            _tag(run, tag, tags).add_steps(len(columns), int(steps.min()), int(steps.max()))
    series: dict[str, list[Any]] = {**batch.tensors, **batch.blob_sequences}
    for tag, points in series.items():
        if points:
            steps_list = [p.step for p in points]
            _tag(run, tag, tags).add_steps(len(points), min(steps_list), max(steps_list))


def _tag(run: RunReport, tag: str, tags: dict[str, TagMetadata]) -> TagReport:
    report = run.tags.get(tag)
    if report is None:
        metadata = tags[tag]
        report = run.tags[tag] = TagReport(metadata.plugin_name, metadata.data_class)
    return report


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def format_table(report: InspectReport) -> str:
    """A human-readable rendering of the report, one block per run."""
    lines: list[str] = []
    for name, run in report.runs.items():
        lines.append(f"run {name}")
        for f in run.files:
            loss = sum(d.length for d in f.data_loss)
            extra = f", {len(f.data_loss)} data-loss ranges ({loss} bytes)" if f.data_loss else ""
            tail = ", partial record at end" if f.partial_tail else ""
            lines.append(f"  file {f.path}: {f.bytes} bytes, {f.records} records{extra}{tail}")
            for d in f.data_loss:
                lines.append(f"    data loss at {d.offset} (+{d.length}): {d.reason}")
        if run.tags:
            width = max(len(t) for t in run.tags)
            header = f"  {'tag':<{width}}  {'plugin':<14} {'class':<13} {'count':>9} {'steps'}"
            lines.append(header)
            for tag, t in sorted(run.tags.items()):
                steps = f"{t.min_step}..{t.max_step}" if t.count else "-"
                kind = t.data_class.label
                lines.append(f"  {tag:<{width}}  {t.plugin:<14} {kind:<13} {t.count:>9} {steps}")
        lines.append("")
    for p in report.problems:
        lines.append(f"warning: {p.path}: {p.reason}")
    if not report.runs:
        lines.append("no event files found (files whose name contains 'tfevents')")
    return "\n".join(lines).rstrip("\n")
