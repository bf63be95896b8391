"""What one watched logdir holds, as the lineage store records it: its runs (from the logdir's
store), their event files, and the checkpoint files in their directories (from the disk).

Nothing here writes: :func:`scan` reads one consistent view for the populator
(:mod:`boardd.lineage.populate`) to compare with what the lineage store already has.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from boardd.config import ExperimentSpec
from boardd.data import experiments
from boardd.data.connections import open_store
from boardd.data.experiments import RunSummary
from boardd.lineage.vocabulary import is_checkpoint
from boardd.store.names import escape, unescape
from boardd.store.queries import EventFileRow


@dataclass(frozen=True, slots=True)
class CheckpointFile:
    """A file in a run's directory (or below it, outside other runs) that looks like a
    checkpoint."""

    run: str
    path: str
    size: int
    mtime: float


@dataclass(slots=True)
class LogdirView:
    """One experiment as the lineage store sees it."""

    experiment: str
    #: A local directory, or a remote logdir's URL (no checkpoints found there, no records
    #: counted: the lineage store has its runs and event files with their sizes).
    logdir: Path | str
    runs: dict[str, RunSummary] = field(default_factory=dict)
    event_files: list[EventFileRow] = field(default_factory=list)
    checkpoints: list[CheckpointFile] = field(default_factory=list)


def scan(spec: ExperimentSpec) -> LogdirView:
    """Reads the experiment's store (runs, event files) and walks its runs' directories for
    checkpoints. A store that does not exist yet gives an empty view."""
    view = LogdirView(spec.name, spec.logdir)
    if not spec.db.exists():
        return view
    connection = open_store(spec.db)
    try:
        # One snapshot for the whole view: the runs' last steps and the files' offsets of one
        # commit, never a run of one commit beside a file of the next.
        with connection:
            row = experiments.experiment(connection)
            if row is None:
                return view
            # Names and paths as the API spells them (percent-escaped where a name is not valid
            # UTF-8: a lineage record's strings must be text); the disk is asked with
            # unescape().
            view.runs = {}
            for name, summary in experiments.run_summaries(connection, row.id).items():
                summary.name = escape(name)
                view.runs[summary.name] = summary
            view.event_files = [
                r._replace(run=escape(r.run), path=escape(r.path))
                for r in experiments.event_files(connection, row.id)
            ]
    finally:
        connection.close()
    if isinstance(spec.logdir, Path):
        view.checkpoints = find_checkpoints(spec.logdir, set(view.runs))
    return view


def run_directory(logdir: Path, run: str) -> Path:
    """The directory of a run (run names are paths relative to the logdir, "." its root)."""
    return logdir if run == "." else logdir / run


def find_checkpoints(logdir: Path, runs: set[str]) -> list[CheckpointFile]:
    """Checkpoint-like files of each run: in its directory and the directories below it that
    are not runs themselves (a checkpoint belongs to the nearest run above it). Run names and
    paths are escaped (:mod:`boardd.store.names`), as the store and the API spell them."""
    run_dirs = {str(run_directory(logdir, unescape(run))): run for run in runs}
    found: list[CheckpointFile] = []
    for directory, run in sorted(run_dirs.items()):
        for top, dirnames, filenames in os.walk(directory, onerror=lambda _exc: None):
            dirnames[:] = sorted(d for d in dirnames if os.path.join(top, d) not in run_dirs)
            for name in sorted(filenames):
                if not is_checkpoint(name):
                    continue
                path = os.path.join(top, name)
                try:
                    st = os.stat(path)
                except OSError:
                    continue  # gone since the listing
                found.append(CheckpointFile(run, escape(path), st.st_size, st.st_mtime))
    return found
